"""Failure cases of kind `metric` (../shared/cases/CASES.md): B29."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import matthews_corrcoef

from geneb.probe import metrics


def test_B29_batched_mcc_matches_sklearn_and_is_never_nan():
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
def test_B29_whole_kind_multiclass_constant_truth_and_tiny_inputs():
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


def test_B29_degenerate_bootstrap_and_scores_are_defined_not_nan():
    # every resample of constant predictions has a zero denominator: the CI is [0, 0], not NaN
    y = np.array([0, 1] * 30)
    const = np.zeros(60, dtype=int)
    for method in ("percentile", "basic"):
        low, high = metrics.bootstrap_mcc_ci(y, const, 2, n_resamples=200, confidence=0.95, method=method,
                                             rng=np.random.default_rng(0))  # fmt: skip
        assert (low, high) == (0.0, 0.0)
    s = metrics.score_predictions(y, const, np.tile([0.9, 0.1], (60, 1)), np.array([0, 1]))
    assert s["MCC"] == 0.0 and not np.isnan(s["F1"])
