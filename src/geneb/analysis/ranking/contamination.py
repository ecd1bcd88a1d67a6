"""Contamination: cells where the model was trained or fine-tuned on the task itself.

A model's registry entry lists `trained_on_tasks` (mirror and paper task ids). A cell (model, task) is
contaminated when the task has the same data as a listed task: tasks are grouped by the catalogue's
`geneb_task_id` (a mirror task and its paper task, whatever the split), so listing the mirror id or the paper
id flags both. Such a cell measures memorisation, not transfer: by default it is left out of every ranking
(policy "exclude") and listed in its own table; policy "flag" keeps it, marked.
"""

from __future__ import annotations

import pandas as pd

from geneb.tables.scores import AnalysisInputError

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
