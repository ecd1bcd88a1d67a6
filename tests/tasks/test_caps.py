"""Per-task caps: seeded, stratified, in source order, exact size."""

import numpy as np
import pytest

from geneb.tasks.caps import stratified_cap


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

