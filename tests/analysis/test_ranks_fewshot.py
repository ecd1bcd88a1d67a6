"""Rank instability (Kendall tau vs scipy, rank intervals) and few-shot (drops, inverse pattern, regime
changes) on planted tables."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geneb.analysis import paper, ranking
from geneb.analysis import stats as paired_stats
from geneb.analysis.inputs import cell_scores, task_matrix
from geneb.tables.scores import check_scores
from synth import analysis_config, grid, scores_from_values

CATS = {"p1": "Promoters", "p2": "Promoters", "e1": "Enhancers", "e2": "Enhancers"}


def test_kendall_between_categories_is_scipys_tau_b():
    wide = pd.DataFrame(
        {"A": [0.9, 0.8, 0.7, 0.1], "B": [0.1, 0.8, 0.9, 0.7], "macro": [0.5, 0.8, 0.8, 0.4]}, index=list("wxyz")
    )
    out = ranking._category_kendall(wide).set_index(["a", "b"])
    ref = stats.kendalltau(wide["A"], wide["B"], variant="b")
    assert out.loc[("A", "B"), "tau"] == pytest.approx(ref.statistic)
    assert out.loc[("A", "B"), "p_value"] == pytest.approx(ref.pvalue)
    assert len(out) == 3


def test_rank_intervals_separate_a_clear_leader_and_not_a_tie():
    rng = np.random.default_rng(0)
    tasks = [f"t{i}" for i in range(20)]
    base = rng.uniform(0.3, 0.5, 20)
    matrix = pd.DataFrame(
        [base + 0.3, base + rng.normal(0, 0.05, 20), base + rng.normal(0, 0.05, 20)],
        index=["lead", "x", "y"],
        columns=tasks,
    )
    rep = paired_stats.category_replicates(matrix, pd.Series("Promoters", index=tasks), None, n_resamples=500, seed=0)
    out = ranking.rank_intervals(rep, 0.95).set_index(["model", "category"])
    assert out.loc[("lead", "macro"), "rank_high"] == 1 and out.loc[("lead", "macro"), "p_top1"] == 1.0
    assert out.loc[("x", "macro"), "rank_low"] == 2 and out.loc[("x", "macro"), "rank_high"] == 3


def _fewshot_board():
    # level and drop planted: a strong (0.8 -> 0.3 -> 0.1), b medium (0.6 -> 0.4 -> 0.2), c weak (0.4 -> 0.35 -> 0.3)
    levels = {"a": (0.8, 0.3, 0.1), "b": (0.6, 0.4, 0.2), "c": (0.4, 0.35, 0.3), "d": (0.5, 0.38, 0.15)}
    reg = ("full", "10shot", "1shot")
    values = grid(list(levels), list(CATS), lambda m, t, r: levels[m][reg.index(r)], regimes=reg)
    return ranking.leaderboard(cell_scores(check_scores(scores_from_values(values, CATS))))


def test_drops_inverse_pattern_and_top_model_change():
    board = _fewshot_board()
    d = paper._drops(board, "geneb-paper")
    assert d.loc["a", "abs_drop_10shot"] == pytest.approx(0.5) and d.loc["a", "rel_drop_1shot"] == pytest.approx(0.875)
    inv = paper._inverse_pattern(d).set_index(["regime", "measure"])
    ref = stats.spearmanr(d["full"], d["abs_drop_10shot"])
    assert inv.loc[("10shot", "abs_drop"), "rho"] == pytest.approx(ref.statistic) == pytest.approx(1.0)
    ch = paper._regime_changes(board, "geneb-paper").set_index("category")
    assert (
        ch.loc["macro", "top_full"] == "a"
        and ch.loc["macro", "top_10shot"] == "b"
        and ch.loc["macro", "top_1shot"] == "c"
    )
    assert ch.loc["macro", "top_changes"]
    w = board[board["category"] == "macro"].pivot(index="model", columns="regime", values="value")
    assert ch.loc["macro", "tau_full_vs_1shot"] == pytest.approx(stats.kendalltau(w["full"], w["1shot"]).statistic)


def test_task_matrix_feeds_replicates_in_model_order():
    cells = cell_scores(check_scores(scores_from_values(grid(["b", "a"], list(CATS), lambda m, t, r: 0.5), CATS)))
    assert list(task_matrix(cells, "full").index) == ["a", "b"]


def test_a_single_task_category_without_row_replicates_has_no_rank_interval():
    """Resampling one task gives that task every time: the interval would be [rank, rank] and p_top1 1.0, a
    certainty the data cannot give. Without row-level replicates it is missing; a many-task category keeps it."""
    tasks = ["c1", "p1", "p2", "p3"]
    cats = pd.Series(["Coding/NC", "Promoters", "Promoters", "Promoters"], index=tasks)
    matrix = pd.DataFrame([[0.9043, 0.5, 0.6, 0.4], [0.9007, 0.45, 0.62, 0.41]], index=["g", "l"], columns=tasks)
    rep = paired_stats.category_replicates(matrix, cats, None, n_resamples=200, seed=0)
    out = ranking.rank_intervals(rep, 0.95).set_index(["model", "category"])
    assert out.loc[("g", "Coding/NC"), "rank"] == 1
    assert pd.isna(out.loc[("g", "Coding/NC"), "rank_low"]) and pd.isna(out.loc[("g", "Coding/NC"), "rank_high"])
    assert np.isnan(out.loc[("g", "Coding/NC"), "p_top1"])
    assert out.loc[("g", "Promoters"), "rank_low"] >= 1 and np.isfinite(out.loc[("g", "Promoters"), "p_top1"])


def test_a_table_without_the_full_regime_skips_only_the_few_shot_tables():
    from geneb.analysis import run
    from synth import meta

    values = grid(
        ["a", "b", "c"], list(CATS), lambda m, t, r: {"a": 0.3, "b": 0.5, "c": 0.4}[m], regimes=("10shot", "1shot")
    )
    scores = check_scores(scores_from_values(values, CATS))
    models = meta({m: {"params": p} for m, p in (("a", 1e6), ("b", 1e7), ("c", 1e8))})
    tables, summary = run.run_analyses(
        scores,
        model_meta=models,
        task_meta=None,
        declared_pairs=[],
        settings=run.resolve_settings(analysis_config(), "geneb"),
    )
    assert summary["protocols"]["geneb-paper"]["fewshot_skipped"].startswith("no full regime")
    assert tables["fewshot_drops"].empty and not tables["leaderboard"].empty and not tables["rank_intervals"].empty
