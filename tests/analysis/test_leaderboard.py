"""Leaderboards: category/macro/micro means, ranks, MTEB Borda rank, incomplete models."""

import argparse

import numpy as np
import pandas as pd
import pytest

from geneb.analysis import ranking as lb
from geneb.analysis.inputs import cell_scores
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
    assert set(b["schema_version"]) == {lb._SCHEMA_VERSION} == {"8"} and b["input_sha256"].nunique() == 1


def test_borda_rank_matches_the_mteb_rule_by_hand():
    # tasks: t1 a>b>c, t2 b>a=c (tie), t3 only a and c scored (b missing: 0 votes)
    m = pd.DataFrame({"t1": [0.9, 0.5, 0.1], "t2": [0.3, 0.8, 0.3], "t3": [0.2, np.nan, 0.4]}, index=["a", "b", "c"])
    # n = 3 models; votes = n - rank (average ties): a: (3-1)+(3-2.5)+(3-2) = 3.5; b: 1 + 2 + 0 = 3; c: 0 + 0.5 + 2 = 2.5
    r = lb._borda_rank(m)
    assert r.to_dict() == {"a": 1, "b": 2, "c": 3}
    # equal votes share the lowest rank ("min")
    tie = pd.DataFrame({"t1": [0.9, 0.1], "t2": [0.1, 0.9]}, index=["x", "y"])
    assert lb._borda_rank(tie).to_dict() == {"x": 1, "y": 1}


def test_borda_differs_from_macro_when_wins_are_narrow():
    # a wins 3 of 4 tasks narrowly, b wins one by far: Borda prefers a, the mean prefers b
    m = pd.DataFrame({"t1": [0.51, 0.5], "t2": [0.51, 0.5], "t3": [0.51, 0.5], "t4": [0.1, 0.9]}, index=["a", "b"])
    assert lb._borda_rank(m)["a"] == 1 and m.mean(axis=1).idxmax() == "b"


def test_incomplete_model_has_no_macro_and_no_rank():
    values = grid(list(PLANT), list(CATS), lambda m, t, r: PLANT[m][t])
    values.pop(("c", "s1", "full"))
    b = lb.leaderboard(cell_scores(check_scores(scores_from_values(values, CATS)))).set_index(["model", "category"])
    assert np.isnan(b.loc[("c", "macro"), "value"]) and pd.isna(b.loc[("c", "macro"), "rank"])
    assert not b.loc[("c", "macro"), "complete"] and b.loc[("a", "macro"), "complete"]
    assert b.loc[("c", "Promoters"), "complete"]
    # no rank of any kind on an unranked row; the ranked models' Borda ranks count only each other
    for agg in ("macro", "micro"):
        assert pd.isna(b.loc[("c", agg), "borda_rank"])
        ranked = b.xs(agg, level="category")
        ranked = ranked[ranked["rank"].notna()]
        assert ranked["borda_rank"].min() == 1 and ranked["borda_rank"].max() <= len(ranked)
    assert b["borda_rank"].isna().eq(b["rank"].isna()).all()


def test_wide_view_orders_by_macro():
    w = lb.wide_view(_board(), "geneb-paper", "full")
    assert list(w.index) == ["b", "a", "c"] and list(w.columns[-2:]) == ["macro", "micro"]


def test_a_model_missing_a_task_of_a_category_is_not_ranked_there():
    """Model e has only p1 of Promoters (0.95, above everyone): its partial mean is shown but never ranked, so it
    cannot win the category, be its specialist or its few-shot top on the one task it has."""
    from geneb.analysis import paper

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
    spec = paper._specialists(b)
    assert spec.loc[(spec["category"] == "Promoters") & (spec["regime"] == "full"), "winner"].tolist() == ["a"]
    tops = paper._regime_changes(b, "geneb-paper").set_index("category")
    assert tops.loc["Promoters", "top_full"] == "a" and tops.loc["Promoters", "top_10shot"] == "a"
    assert np.isnan(lb.wide_view(b, "geneb-paper", "full").loc["e", "Promoters"])
    assert lb.wide_view(b, "geneb-paper", "full", complete_only=False).loc["e", "Promoters"] == pytest.approx(0.95)


