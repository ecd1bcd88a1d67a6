"""What a model's and a task's page state about where their numbers come from, read from a run's own records:

* a model's extraction key (the root attribute of its HDF5 embedding files, `geneb.extract.cache.read_key`):
  the settings hash, the weights' source (kind, hub revision or path, content fingerprint), the weights'
  sha256 as loaded, and the package versions and compute dtype it ran with; the score table's probe
  provenance (embedding key hash, GENEB commit, scikit-learn version);
* a task's card (resources/tasks/{task}/{thash}/card.json), found through the score table's input record;
* the tasks a model left out in a run, and why: a failed cell or task, a contaminated cell, a task the
  leaderboard excludes as flagged, or no score.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from geneb.report import runcard
from geneb.site.collect import RunTables


def extraction_records(run: RunTables, model: str) -> list[dict[str, Any]]:
    """`runcard.extraction_records` of `model`'s embedding files recorded by `run`'s score table ([] when the run
    records none or they are not on disk: a results folder copied without resources/)."""
    return runcard.extraction_records(runcard.embedding_files(run.inputs, model))


def probe_provenance(run: RunTables, model: str) -> dict[str, str]:
    """`runcard.probe_provenance` of `model` in the run's score table ({} without one)."""
    return runcard.probe_provenance(run.table("scores"), model)


def task_card(run: RunTables, task: str) -> dict[str, Any] | None:
    """The card of `task` that `run`'s score table was computed from (the first, when the run prepared it under
    several settings), or None when not recorded or not on disk."""
    for path in run.input_files(f"resources/tasks/{task}/", "card.json"):
        try:
            card = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(card, dict):
            card["_path"] = str(path)
            return card
    return None


def card_facts(card: dict[str, Any]) -> dict[str, Any]:
    """The facts of a task card a task page shows (docs/data-dictionary.md, stage 1), flattened to text."""
    facts: dict[str, Any] = {k: card.get(k) for k in ("task", "category", "task_set", "taxon_group", "source")}
    facts["classes"] = f"{card.get('n_classes')} ({', '.join(map(str, card.get('classes') or []))})"
    if card.get("label_names"):
        facts["label names"] = ", ".join(f"{k}: {v}" for k, v in card["label_names"].items())
    for split, s in (card.get("splits") or {}).items():
        counts = ", ".join(f"{k}: {v}" for k, v in (s.get("class_counts") or {}).items())
        facts[f"{split} rows"] = f"{s.get('n')} of {s.get('n_source')} (per class {counts})"
        facts[f"{split} length"] = f"{s.get('len_min')}–{s.get('len_max')} nt, median {s.get('len_median')}"
        facts[f"{split} duplicate rows"] = s.get("n_duplicate_rows")
    overlap = card.get("train_test_overlap") or {}
    facts["train/test overlap"] = ", ".join(
        f"{k} {overlap[k]}" for k in ("exact", "case_only", "reverse_complement", "label_conflicts") if k in overlap
    )
    caps = card.get("caps") or {}
    facts["caps"] = "; ".join(f"{k}: {v.get('n_kept')} of {v.get('n_source')} kept" for k, v in caps.items()) or "none"
    facts["data hash"] = card.get("data_hash")
    facts["card"] = card.get("_path")
    return facts


def left_out(run: RunTables, model: str, cells: pd.DataFrame) -> pd.DataFrame:
    """The tasks of `run` that `model` has no score of, one row per (task, why): task, category, why. `cells`:
    the run's leaderboard_tasks rows (every model). A task counts as the run's when any model has it, or it
    failed. Why: the failed cell's or task's error, "contaminated: <reason>", "excluded from the ranking as
    flagged (<kinds>)", or "no score in this run (not configured for this model)"."""
    tasks: dict[str, str] = {}
    if len(cells):
        tasks.update(dict(zip(cells["task"], cells["category"].astype(str))))
    for task, rec in run.failed_tasks.items():
        tasks.setdefault(task, str(rec.get("category", "")))
    mine = cells[cells["model"] == model] if len(cells) else cells
    scored = set(mine.loc[mine["value"].notna(), "task"]) if len(mine) else set()
    failed_cells = run.failed_cells.get(model, {})
    contamination = run.table("contamination")
    rows = []
    for task, category in sorted(tasks.items()):
        if task in scored:
            continue
        if task in run.failed_tasks:
            why = f"the task failed in this run: {run.failed_tasks[task].get('error', '')}"
        elif task in failed_cells:
            why = f"failed for this model: {failed_cells[task].get('error', '')}"
        elif (
            contamination is not None
            and len(contamination)
            and (hit := contamination[(contamination["model"] == model) & (contamination["task"] == task)]).shape[0]
        ):
            why = f"contaminated: {hit['contamination_reason'].iloc[0] if 'contamination_reason' in hit else ''}"
        else:
            why = "no score in this run (not configured for this model)"
        rows.append({"run": run.label, "task": task, "category": category, "why": why})
    board = run.table("leaderboard")
    if board is not None and "excluded_tasks" in board.columns:
        b = board[(board["model"] == model) & (board["category"] == "macro")]
        for task in sorted({t for v in b["excluded_tasks"].fillna("") for t in str(v).split(",") if t}):
            rows.append(
                {
                    "run": run.label,
                    "task": task,
                    "category": tasks.get(task, ""),
                    "why": "scored, but left out of the ranking as flagged by the task audit (leaderboard.exclude_flagged)",
                }
            )
    return pd.DataFrame(rows, columns=["run", "task", "category", "why"])
