"""Failure cases of kind `metric` (../shared/cases/CASES.md): an MCC that must be 0, never NaN."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, matthews_corrcoef

from geneb.probe import metrics


def test_batched_mcc_matches_sklearn_and_is_never_nan():
    # the case as written: 200 random binary pairs, seed 0, n = 20, 5 of them constant predictions
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, 2, (200, 20))
    y_pred = rng.integers(0, 2, (200, 20))
    y_pred[:5] = rng.integers(0, 2, (5, 1))  # constant predictions: zero denominator
    got = metrics.batched_mcc(y_true, y_pred, 2)
    want = np.array([matthews_corrcoef(t, p) for t, p in zip(y_true, y_pred)])
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert (got[:5] == 0.0).all()


@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")  # the sklearn oracle on n = 1
def test_whole_kind_multiclass_constant_truth_and_tiny_inputs():
    rng = np.random.default_rng(1)
    cases = []
    for k in (2, 3, 5):
        for n in (1, 2, 7, 50):
            t, p = rng.integers(0, k, (40, n)), rng.integers(0, k, (40, n))
            t[:4] = t[:4, :1]  # constant truth
            p[4:8] = p[4:8, :1]  # constant prediction
            p[8:12] = t[8:12]  # perfect
            cases.append((k, t, p))
    for k, t, p in cases:
        got = metrics.batched_mcc(t, p, k)
        assert not np.isnan(got).any()
        want = [matthews_corrcoef(a, b) for a, b in zip(t, p)]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_degenerate_bootstrap_and_scores_are_defined_not_nan():
    # every resample of constant predictions has a zero denominator: the CI is [0, 0], not NaN
    y = np.array([0, 1] * 30)
    const = np.zeros(60, dtype=int)
    for method in ("percentile", "basic"):
        low, high = metrics.bootstrap_mcc_ci(
            y, const, 2, n_resamples=200, confidence=0.95, method=method, rng=np.random.default_rng(0)
        )
        assert (low, high) == (0.0, 0.0)
    s = metrics.score_predictions(y, const, np.tile([0.9, 0.1], (60, 1)), np.array([0, 1]))
    assert s["MCC"] == 0.0 and not np.isnan(s["F1"])


def test_macro_f1_averages_over_every_class_of_the_task():
    """A class absent from the test split counts 0 for every model: the F1 denominator is the task's classes,
    not whatever a model happened to predict (sklearn without `labels` would give 1.0 vs 0.63 here)."""
    classes = np.array([0, 1, 2])
    y = np.array([0, 0, 1, 1, 0, 1])
    once = np.array([0, 0, 1, 1, 2, 1])
    never_two = metrics.label_scores(y, y, classes, "task")["F1"]
    once_two = metrics.label_scores(y, once, classes, "task")["F1"]
    assert never_two == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    assert once_two == pytest.approx((0.8 + 1.0 + 0.0) / 3)
    assert once_two < never_two
    # the paper's definition (geneb-paper): scikit-learn's default, over the classes present
    assert metrics.label_scores(y, y, classes, "present")["F1"] == 1.0
    assert metrics.label_scores(y, once, classes, "present")["F1"] == pytest.approx(f1_score(y, once, average="macro"))
    with pytest.raises(ValueError, match="f1_labels must be one of"):
        metrics.label_scores(y, y, classes, "all")


def test_class_code_out_of_range_is_refused_not_counted_elsewhere():
    """A code >= K in one vector of a batch would land in the next vector's confusion matrix."""
    y_true = np.array([[0, 1, 2, 0], [0, 1, 0, 1]])
    y_pred = np.array([[0, 1, 1, 0], [0, 1, 0, 1]])
    with pytest.raises(metrics.MetricInputError, match=r"y_true holds class code 2, outside 0..1"):
        metrics.batched_mcc(y_true, y_pred, 2)
    with pytest.raises(metrics.MetricInputError, match=r"y_pred holds class code -1"):
        metrics.batched_mcc(y_true[1:], y_pred[1:] - 1, 2)


def test_basic_bootstrap_interval_stays_inside_mccs_range():
    """A basic interval is reflected around the estimate; for a near-perfect MCC on few rows it would reach
    past 1 (up to 2 on n = 2). Both methods stay within [-1, 1]."""
    for y, p in (([0, 1], [0, 1]), ([0, 1], [1, 0]), ([0, 1] * 15, [0, 1] * 14 + [1, 1])):
        y, p = np.array(y), np.array(p)
        for method in ("percentile", "basic"):
            low, high = metrics.bootstrap_mcc_ci(
                y, p, 2, n_resamples=500, confidence=0.95, method=method, rng=np.random.default_rng(0)
            )
            assert -1.0 <= low <= high <= 1.0, (method, low, high)
