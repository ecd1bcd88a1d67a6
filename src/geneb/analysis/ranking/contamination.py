"""Contamination: cells where the model was trained or fine-tuned on the task itself.

A model's registry entry lists `trained_on_tasks` (mirror and paper task ids). A cell (model, task) is
contaminated when the task has the same data as a listed task: tasks are grouped by the catalogue's
`geneb_task_id` (a mirror task and its paper task, whatever the split), so listing the mirror id or the paper
id flags both. Such a cell measures memorisation, not transfer: by default it is left out of every ranking
(policy "exclude") and listed in its own table; policy "flag" keeps it, marked.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from geneb.analysis.inputs.tables import cell_scores
from geneb.tables.scores import CELL_KEYS, AnalysisInputError

log = logging.getLogger(__name__)

POLICIES = ("exclude", "flag")


def flag_contamination(cells: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None) -> pd.DataFrame:
    """Return `cells` with a boolean `contaminated` column and the `contamination_reason`.

    cells: per-cell table (`tables.cell_scores`); model_meta: `metadata.model_frame` output (models missing
    from it are treated as clean); task_meta: the catalogue (optional; adds the paper-id alias).
    """
    out = cells.copy()
    # tasks with the same data share a group (the paper task id): listing either id covers every one of them
    group: dict[str, str] = {}
    if task_meta is not None and "geneb_task_id" in task_meta.columns:
        group = {str(t): str(g) for t, g in task_meta["geneb_task_id"].items() if g}
    trained = model_meta["trained_on_tasks"].to_dict() if "trained_on_tasks" in model_meta else {}
    flags, reasons = [], []
    for model, task in zip(out["model"], out["task"]):
        seen = {group.get(t, t) for t in trained.get(model, ())}
        hit = group.get(task, task) in seen
        flags.append(hit)
        reasons.append(f"{model} was trained on {task}" if hit else "")
    out["contaminated"] = flags
    out["contamination_reason"] = reasons
    return out


def apply_policy(cells: pd.DataFrame, policy: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split flagged cells by `policy`: returns (cells used for rankings, contaminated cells).

    "exclude" drops contaminated cells from the first table; "flag" keeps them (still marked). Raises
    AnalysisInputError for an unknown policy or when `cells` was not flagged.
    """
    if policy not in POLICIES:
        raise AnalysisInputError(f"contamination policy must be one of {POLICIES}, not {policy!r}")
    if "contaminated" not in cells.columns:
        raise AnalysisInputError("cells are not flagged; call flag_contamination first")
    bad = cells[cells["contaminated"]]
    kept = cells[~cells["contaminated"]] if policy == "exclude" else cells
    return kept.reset_index(drop=True), bad.reset_index(drop=True)


def _cell_cis(cells: pd.DataFrame, scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Attach the score table's per-cell CI (mean over seeds of ci_low/ci_high) where it has one."""
    out = cells.copy()
    if {"ci_low", "ci_high"} <= set(scores.columns):
        ci = scores[scores["metric"] == metric].groupby(list(CELL_KEYS), observed=True)[["ci_low", "ci_high"]].mean()
        out = out.merge(ci.reset_index(), on=list(CELL_KEYS), how="left")
    else:
        out["ci_low"] = out["ci_high"] = np.nan
    out["ci_source"] = np.where(out["ci_high"].notna(), "score table (seed mean of per-seed CIs)", "none")
    return out


def prepare_cells(
    scores: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None, settings: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed-mean cells of the configured metric, contamination applied: (cells used, contaminated cells).
    Tasks whose score rows are flagged `test_single_class` (a one-class test split kept by
    task_checks.single_class_test: keep) are left out: MCC there is 0 for every model, so they would only pull
    their category's mean towards 0."""
    if "test_single_class" in scores.columns and scores["test_single_class"].fillna(False).astype(bool).any():
        flagged = scores["test_single_class"].fillna(False).astype(bool)
        log.warning("left out of the analyses (one-class test split): %s", sorted(set(scores.loc[flagged, "task"])))
        scores = scores[~flagged]
    cells = flag_contamination(cell_scores(scores, metric=settings["metric"]), model_meta, task_meta)
    used, contaminated = apply_policy(cells, settings["contamination"])
    return _cell_cis(used, scores, settings["metric"]), contaminated
