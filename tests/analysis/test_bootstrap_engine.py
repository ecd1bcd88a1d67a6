"""The paired bootstrap engine: row replicates, category replicates, p-values; checked against scipy."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import matthews_corrcoef

from geneb.analysis import stats as paired_stats
from geneb.tables.scores import AnalysisInputError
from synth import predictions


def _preds(n=400):
    y = np.random.default_rng(1).integers(0, 2, n)
    return y, {
        ("good", "t1"): predictions(y, 0.9, 2),
        ("same", "t1"): predictions(y, 0.9, 2),
        ("bad", "t1"): predictions(y, 0.6, 3),
    }


def test_row_replicates_are_paired_and_centred_on_the_sklearn_mcc():
    y, preds = _preds()
    rows = paired_stats.row_replicates(preds, ["good", "same", "bad"], ["t1"], "full", n_resamples=500, seed=7)
    assert rows.shape == (500, 3, 1)
    # identical predictions give identical replicates: the draw is shared (paired)
    assert np.array_equal(rows[:, 0, 0], rows[:, 1, 0])
    point = matthews_corrcoef(y, preds[("good", "t1")]["y_pred"])
    assert abs(np.median(rows[:, 0, 0]) - point) < 0.02
    # the same seed gives the same replicates; another seed other ones
    again = paired_stats.row_replicates(preds, ["good", "same", "bad"], ["t1"], "full", n_resamples=500, seed=7)
    assert np.array_equal(rows, again)
    other = paired_stats.row_replicates(preds, ["good"], ["t1"], "full", n_resamples=500, seed=8)
    assert not np.array_equal(rows[:, 0, 0], other[:, 0, 0])


def _binary_mcc(a, b, axis=-1):
    """Binary MCC from the confusion counts (Matthews 1975), vectorised for scipy.stats.bootstrap."""
    tp = np.sum((a == 1) & (b == 1), axis=axis)
    tn = np.sum((a == 0) & (b == 0), axis=axis)
    fp = np.sum((a == 0) & (b == 1), axis=axis)
    fn = np.sum((a == 1) & (b == 0), axis=axis)
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn).astype(float))
    return np.where(den == 0, 0.0, (tp * tn - fp * fn) / np.where(den == 0, 1, den))


def test_row_replicate_ci_agrees_with_scipy_bootstrap():
    y, preds = _preds(300)
    yp = preds[("bad", "t1")]["y_pred"].to_numpy()
    assert _binary_mcc(y, yp) == pytest.approx(matthews_corrcoef(y, yp))
    rows = paired_stats.row_replicates(preds, ["bad"], ["t1"], "full", n_resamples=4000, seed=3)
    ours = np.quantile(rows[:, 0, 0], [0.025, 0.975])
    ref = stats.bootstrap(
        (y, yp),
        _binary_mcc,
        paired=True,
        vectorized=True,
        n_resamples=4000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert ours == pytest.approx([ref.low, ref.high], abs=0.02)


def test_task_resampled_category_ci_agrees_with_scipy_bootstrap_of_the_mean():
    rng = np.random.default_rng(0)
    vals = rng.uniform(0.2, 0.8, 25)
    matrix = pd.DataFrame([vals], index=["m"], columns=[f"t{i}" for i in range(25)])
    cats = pd.Series("Promoters", index=matrix.columns)
    rep = paired_stats.category_replicates(matrix, cats, None, n_resamples=5000, seed=1)
    low, high = rep.interval(0.95)
    ref = stats.bootstrap(
        (vals,), np.mean, n_resamples=5000, method="percentile", rng=np.random.default_rng(2)
    ).confidence_interval
    assert [low[0, 0], high[0, 0]] == pytest.approx([ref.low, ref.high], abs=0.01)
    assert rep.point[0, 0] == pytest.approx(vals.mean()) and rep.point[0, -1] == pytest.approx(vals.mean())


def test_single_task_category_has_no_interval_without_rows():
    matrix = pd.DataFrame({"a": [0.5, 0.4], "b": [0.3, 0.6]}, index=["x", "y"])
    cats = pd.Series({"a": "Promoters", "b": "Coding/NC"})
    rep = paired_stats.category_replicates(matrix, cats, None, n_resamples=200, seed=0)
    low, _ = rep.interval(0.95)
    assert rep.categories == ("Promoters", "Coding/NC")
    # nothing varies anywhere: the categories and the macro over them are undefined, with the reason, never the
    # zero-width interval of a degenerate resample
    assert np.isnan(low).all() and not rep.defined.any()
    assert "has one task and no per-row predictions" in rep.reasons[0, 0]
    assert rep.reasons[0, 2].startswith("macro over categories without a source of variability")


def test_bootstrap_p_value_inverts_the_percentile_interval():
    rng = np.random.default_rng(0)
    shifted = rng.normal(0.3, 0.1, (2000, 1))
    centred = rng.normal(0.0, 0.1, (2000, 1))
    assert paired_stats.bootstrap_p_value(shifted)[0] < 0.01
    assert paired_stats.bootstrap_p_value(centred)[0] > 0.2
    # p < alpha exactly when the (1 - alpha) percentile interval excludes 0
    for d in (shifted, centred):
        p = paired_stats.bootstrap_p_value(d)[0]
        lo, hi = np.quantile(d[:, 0], [0.025, 0.975])
        assert (p < 0.05) == (lo > 0 or hi < 0)


def test_unpaired_rows_and_bad_settings_are_refused():
    y, preds = _preds()
    preds[("bad", "t1")] = preds[("bad", "t1")].iloc[10:]
    with pytest.raises(AnalysisInputError, match="other test rows"):
        paired_stats.row_replicates(preds, ["good", "bad"], ["t1"], "full", n_resamples=10, seed=0)
    with pytest.raises(AnalysisInputError, match="n_resamples"):
        paired_stats.row_replicates(preds, ["good"], ["t1"], "full", n_resamples=0, seed=0)
    with pytest.raises(AnalysisInputError, match="missing cells"):
        paired_stats.category_replicates(
            pd.DataFrame({"a": [0.1, np.nan]}, index=["x", "y"]),
            pd.Series({"a": "Promoters"}),
            None,
            n_resamples=5,
            seed=0,
        )
