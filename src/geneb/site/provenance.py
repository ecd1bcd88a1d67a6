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
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.extract.cache import CacheError, read_key
from geneb.site.collect import RunTables

#: score-table columns that state how a model's probes were made (the same in every row of a model, or listed)
PROBE_PROVENANCE = (
    "embedding_key_hash",
    "embedding_compute_dtype",
    "config_hash",
    "geneb_version",
    "geneb_commit",
    "geneb_dirty",
    "sklearn_version",
    "numpy_version",
    "scipy_version",
)


def _distinct(values: pd.Series) -> str:
    out = sorted({str(v) for v in values.dropna()})
    return ", ".join(out)


def extraction_records(run: RunTables, model: str) -> list[dict[str, Any]]:
    """One record per settings hash of `model`'s embedding files in `run` (the score table's inputs,
    resources/embeddings/{model}/{settings hash}/...): settings_hash, family, source (kind, path / hub id,
    revision, fingerprint), weights_sha256, compute_dtype, weights_dtype, model_class, package_versions, the
    number of files and the first file read. [] when the run records no such file or they are not on disk
    (a results folder copied without resources/)."""
    files = run.input_files(f"resources/embeddings/{model}/", ".h5")
    by_hash: dict[str, list[Path]] = {}
    for f in files:
        by_hash.setdefault(f.parent.parent.name, []).append(f)
    out = []
    for xhash, paths in sorted(by_hash.items()):
        record: dict[str, Any] = {"settings_hash": xhash, "files": len(paths), "file": str(paths[0])}
        try:
            key = read_key(paths[0])
        except (CacheError, OSError) as err:
            record["error"] = f"extraction key not readable: {err}"
            out.append(record)
            continue
        settings = key.get("settings", {})
        encoder = key.get("encoder", {})
        record.update(
            settings_hash=key.get("settings_hash", xhash),
            family=settings.get("family"),
            source=settings.get("source", {}),
            weights_sha256=encoder.get("weights_sha256"),
            weights_format=encoder.get("weights_format"),
            weights_dtype=encoder.get("weights_dtype"),
            compute_dtype=encoder.get("compute_dtype"),
            model_class=encoder.get("model_class") or encoder.get("adapter"),
            extraction=settings.get("extraction", {}),
            package_versions=key.get("package_versions", {}),
        )
        out.append(record)
    return out


def probe_provenance(run: RunTables, model: str) -> dict[str, str]:
    """{column: distinct values, comma-joined} of PROBE_PROVENANCE over `model`'s rows of the run's score table
    ({} without one)."""
    scores = run.table("scores")
    if scores is None:
        return {}
    rows = scores[scores["model"] == model]
    return {c: _distinct(rows[c]) for c in PROBE_PROVENANCE if c in rows.columns and len(rows)}


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
