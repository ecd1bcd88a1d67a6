"""Scale: Spearman rho with CI (scipy), exclusions, in-domain rule, reversals (planted)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geneb.analysis import paper
from geneb.tables.scores import AnalysisInputError
from synth import meta


def test_planted_rho_equals_the_rank_formula_and_scipy():
    params = np.array([1e6, 2e6, 5e6, 1e7, 5e7, 1e8, 3e8, 1e9])
    # score ranks 1 2 4 3 5 7 6 8: d^2 = 0 0 1 1 0 1 1 0 -> rho = 1 - 6*4 / (8*63) = 0.952380...
    score = np.array([0.1, 0.2, 0.4, 0.3, 0.5, 0.7, 0.6, 0.8])
    r = paper._spearman_with_ci(params, score, n_resamples=999, seed=0, confidence=0.95)
    assert r["rho"] == pytest.approx(1 - 6 * 4 / (8 * 63))
    assert r["rho"] == pytest.approx(stats.spearmanr(params, score).statistic)
    # n = 8: the exact p over all 8! pairings (46 of them at least as extreme), not the t approximation
    assert r["p_value"] == pytest.approx(46 / 40320)
    assert r["ci_low"] <= r["rho"] <= r["ci_high"] <= 1


def test_exclusion_recomputes_rho_without_the_named_model():
    models = [f"m{i}" for i in range(10)]
    m = meta({k: {"params": 10 ** (6 + i / 2)} for i, k in enumerate(models)})
    score = pd.Series(np.linspace(0.3, 0.6, 10), index=models)
    score["m9"] = 0.1  # the largest model is an outlier
    out = paper._scale_correlations(
        score, m, {"m9": "planted outlier"}, n_resamples=200, seed=0, confidence=0.95
    ).set_index("subset")
    assert out.loc["excluding", "rho"] == pytest.approx(1.0) and out.loc["all", "rho"] < 0.8
    assert out.loc["excluding", "n"] == 9 and "planted outlier" in out.loc["excluding", "reasons"]


def test_planted_reversals_are_counted_among_in_domain_models():
    m = meta(
        {
            "tiny": {"params": 1e6, "pretraining_domain": "human"},
            "small": {"params": 4e6, "pretraining_domain": "human"},
            "big": {"params": 5e6, "pretraining_domain": "multispecies"},
            "huge": {"params": 1e9, "pretraining_domain": "prokaryote"},
        }
    )
    score = pd.Series({"tiny": 0.6, "small": 0.5, "big": 0.4, "huge": 0.3})
    dom = paper._in_domain(m, list(score.index), ["prokaryote"], {})
    assert dom["in_domain"].to_dict() == {"tiny": True, "small": True, "big": True, "huge": False}
    ind = dom.index[dom["in_domain"]].tolist()
    rev = paper._reversals(m.loc[ind, "params_used"], score[ind], 5)
    # only tiny (1M) vs big (5M): ratio exactly 5 counts (>= 5x); small vs big is 1.25x
    assert rev[["smaller", "larger"]].values.tolist() == [["tiny", "big"]]
    everyone = paper._reversals(m["params_used"], score, 5)
    assert len(everyone) == 4  # tiny, small, big all beat huge, and tiny beats big
    assert paper._in_domain(m, ["big"], [], {"big": "listed"}).loc["big", "reason"] == "listed"


def test_ties_do_not_count_and_ratio_must_exceed_one():
    rev = paper._reversals(pd.Series({"a": 1.0, "b": 10.0}), pd.Series({"a": 0.5, "b": 0.5}), 5)
    assert rev.empty
    with pytest.raises(AnalysisInputError):
        paper._reversals(pd.Series({"a": 1.0}), pd.Series({"a": 0.5}), 1)


def test_param_count_setting_picks_the_column_and_baselines_are_left_out():
    specs = {"x": {"params": 537e6, "params_paper": 1e9}, "y": {"params": 2e6}, "k": {"params": 0}, "u": {}}
    first = meta(specs, "first_release")
    assert first.loc["x", "params_used"] == 1e9 and first.loc["y", "params_used"] == 2e6
    m = meta(specs)  # the default, current counts (the paper's)
    assert m.loc["x", "params_used"] == 537e6 and m.loc["y", "params_used"] == 2e6
    with pytest.raises(AnalysisInputError, match="param_count"):
        meta(specs, "paper")
    keep, dropped = paper._eligible(m, ["x", "k", "u", "missing"])
    assert keep == ["x"] and set(dropped) == {"k", "u", "missing"}
    assert "same parameter count" in paper._why_no_correlation(pd.Series([1.0, 1.0, 1.0]), pd.Series([0.1, 0.2, 0.3]))
    # the headline counts what it shows: one model is "1 model", not "1 models"
    assert paper._why_no_correlation(pd.Series([1.0]), pd.Series([0.1])).startswith("only 1 model with both")
    assert paper._why_no_correlation(pd.Series([1.0, 2.0]), pd.Series([0.1, 0.2])).startswith("only 2 models with")


def test_spearman_p_is_exact_at_small_n_and_the_ci_needs_defined_resamples():
    """n = 4 in perfect agreement: scipy's t approximation says p = 0, the exact pairing test 1/12. With tied
    parameter counts at n = 3 a third of the resamples have no rho: no CI rather than a decisive-looking one."""
    from geneb.analysis.paper import _spearman_rho_p as spearman_rho_p
    from geneb.analysis.paper import _spearman_with_ci as spearman_with_ci

    rho, p = spearman_rho_p(np.array([1.0, 2, 3, 4]), np.array([0.1, 0.2, 0.3, 0.4]))
    assert rho == pytest.approx(1.0) and p == pytest.approx(1 / 12)
    x, y = np.arange(12.0), np.arange(12.0) + np.sin(np.arange(12.0))
    assert spearman_rho_p(x, y)[1] == pytest.approx(stats.spearmanr(x, y).pvalue)  # large n: scipy's
    r = spearman_with_ci(np.array([1e8, 1e8, 5e8]), np.array([0.1, 0.2, 0.3]), n_resamples=500, seed=0, confidence=0.95)
    assert r["ci_undefined_share"] > 0.2 and np.isnan(r["ci_low"]) and np.isnan(r["ci_high"])


def test_exclusions_that_leave_no_correlation_give_a_noted_row_not_a_crash():
    from geneb.analysis.paper import _scale_correlations as scale_correlations

    models = meta({m: {"params": p} for m, p in (("a", 1e6), ("b", 1e7), ("c", 1e8), ("d", 1e9))})
    score = pd.Series({"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.3})
    out = scale_correlations(score, models, {"c": "x", "d": "y"}, n_resamples=200, seed=0, confidence=0.95).set_index(
        "subset"
    )
    assert np.isfinite(out.loc["all", "rho"]) and np.isnan(out.loc["excluding", "rho"])
    assert "only 2 models" in out.loc["excluding", "note"] and out.loc["all", "note"] == ""
