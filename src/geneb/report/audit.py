"""The report's task-audit sections: flagged tasks, single-feature AUROCs, the largest full-vs-clean MCC
differences, and the (model, task) cells that failed (docs/analyses.md, "Task audit")."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from geneb.analysis.controls.task_audit import NO_CLEAN_ROWS, clean_differences
from geneb.core import integrity
from geneb.report.render import not_applicable
from geneb.tables.scores import MISSING_CELL_RULE, failed_cells

#: rows of the full-vs-clean table
TOP_DIFFERENCES = 15


def audit_sections(
    task_audit: str | Path | None, scores: str | Path | None, leaderboard: str | Path, table: Callable[..., str]
) -> list[str]:
    """HTML parts: "Task audit" (from `task_audit`, results/tables/task_audit.parquet) and "Failed cells" (from the
    leaderboard's metadata); `table(df, digits, max_rows)` renders a frame. Nothing for absent inputs."""
    parts: list[str] = []
    cells = failed_cells(str(leaderboard))
    if cells:
        rows = [
            {"model": m, "task": t, "category": r.get("category", ""), "error": r.get("error", "")}
            for m, tasks in sorted(cells.items())
            for t, r in sorted(tasks.items())
        ]
        parts += [
            "<h3 id='failed-cells'>Failed cells</h3>",
            f"<p class='note'>{len(rows)} (model, task) cell(s) failed while other models completed the task; the "
            f"other models' scores of those tasks are kept. {html.escape(MISSING_CELL_RULE)}.</p>",
            table(pd.DataFrame(rows), 3, 500),
        ]
    if task_audit is None or not Path(task_audit).exists():
        return parts
    audit = integrity.read_parquet(task_audit)
    flagged = audit[(audit["shortcut_flag"] == "fail") | (audit["leak_flag"] == "fail")]
    head = [
        "task",
        "category",
        "shortcut_flag",
        "shortcut_best_feature",
        "shortcut_best_auroc",
        "shortcut_best_model_full",
        "shortcut_best_mcc_full",
        "leak_flag",
        "overlap_exact",
        "overlap_reverse_complement",
        "overlap_case_only",
        "overlap_homolog",
        "leaked_fraction",
    ]
    parts += [
        "<h2 id='task-audit'>Task audit</h2>",
        "<p>Is the task measuring the model? Shortcut: the largest single-feature AUROC on the training split "
        "(length, GC, 4 bases, 16 dinucleotides; genomic-benchmarks-qc flags: fail above 0.7, unknown under 250 rows "
        "per class) and the best shortcut model's MCC. Leakage: test rows with a training homolog (MMseqs2, both "
        "strands, candidates re-scored by the identity of the whole test row, at or above the configured threshold); "
        "fail at the configured fraction. "
        f"{len(flagged)} of {len(audit)} task(s) flagged.</p>",
        *(
            ["<h3>Flagged tasks</h3>", table(flagged[[c for c in head if c in flagged.columns]], 3, 500)]
            if len(flagged)
            else [not_applicable("Flagged tasks", "none: no task fails the shortcut or leakage audit")]
        ),
        "<h3>Single-feature AUROCs per task (training split)</h3>",
        table(audit[["task", *[c for c in audit.columns if c.startswith("auroc_")]]], 3, 500),
    ]
    if scores is not None:
        diffs = clean_differences(integrity.read_parquet(scores))
        shown = diffs.dropna(subset=["difference"]).head(TOP_DIFFERENCES)
        heading = f"Largest full-vs-clean MCC differences (top {TOP_DIFFERENCES})"
        parts += (
            [
                f"<h3>{heading}</h3>",
                "<p class='note'>value: MCC on the whole test split; value_clean: the same fitted probe on the test "
                "rows without a training homolog (seed means).</p>",
                table(shown, 4, TOP_DIFFERENCES),
            ]
            if len(shown)
            else [not_applicable(heading, "none: no cell has both a full-split and a clean-subset MCC")]
        )
        none = no_clean_rows(diffs)
        if len(none):
            parts += [
                "<h3>Tasks without clean test rows</h3>",
                f"<p class='warn'>⚠ {len(none)} task(s): {html.escape(NO_CLEAN_ROWS)}. Their full-split MCC cannot be "
                "told apart from memorising the training split (no clean value, so no difference above); the clean "
                "leaderboard lists them as missing and does not rank their categories.</p>",
                table(none, 4, 500),
            ]
    return parts


def no_clean_rows(diffs: pd.DataFrame) -> pd.DataFrame:
    """The tasks of `clean_differences(scores)` without a clean value in any cell (`value_clean` NaN: every test row
    has a training homolog or duplicate), one row per task: task, category, n_test, n_test_clean, models (how many
    scored it), best_value (the largest full-split MCC, what its leaderboard would show) and clean
    (NO_CLEAN_ROWS)."""
    if diffs.empty or "value_clean" not in diffs.columns:
        return pd.DataFrame(columns=["task", "category", "n_test", "n_test_clean", "models", "best_value", "clean"])
    has = diffs.groupby("task")["value_clean"].transform(lambda v: v.notna().any())
    d = diffs[~has.astype(bool)]
    out = (
        d.groupby("task", sort=True)
        .agg(
            category=("category", "first"),
            n_test=("n_test", "max"),
            n_test_clean=("n_test_clean", "max"),
            models=("model", "nunique"),
            best_value=("value", "max"),
        )
        .reset_index()
    )
    out["clean"] = NO_CLEAN_ROWS
    return out
