"""The task-audit analysis (geneb.analysis.controls): shortcut margins, full-vs-clean differences and the
per-task audit table, on small hand-made frames."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from geneb.analysis.controls import clean_differences, shortcut_margins, shortcut_models, task_audit_table
from geneb.analysis.ranking import leaderboard
from geneb.tasks.audit import _AUDIT_SCHEMA_VERSION


def _cells():
    rows = []
    values = {("m", "t1"): 0.6, ("m", "t2"): 0.4, ("sc-a", "t1"): 0.5, ("sc-b", "t1"): 0.2, ("sc-a", "t2"): 0.1}
    for (model, task), v in values.items():
        rows.append(
            {"protocol": "p", "model": model, "task": task, "category": "Promoters", "regime": "full", "value": v}
        )
    return pd.DataFrame(rows).assign(source="geneb", n_seeds=1)


def test_margin_is_value_minus_the_best_shortcut_per_task_and_its_category_mean():
    meta = pd.DataFrame({"architecture_family": ["transformer", "shortcut", "shortcut"]}, index=["m", "sc-a", "sc-b"])
    assert shortcut_models(meta) == ["sc-a", "sc-b"]
    cells = _cells()
    board, per_cell = shortcut_margins(leaderboard(cells), cells, shortcut_models(meta))
    m = per_cell[per_cell["model"] == "m"].set_index("task")
    assert m.loc["t1", "shortcut_best_model"] == "sc-a" and m.loc["t1", "shortcut_margin"] == pytest.approx(0.1)
    assert m.loc["t2", "shortcut_margin"] == pytest.approx(0.3)
    row = board[(board["model"] == "m") & (board["category"] == "Promoters")].iloc[0]
    assert row["shortcut_margin"] == pytest.approx(0.2)
    assert len(board) == len(leaderboard(cells))
    # no shortcut model: the margin is NaN, not 0
    board2, _ = shortcut_margins(leaderboard(cells), cells, [])
    assert board2["shortcut_margin"].isna().all()


def test_clean_differences_are_sorted_by_size():
    base = {"protocol": "p", "category": "Promoters", "regime": "full", "metric": "MCC", "n_test": 10}
    scores = pd.DataFrame(
        [
            {**base, "model": "a", "task": "t1", "seed": 0, "value": 0.5, "value_clean": 0.45, "n_test_clean": 8},
            {**base, "model": "a", "task": "t2", "seed": 0, "value": 0.5, "value_clean": 0.1, "n_test_clean": 5},
            {**base, "model": "a", "task": "t3", "seed": 0, "value": 0.5, "value_clean": np.nan, "n_test_clean": 0},
        ]
    )
    d = clean_differences(scores)
    assert d["task"].tolist()[:2] == ["t2", "t1"] and d["difference"].iloc[0] == pytest.approx(0.4)
    assert np.isnan(d["difference"].iloc[-1])


def test_task_audit_table_has_one_row_per_task_with_flags_and_the_best_shortcut(tmp_path):
    audit = {
        "schema_version": _AUDIT_SCHEMA_VERSION,
        "task": "t1",
        "data_hash": "x",
        "n_train": 600,
        "n_test": 300,
        "min_class_rows_train": 300,
        "shortcut_best_feature": "gc",
        "shortcut_best_auroc": 0.81,
        "shortcut_flag": "fail",
        "shortcut_aurocs": {"length": 0.5, "gc": 0.81},
        "shortcut_flags": {"length": "pass", "gc": "fail"},
        "leak_n_leaked": 9,
        "leak_n_mmseqs_similarity": 7,
        "leak_fraction": 0.03,
        "leak_flag": "fail",
        "audit_fail": True,
        "leaked_test_rows": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    }
    (tmp_path / "audit.json").write_text(json.dumps(audit))
    card = {"task": "t1", "category": "Promoters", "data_hash": "x", "train_test_overlap": {"exact": 4}}
    (tmp_path / "card.json").write_text(json.dumps(card))
    base = {"protocol": "p", "task": "t1", "category": "Promoters", "regime": "full", "metric": "MCC", "seed": 0}
    scores = pd.DataFrame(
        [
            {**base, "model": "sc-a", "value": 0.3, "value_clean": 0.3, "n_test": 300, "n_test_clean": 291},
            {**base, "model": "m", "value": 0.7, "value_clean": 0.6, "n_test": 300, "n_test_clean": 291},
        ]
    )
    meta = pd.DataFrame({"architecture_family": ["transformer", "shortcut"]}, index=["m", "sc-a"])
    table = task_audit_table(scores, [tmp_path / "audit.json"], [tmp_path / "card.json"], meta, "p")
    row = table.iloc[0]
    assert len(table) == 1 and row["shortcut_best_model_full"] == "sc-a" and row["shortcut_best_mcc_full"] == 0.3
    assert row["flag_gc"] == "fail" and row["auroc_gc"] == 0.81 and row["overlap_exact"] == 4
    assert row["overlap_homolog"] == 9 and row["leak_flag"] == "fail"
    assert row["overlap_homolog_mmseqs"] == 7  # the count by MMseqs2's local similarity alone, for comparison
    assert row["largest_clean_difference_model"] == "m" and row["largest_clean_difference"] == pytest.approx(0.1)


def _audit(**over):
    row = {
        "task": "t",
        "leaked_fraction": 0.0,
        "overlap_exact": 0,
        "overlap_reverse_complement": 0,
        "overlap_homolog": 0,
        "shortcut_best_feature": "gc",
        "shortcut_best_auroc": 0.55,
        "shortcut_flag": "pass",
        "shortcut_best_model_full": "kmer-1",
        "shortcut_best_mcc_full": 0.1,
    }
    return pd.DataFrame([{**row, **over}])


def _settings(**over):
    from snakemake.utils import validate

    from synth import SCHEMA

    cfg = {"tasks": ["x"], "models": ["y"], "leaderboard": dict(over)}
    validate(cfg, str(SCHEMA))
    return cfg["leaderboard"]


def test_audit_flags_thresholds_are_the_configs_and_a_test_split_inside_train_is_leakage():
    from geneb.analysis.controls import AuditFlagError, audit_flags

    s = _settings()
    assert s == {
        "leakage_max_fraction": 0.02,
        "shortcut_max_auroc": 0.7,
        "shortcut_max_mcc": None,
        "exclude_flagged": [],
    }
    assert audit_flags(_audit(), s) == {}
    whole = audit_flags(_audit(leaked_fraction=1.0, overlap_exact=50, overlap_homolog=50), s)["t"]
    assert (
        list(whole) == ["leakage"]
        and whole["leakage"].startswith("100.0% of test rows")
        and "exact 50" in whole["leakage"]
    )
    # the boundary: at the fraction fails, below it does not; the highest allowed threshold still flags 1.0
    assert "t" in audit_flags(_audit(leaked_fraction=0.02), s) and audit_flags(_audit(leaked_fraction=0.0199), s) == {}
    assert "t" in audit_flags(_audit(leaked_fraction=1.0), _settings(leakage_max_fraction=1.0))
    # shortcut: above the AUROC boundary, unless the audit could not judge it (too few rows per class)
    assert "above" not in audit_flags(_audit(shortcut_best_auroc=0.71, shortcut_flag="fail"), s)["t"]["shortcut"]
    assert audit_flags(_audit(shortcut_best_auroc=0.7), s) == {}
    assert audit_flags(_audit(shortcut_best_auroc=0.95, shortcut_flag="unknown"), s) == {}
    # the shortcut model's MCC counts only where a boundary is configured
    assert audit_flags(_audit(shortcut_best_mcc_full=0.8), s) == {}
    mcc = audit_flags(_audit(shortcut_best_mcc_full=0.8), _settings(shortcut_max_mcc=0.5))["t"]["shortcut"]
    assert "kmer-1 reaches MCC 0.800" in mcc
    with pytest.raises(AuditFlagError, match="leaderboard settings lack"):
        audit_flags(_audit(), {})
    with pytest.raises(AuditFlagError, match="missing columns"):
        audit_flags(_audit().drop(columns="leaked_fraction"), s)