# --- a category none of whose tasks completed; tasks that fail the leakage or shortcut audit -----------------

SOLO = {**CATS, "l1": "Virus/Phage"}  # l1: the only task of its category
LEAKED = {"a": 0.99, "b": 0.2, "c": 0.1}  # l1's planted values: a memorised its (fully leaked) test split


def _cells(tasks=SOLO, leaked=True):
    values = grid(list(PLANT), list(tasks), lambda m, t, r: LEAKED[m] if t == "l1" else PLANT[m][t])
    if not leaked:
        values = {k: v for k, v in values.items() if k[1] != "l1"}
    return cell_scores(check_scores(scores_from_values(values, tasks)))


def test_the_only_task_of_a_category_failed_the_category_is_listed_unranked_with_the_reason():
    missing = {"l1": "Virus/Phage"}
    b = lb.leaderboard(_cells(leaked=False), missing, missing_reasons={"l1": "failed in this run (OOM in extract)"})
    b = b.set_index(["model", "category"])
    for m in PLANT:
        row = b.loc[(m, "Virus/Phage")]
        assert np.isnan(row["value"]) and pd.isna(row["rank"]) and not row["complete"]
        assert row["n_tasks"] == 0 and row["n_tasks_expected"] == 1
        assert row["incomplete_reason"] == "no task of this category completed: l1: failed in this run (OOM in extract)"
        for agg in ("macro", "micro"):
            r = b.loc[(m, agg)]
            assert not r["complete"] and pd.isna(r["rank"]) and np.isnan(r["value"]), (m, agg)
            assert (
                r["n_tasks_expected"] == 5
                and "missing 1 of 5 task(s): l1: failed in this run" in r["incomplete_reason"]
            )
    # the categories that completed are still ranked as before
    assert b.loc[("a", "Promoters"), "rank"] == 1 and b.loc[("a", "Promoters"), "incomplete_reason"] == ""
    assert set(b.reset_index()["category"]) == {*SOLO.values(), "macro", "micro"}


def test_the_clean_leaderboard_lists_a_failed_category_and_a_task_without_clean_rows():
    from geneb.analysis import run
    from synth import analysis_config

    values = grid(list(PLANT), list(SOLO), lambda m, t, r: LEAKED[m] if t == "l1" else PLANT[m][t])
    scores = check_scores(scores_from_values(values, SOLO))
    # every test row of l1 is in train: no clean value; the other tasks keep 90% of their test rows
    scores["value_clean"] = np.where(scores["task"] == "l1", np.nan, scores["value"] - 0.05)
    scores["ci_low_clean"] = scores["ci_high_clean"] = np.nan
    scores["n_test_clean"] = np.where(scores["task"] == "l1", 0, 45)
    settings = run.resolve_settings(analysis_config())
    meta = pd.DataFrame(index=list(PLANT))
    clean = run.clean_leaderboard(scores, meta, None, settings).set_index(["model", "category"])
    row = clean.loc[("a", "Virus/Phage")]
    assert pd.isna(row["rank"]) and not row["complete"] and run.NO_CLEAN_ROWS in row["incomplete_reason"]
    assert not clean.loc[("a", "macro"), "complete"] and pd.isna(clean.loc[("a", "macro"), "rank"])
    assert set(clean["subset"]) == {"clean"}
    # a failed task (s1) is missing from the clean board too: its category unranked, macro unranked
    drop = scores[scores["task"] != "s1"]
    clean = run.clean_leaderboard(drop, meta, None, settings, {"s1": "Splice Sites"}).set_index(["model", "category"])
    assert clean.loc[("b", "Splice Sites"), "incomplete_reason"].startswith("no task of this category completed: s1")
    assert pd.isna(clean.loc[("b", "Splice Sites"), "rank"]) and not clean.loc[("b", "micro"), "complete"]


