"""Metrics: degenerate cases defined, bootstrap CI contains the estimate and shrinks with n, seed summaries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import matthews_corrcoef

from geneb.probe import metrics
from geneb.probe.metrics import MetricInputError


def _ci(y_true, y_pred, k=2, n_resamples=1000, seed=0, method="percentile"):
    return metrics.bootstrap_mcc_ci(
        y_true, y_pred, k, n_resamples=n_resamples, confidence=0.95, method=method, rng=np.random.default_rng(seed)
    )


def _noisy(n, accuracy, rng, k=2):
    y = rng.integers(0, k, n)
    flip = rng.random(n) > accuracy
    return y, np.where(flip, rng.integers(0, k, n), y)


def test_constant_predictions_score_zero_not_nan():
    y = np.array([0, 1, 0, 1, 1])
    proba = np.tile([0.3, 0.7], (5, 1))
    s = metrics.score_predictions(y, np.ones(5, int), proba, np.array([0, 1]))
    assert s["MCC"] == 0.0 and s["Acc"] == pytest.approx(0.6)
    assert s["F1"] == pytest.approx((0.0 + 0.75) / 2)  # class 0: F1 0; class 1: P 3/5, R 1
    assert s["AUROC"] == 0.5  # constant scores rank nothing
    assert _ci(y, np.ones(5, int)) == (0.0, 0.0)


def test_one_class_test_split_gives_mcc_zero_and_undefined_auroc():
    y = np.zeros(6, int)
    pred = np.array([0, 0, 1, 0, 0, 0])
    proba = np.column_stack([1 - pred * 0.8, pred * 0.8])
    s = metrics.score_predictions(y, pred, proba, np.array([0, 1]))
    assert s["MCC"] == 0.0 and np.isnan(s["AUROC"])


def test_multiclass_auroc_is_one_vs_rest_and_nan_when_a_class_is_absent():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 20)
    proba = rng.dirichlet([1, 1, 1], 60)
    pred = proba.argmax(1)
    assert 0.0 < metrics.score_predictions(y, pred, proba, np.array([0, 1, 2]))["AUROC"] < 1.0
    assert np.isnan(metrics.score_predictions(y[:40], pred[:40], proba[:40], np.array([0, 1, 2]))["AUROC"])


def test_empty_or_mismatched_inputs_are_refused():
    with pytest.raises(MetricInputError, match="non-empty"):
        metrics.score_predictions(np.array([], int), np.array([], int), np.zeros((0, 2)), np.array([0, 1]))
    with pytest.raises(MetricInputError, match="must match"):
        metrics.batched_mcc(np.zeros(3, int), np.zeros(4, int), 2)
    with pytest.raises(MetricInputError, match="label 7 at position 1"):
        metrics.encode(np.array([0, 7]), np.array([0, 1]), "task t, split 'test'")


def test_bootstrap_ci_contains_the_estimate_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    widths = []
    for n in (100, 400, 1600, 6400):
        y, pred = _noisy(n, 0.8, rng)
        low, high = _ci(y, pred, seed=n)
        assert low <= matthews_corrcoef(y, pred) <= high
        widths.append(high - low)
    assert all(a > b for a, b in zip(widths, widths[1:]))
    assert widths[0] / widths[-1] == pytest.approx(8, rel=0.35)  # ~ 1/sqrt(n)


def test_bootstrap_ci_is_seeded_and_multiclass_works():
    rng = np.random.default_rng(3)
    y, pred = _noisy(300, 0.7, rng, k=4)
    assert _ci(y, pred, k=4, seed=5) == _ci(y, pred, k=4, seed=5)
    assert _ci(y, pred, k=4, seed=5) != _ci(y, pred, k=4, seed=6)
    low, high = _ci(y, pred, k=4, method="basic")
    assert low <= matthews_corrcoef(y, pred) <= high
    with pytest.raises(ValueError, match="percentile' or 'basic'"):
        _ci(y, pred, k=4, method="BCa")


@pytest.mark.parametrize("k, method", [(2, "percentile"), (3, "percentile"), (2, "basic")])
def test_multinomial_confusion_bootstrap_equals_scipy_row_bootstrap(k, method):
    # resampling rows and resampling the confusion matrix multinomially are the same distribution
    rng = np.random.default_rng(7)
    y, pred = _noisy(500, 0.75, rng, k=k)

    def mcc(a, b, axis=-1):
        return metrics.batched_mcc(np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1), k)

    ref = stats.bootstrap(
        (y, pred), mcc, paired=True, vectorized=True, n_resamples=20000, method=method, rng=np.random.default_rng(0)
    ).confidence_interval
    low, high = _ci(y, pred, k=k, n_resamples=20000, seed=1, method=method)
    assert low == pytest.approx(ref.low, abs=0.006) and high == pytest.approx(ref.high, abs=0.006)


def test_paired_bootstrap_difference_of_two_models_on_the_same_rows():
    rng = np.random.default_rng(4)
    y, good = _noisy(2000, 0.9, rng)
    _, bad = _noisy(2000, 0.6, rng)
    bad = np.where(rng.random(2000) < 0.6, y, 1 - y)
    d = metrics.paired_bootstrap_mcc_difference(y, good, bad, np.array([0, 1]), n_resamples=500)
    assert d["difference"] == pytest.approx(matthews_corrcoef(y, good) - matthews_corrcoef(y, bad))
    assert 0 < d["ci_low"] <= d["difference"] <= d["ci_high"]
    same = metrics.paired_bootstrap_mcc_difference(y, good, good, np.array([0, 1]), n_resamples=200)
    assert same == {"difference": 0.0, "ci_low": 0.0, "ci_high": 0.0}


def test_seed_summary_mean_sd_and_t_interval():
    s = metrics.seed_summary(np.array([0.5, 0.6, 0.7]), 0.95)
    assert s["mean"] == pytest.approx(0.6) and s["sd"] == pytest.approx(0.1)
    half = 4.302652729911275 * 0.1 / np.sqrt(3)  # t(0.975, df=2)
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((0.6 - half, 0.6 + half))
    one = metrics.seed_summary(np.array([0.4]), 0.95)
    assert one["mean"] == 0.4 and np.isnan(one["sd"]) and np.isnan(one["ci_low"])
    flat = metrics.seed_summary(np.array([0.4] * 5), 0.95)
    assert flat["sd"] == 0.0 and flat["ci_low"] == flat["ci_high"] == 0.4
