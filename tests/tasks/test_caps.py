"""Per-task caps: seeded, stratified, in source order, exact size."""

import numpy as np
import pytest

from geneb.tasks.prepare import stratified_cap


def test_cap_is_exact_stratified_sorted_and_seeded():
    labels = np.array([0] * 700 + [1] * 250 + [2] * 50)
    keep = stratified_cap(labels, 100, seed=3)
    assert len(keep) == 100 and np.all(np.diff(keep) > 0)
    assert np.bincount(labels[keep]).tolist() == [70, 25, 5]
    assert np.array_equal(keep, stratified_cap(labels, 100, seed=3))
    assert not np.array_equal(keep, stratified_cap(labels, 100, seed=4))


def test_rare_class_keeps_one_row():
    labels = np.array([0] * 999 + [1])
    keep = stratified_cap(labels, 10, seed=0)
    assert len(keep) == 10 and labels[keep].sum() == 1


def test_no_cap_needed_returns_everything():
    assert stratified_cap(np.array([0, 1, 1]), 5, 0).tolist() == [0, 1, 2]


def test_cap_below_class_count_is_an_error():
    with pytest.raises(ValueError, match="class would vanish"):
        stratified_cap(np.array([0, 1, 2, 0, 1, 2]), 2, 0)


@pytest.mark.parametrize("cap", [3, 4, 5, 100])
def test_every_rare_class_keeps_a_row_when_several_are_rare(cap):
    """Two rare classes: giving each one row overshoots the cap, and the trim must take from a class that has
    more than one row, never send a rare class back to 0 (the cap then silently loses a class: AUROC NaN)."""
    labels = np.array([0] * 1000 + [1] + [2])
    keep = stratified_cap(labels, cap, seed=0)
    assert len(keep) == cap and np.bincount(labels[keep], minlength=3).tolist() == [cap - 2, 1, 1]
    labels = np.array([0] * 500 + [1] * 3 + [2] + [3])
    assert set(labels[stratified_cap(labels, 4, seed=1)]) == {0, 1, 2, 3}
