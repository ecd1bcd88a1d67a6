"""Leaderboards: category/macro/micro means, ranks, MTEB Borda rank, incomplete models."""

import numpy as np
import pandas as pd
import pytest

from geneb.analysis import leaderboard as lb
from geneb.analysis.tables import cell_scores
from geneb.tables.scores import check_scores
from synth import grid, scores_from_values

CATS = {"p1": "Promoters", "p2": "Promoters", "e1": "Enhancers", "s1": "Splice Sites"}
PLANT = {  # planted: a wins Promoters, b wins Enhancers and Splice Sites, c is last everywhere
    "a": {"p1": 0.9, "p2": 0.8, "e1": 0.2, "s1": 0.3},
    "b": {"p1": 0.5, "p2": 0.5, "e1": 0.6, "s1": 0.7},
    "c": {"p1": 0.1, "p2": 0.2, "e1": 0.1, "s1": 0.2},
}


def _board():
    return lb.leaderboard(
        cell_scores(
            check_scores(
                scores_from_values(grid(list(PLANT), list(CATS), lambda m, t, r: PLANT[m][t]), CATS, noise=0.02)
            )
        )
    )


def test_category_macro_micro_values_and_planted_rank_change():
    b = _board().set_index(["model", "category"])
    assert b.loc[("a", "Promoters"), "value"] == pytest.approx(0.85)
    assert b.loc[("a", "macro"), "value"] == pytest.approx((0.85 + 0.2 + 0.3) / 3)
    assert b.loc[("a", "micro"), "value"] == pytest.approx((0.9 + 0.8 + 0.2 + 0.3) / 4)
    assert b.loc[("a", "Promoters"), "rank"] == 1 and b.loc[("b", "Promoters"), "rank"] == 2
    assert b.loc[("b", "Enhancers"), "rank"] == 1 and b.loc[("a", "Enhancers"), "rank"] == 2
    assert b.loc[("b", "macro"), "rank"] == 1 and b.loc[("c", "macro"), "rank"] == 3
    assert set(b["schema_version"]) == {lb.SCHEMA_VERSION} == {"4"} and b["input_sha256"].nunique() == 1


def test_borda_rank_matches_the_mteb_rule_by_hand():
    # tasks: t1 a>b>c, t2 b>a=c (tie), t3 only a and c scored (b missing: 0 votes)
    m = pd.DataFrame({"t1": [0.9, 0.5, 0.1], "t2": [0.3, 0.8, 0.3], "t3": [0.2, np.nan, 0.4]}, index=["a", "b", "c"])
    # n = 3 models; votes = n - rank (average ties): a: (3-1)+(3-2.5)+(3-2) = 3.5; b: 1 + 2 + 0 = 3; c: 0 + 0.5 + 2 = 2.5
    r = lb.borda_rank(m)
    assert r.to_dict() == {"a": 1, "b": 2, "c": 3}
    # equal votes share the lowest rank ("min")
    tie = pd.DataFrame({"t1": [0.9, 0.1], "t2": [0.1, 0.9]}, index=["x", "y"])
    assert lb.borda_rank(tie).to_dict() == {"x": 1, "y": 1}


def test_borda_differs_from_macro_when_wins_are_narrow():
    # a wins 3 of 4 tasks narrowly, b wins one by far: Borda prefers a, the mean prefers b
    m = pd.DataFrame({"t1": [0.51, 0.5], "t2": [0.51, 0.5], "t3": [0.51, 0.5], "t4": [0.1, 0.9]}, index=["a", "b"])
    assert lb.borda_rank(m)["a"] == 1 and m.mean(axis=1).idxmax() == "b"


def test_incomplete_model_has_no_macro_and_no_rank():
    values = grid(list(PLANT), list(CATS), lambda m, t, r: PLANT[m][t])
    values.pop(("c", "s1", "full"))
    b = lb.leaderboard(cell_scores(check_scores(scores_from_values(values, CATS)))).set_index(["model", "category"])
    assert np.isnan(b.loc[("c", "macro"), "value"]) and pd.isna(b.loc[("c", "macro"), "rank"])
    assert not b.loc[("c", "macro"), "complete"] and b.loc[("a", "macro"), "complete"]
    assert b.loc[("c", "Promoters"), "complete"]


def test_wide_view_orders_by_macro():
    w = lb.wide_view(_board(), "geneb-paper", "full")
    assert list(w.index) == ["b", "a", "c"] and list(w.columns[-2:]) == ["macro", "micro"]


def test_a_model_missing_a_task_of_a_category_is_not_ranked_there():
    """Model e has only p1 of Promoters (0.95, above everyone): its partial mean is shown but never ranked, so it
    cannot win the category, be its specialist or its few-shot top on the one task it has."""
    from geneb.analysis import difficulty, fewshot

    values = grid(
        [*PLANT, "e"], list(CATS), lambda m, t, r: 0.95 if m == "e" else PLANT[m][t], regimes=("full", "10shot")
    )
    for regime in ("full", "10shot"):
        values.pop(("e", "p2", regime))
    b = lb.leaderboard(cell_scores(check_scores(scores_from_values(values, CATS))))
    promo = b[(b["category"] == "Promoters") & (b["regime"] == "full")].set_index("model")
    assert (
        promo.loc["e", "value"] == pytest.approx(0.95)
        and not promo.loc["e", "complete"]
        and pd.isna(promo.loc["e", "rank"])
    )
    assert promo.loc["a", "rank"] == 1 and promo["rank"].notna().sum() == 3
    # e is complete in Enhancers and ranked there
    assert b[(b["category"] == "Enhancers") & (b["regime"] == "full")].set_index("model").loc["e", "rank"] == 1
    spec = difficulty.specialists(b)
    assert spec.loc[(spec["category"] == "Promoters") & (spec["regime"] == "full"), "winner"].tolist() == ["a"]
    tops = fewshot.regime_changes(b, "geneb-paper").set_index("category")
    assert tops.loc["Promoters", "top_full"] == "a" and tops.loc["Promoters", "top_10shot"] == "a"
    assert np.isnan(lb.wide_view(b, "geneb-paper", "full").loc["e", "Promoters"])
    assert lb.wide_view(b, "geneb-paper", "full", complete_only=False).loc["e", "Promoters"] == pytest.approx(0.95)