def test_a_failed_cell_is_named_with_its_error_on_the_models_rows():
    cells = _cells()
    cells = cells[~((cells["model"] == "c") & (cells["task"] == "e1"))]
    b = lb.leaderboard(cells, cell_reasons={"c": {"e1": "rows 3, 9: every token UNK"}}).set_index(["model", "category"])
    assert b.loc[("c", "Enhancers"), "incomplete_reason"] == (
        "no task of this category completed: e1: failed for this model (rows 3, 9: every token UNK)"
    )
    assert pd.isna(b.loc[("c", "macro"), "rank"]) and b.loc[("a", "macro"), "rank"] == 1


def test_a_fully_leaked_task_is_flagged_on_every_row_it_feeds_and_exclude_flagged_ranks_without_it():
    flags = {"l1": {"leakage": "100.0% of test rows have a copy or homolog in the training split"}}
    b = lb.leaderboard(_cells(), flags=flags)
    i = b.set_index(["model", "category"])
    # planted: a wins l1 by memorising it, which makes it first on macro
    assert i.loc[("a", "macro"), "rank"] == 1 and i.loc[("b", "macro"), "rank"] == 2
    for m in PLANT:
        for cat in ("Virus/Phage", "macro", "micro"):
            assert i.loc[(m, cat), "flagged_tasks"] == "l1" and i.loc[(m, cat), "flags"] == "leakage", (m, cat)
        for cat in ("Promoters", "Enhancers", "Splice Sites"):
            assert i.loc[(m, cat), "flagged_tasks"] == "" and i.loc[(m, cat), "flags"] == ""
    assert (b["excluded_tasks"] == "").all() and b.attrs[lb.TASK_FLAGS_ATTR] == flags
    tasks = lb.task_leaderboard(_cells(), flags)
    assert set(tasks.loc[tasks["task"] == "l1", "flags"]) == {"leakage"} and set(
        tasks.loc[tasks["task"] != "l1", "flags"]
    ) == {""}

    x = lb.leaderboard(_cells(), flags=flags, exclude_flagged=["leakage"])
    j = x.set_index(["model", "category"])
    # ranked without l1: macro over the three other categories, b first
    assert j.loc[("b", "macro"), "rank"] == 1 and j.loc[("a", "macro"), "rank"] == 2
    assert j.loc[("a", "macro"), "value"] == pytest.approx((0.85 + 0.2 + 0.3) / 3) and j.loc[("a", "macro"), "complete"]
    assert j.loc[("a", "micro"), "n_tasks"] == 4 and j.loc[("a", "micro"), "excluded_tasks"] == "l1"
    row = j.loc[("a", "Virus/Phage")]
    assert pd.isna(row["rank"]) and np.isnan(row["value"]) and row["excluded_tasks"] == "l1"
    assert row["incomplete_reason"].startswith("every task of this category is excluded")
    assert x.attrs[lb.EXCLUDE_FLAGGED_ATTR] == ["leakage"]
    # a kind not excluded keeps the task in the ranking
    same = lb.leaderboard(_cells(), flags=flags, exclude_flagged=["shortcut"]).set_index(["model", "category"])
    assert same.loc[("a", "macro"), "rank"] == 1
    with pytest.raises(lb.AnalysisInputError, match="unknown kind"):
        lb.leaderboard(_cells(), flags=flags, exclude_flagged=["leaks"])


