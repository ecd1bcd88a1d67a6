"""Task difficulty (near random, high variance, specialists), contamination and recommendation, planted."""

import numpy as np
import pandas as pd
import pytest

from geneb.analysis import paper, ranking, stats
from geneb.analysis import ranking as lb
from geneb.analysis.inputs import cell_scores
from geneb.tables.scores import AnalysisInputError, check_scores
from synth import grid, meta, scores_from_values

CATS = {"p1": "Promoters", "p2": "Promoters", "e1": "Enhancers", "hard": "Splice Sites"}
VALUES = {
    "a": {"p1": 0.9, "p2": 0.8, "e1": 0.5, "hard": 0.05},
    "b": {"p1": 0.2, "p2": 0.3, "e1": 0.6, "hard": 0.04},
    "c": {"p1": 0.5, "p2": 0.5, "e1": 0.1, "hard": 0.02},
}


def _cells():
    return cell_scores(
        check_scores(scores_from_values(grid(list(VALUES), list(CATS), lambda m, t, r: VALUES[m][t]), CATS))
    )


def test_near_random_uses_the_ci_when_there_is_one():
    cells = _cells()
    nr = paper._near_random(cells, 0.1).set_index("task")
    assert nr.loc["hard", "near_random"] and nr.loc["hard", "ci_source"] == "none"
    assert not nr.loc["p1", "near_random"] and nr.loc["p1", "best_model"] == "a"
    # a CI whose upper end reaches the threshold makes the hard task not near random
    cells["ci_low"], cells["ci_high"], cells["ci_source"] = cells["value"] - 0.1, cells["value"] + 0.1, "test"
    assert not paper._near_random(cells, 0.1).set_index("task").loc["hard", "near_random"]
    with pytest.raises(AnalysisInputError):
        paper._near_random(cells, 2.0)


def test_high_variance_flags_the_spread_tasks():
    hv = paper._high_variance(_cells(), 0.5).set_index("task")
    assert hv.loc["p1", "sd"] == pytest.approx(np.std([0.9, 0.2, 0.5], ddof=1))
    assert hv.loc["p1", "high_variance"] and not hv.loc["hard", "high_variance"]


def test_specialist_wins_a_category_below_the_median_macro():
    sp = paper._specialists(lb.leaderboard(_cells())).set_index("category")
    # b wins Enhancers; macro: a (0.85+0.5+0.05)/3=0.467, b (0.25+0.6+0.04)/3=0.297, c (0.5+0.1+0.02)/3=0.207
    # median 0.297 -> b is not below the median; c wins nothing; a wins Promoters and Splice Sites
    assert sp.loc["Enhancers", "winner"] == "b" and not sp.loc["Enhancers", "specialist"]
    values = {
        **VALUES,
        "c": {"p1": 0.1, "p2": 0.1, "e1": 0.7, "hard": 0.02},
    }  # c wins Enhancers, macro 0.273 < median 0.297
    cells = cell_scores(
        check_scores(scores_from_values(grid(list(values), list(CATS), lambda m, t, r: values[m][t]), CATS))
    )
    sp = paper._specialists(lb.leaderboard(cells)).set_index("category")
    assert sp.loc["Enhancers", "winner"] == "c" and sp.loc["Enhancers", "specialist"]


def test_contaminated_cells_are_left_out_of_rankings_by_default():
    m = meta({"a": {"trained_on_tasks": ["mirror_p1"]}, "b": {}, "c": {}})
    tasks = pd.DataFrame({"task": ["p1"], "geneb_task_id": ["mirror_p1"]}).set_index("task", drop=False)
    flagged = ranking._flag_contamination(_cells(), m, tasks)
    assert flagged.loc[flagged["contaminated"], ["model", "task"]].values.tolist() == [["a", "p1"]]
    kept, bad = ranking._apply_policy(flagged, "exclude")
    assert len(bad) == 1 and not ((kept["model"] == "a") & (kept["task"] == "p1")).any()
    board = lb.leaderboard(kept).set_index(["model", "category"])
    assert (
        board.loc[("a", "Promoters"), "value"] == pytest.approx(0.8) and board.loc[("a", "Promoters"), "n_tasks"] == 1
    )
    kept_all, _ = ranking._apply_policy(flagged, "flag")
    assert len(kept_all) == len(flagged) and kept_all["contaminated"].sum() == 1
    with pytest.raises(AnalysisInputError):
        ranking._apply_policy(flagged, "ignore")


def test_recommendation_ties_only_indistinguishable_models():
    rng = np.random.default_rng(0)
    tasks = [f"t{i}" for i in range(30)]
    base = rng.uniform(0.3, 0.6, 30)
    close = base + 0.2 + rng.normal(0, 0.02, 30)
    close += 0.2 - (close - base).mean() - 0.001  # planted: 0.001 below best on average, well inside the noise
    matrix = pd.DataFrame([base + 0.2, close, base], index=["best", "close", "far"], columns=tasks)
    rep = stats.category_replicates(matrix, pd.Series("Promoters", index=tasks), None, n_resamples=500, seed=0)
    for rule in ("overlap", "paired"):
        rec = ranking.recommend(rep, confidence=0.95, tie_rule=rule)
        prom = rec[rec["category"] == "Promoters"].set_index("model")
        assert prom["role"].to_dict() == {"best": "best", "close": "tied"}, rule
        assert set(prom["n_recommended"]) == {2}
    # a 0.05 gap on every task: the CIs overlap (task difficulty is shared), the paired rule separates them
    matrix.loc["close"] = base + 0.15
    rep = stats.category_replicates(matrix, pd.Series("Promoters", index=tasks), None, n_resamples=500, seed=0)
    overlap = ranking.recommend(rep, confidence=0.95, tie_rule="overlap")
    paired = ranking.recommend(rep, confidence=0.95, tie_rule="paired")
    assert "close" in set(overlap.loc[overlap["category"] == "Promoters", "model"])
    assert set(paired.loc[paired["category"] == "Promoters", "model"]) == {"best"}
    with pytest.raises(AnalysisInputError):
        ranking.recommend(rep, confidence=0.95, tie_rule="vote")


def test_contamination_follows_the_data_not_the_id_either_way():
    """A mirror task and its paper task hold the same data: listing either id flags both cells, and a mirror
    that is only a subset of the paper's split is flagged too (the model saw that data)."""
    catalogue = pd.DataFrame(
        {"geneb_task_id": ["paper_prom", "paper_prom", "paper_prom", ""]},
        index=["paper_prom", "mirror_prom", "mirror_prom_subset", "unrelated"],
    )
    values = {(m, t, "full"): 0.5 for m in ("a", "b") for t in catalogue.index}
    cells = cell_scores(check_scores(scores_from_values(values, dict.fromkeys(catalogue.index, "Promoters"))))
    for listed in ("mirror_prom", "paper_prom", "mirror_prom_subset"):
        flagged = ranking._flag_contamination(cells, meta({"a": {"trained_on_tasks": [listed]}, "b": {}}), catalogue)
        hit = flagged.loc[flagged["contaminated"], ["model", "task"]].values.tolist()
        assert sorted(hit) == [["a", "mirror_prom"], ["a", "mirror_prom_subset"], ["a", "paper_prom"]], listed