@pytest.mark.parametrize("name", ["leaderboard", "leaderboard_clean"])
def test_the_leaderboard_step_writes_failed_categories_and_audit_flags_into_both_boards(name, tmp_path):
    """The rule's step on a planted partial run: the failed v1 (the only Coding/NC task) is listed unranked in
    both written boards, macro and micro incomplete and unranked; the fully leaked l1 is flagged on its rows."""
    from geneb.tables.scores import FAILED_TASKS_ATTR
    from synth import FAILED_TASK, flagged_board_run

    t = flagged_board_run(tmp_path)
    board = pd.read_parquet(t / f"{name}.parquet")
    assert set(board["schema_version"]) == {lb._SCHEMA_VERSION} and board.attrs[FAILED_TASKS_ATTR] == FAILED_TASK
    assert set(board.attrs[lb.TASK_FLAGS_ATTR]) == {"l1"} and board.attrs[lb.EXCLUDE_FLAGGED_ATTR] == []
    b = board.set_index(["model", "category"])
    for m in "abc":
        row = b.loc[(m, "Coding/NC")]
        assert pd.isna(row["rank"]) and not row["complete"]
        assert row["incomplete_reason"].startswith("no task of this category completed: v1: failed in this run")
        assert "CUDA out of memory" in row["incomplete_reason"] and "traceback" not in row["incomplete_reason"]
        for agg in ("macro", "micro"):
            assert not b.loc[(m, agg), "complete"] and pd.isna(b.loc[(m, agg), "rank"])
            assert "v1" in b.loc[(m, agg), "incomplete_reason"]
    l1 = b.loc[("a", "Virus/Phage")]
    if name == "leaderboard":
        assert l1["flagged_tasks"] == "l1" and l1["flags"] == "leakage" and l1["rank"] == 1
        assert b.loc[("a", "macro"), "flags"] == "leakage"
        tasks = pd.read_parquet(t / "leaderboard_tasks.parquet")
        assert set(tasks.loc[tasks["task"] == "l1", "flags"]) == {"leakage"}
    else:  # no clean test row of l1: listed, unranked, with the reason
        assert pd.isna(l1["rank"]) and "no clean test rows" in l1["incomplete_reason"]


def test_exclude_flagged_leakage_ranks_without_the_leaked_task_in_the_written_board(tmp_path):
    from synth import flagged_board_run

    full = pd.read_parquet(flagged_board_run(tmp_path / "flagged") / "leaderboard.parquet").set_index(
        ["model", "category"]
    )
    t = flagged_board_run(tmp_path / "excluded", {"exclude_flagged": ["leakage"]})
    board = pd.read_parquet(t / "leaderboard.parquet")
    assert board.attrs[lb.EXCLUDE_FLAGGED_ATTR] == ["leakage"]
    b = board.set_index(["model", "category"])
    # with l1: a leads Virus/Phage by memorising it; without it Virus/Phage is listed, unranked, excluded
    assert full.loc[("a", "Virus/Phage"), "rank"] == 1
    row = b.loc[("a", "Virus/Phage")]
    assert pd.isna(row["rank"]) and row["excluded_tasks"] == "l1" and "excluded" in row["incomplete_reason"]
    assert (b.xs("micro", level="category")["excluded_tasks"] == "l1").all()
    assert (b.xs("micro", level="category")["n_tasks_expected"] == 4).all()  # p1, e1, s1 and the failed v1


def test_a_missing_task_with_an_unknown_category_is_refused_naming_it():
    with pytest.raises(lb.AnalysisInputError, match="'v9': 'Viruses'"):
        lb.leaderboard(_cells(), {"v9": "Viruses"})


def test_the_models_a_protocol_skips_are_the_boards_coverage_notes_and_the_cli_prints_them(tmp_path):
    from geneb.cli.results import cmd_leaderboard
    from geneb.tables.scores import COVERAGE_NOTES_ATTR
    from synth import flagged_board_run

    notes = {"geneb-paper": {"kmer-x": "skipped, it has no torch network (family kmer)"}}
    t = flagged_board_run(tmp_path, coverage_notes=notes)
    for name in ("leaderboard", "leaderboard_clean"):
        assert pd.read_parquet(t / f"{name}.parquet").attrs[COVERAGE_NOTES_ATTR] == notes
    args = argparse.Namespace(
        table=str(t / "leaderboard.parquet"),
        category="macro",
        regime="full",
        protocol="geneb-paper",
        top=10,
        results_dir=None,
        model=None,
    )
    assert "not covered: kmer-x: skipped, it has no torch network (family kmer)" in cmd_leaderboard(args)
    assert (
        pd.read_parquet(flagged_board_run(tmp_path / "none") / "leaderboard.parquet").attrs[COVERAGE_NOTES_ATTR] == {}
    )
