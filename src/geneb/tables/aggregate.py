"""Aggregation: per-(protocol, model, task) probe tables -> one long-format score table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from geneb.core import integrity
from geneb.tables.hygiene_columns import join_columns
from geneb.tables.scores import FAILED_CELLS_ATTR, FAILED_TASKS_ATTR, PROBE_THREADS_ATTR, SCHEMA_VERSION


def thread_records(frames: list[pd.DataFrame]) -> list[dict]:
    """The distinct thread-pool records (`geneb.tables.scores.PROBE_THREADS_ATTR`) of probe tables, each with
    "files": how many tables carry it, in first-seen order; tables without one (written before it was
    recorded) count in a last {"files": n} entry."""
    seen: dict[str, dict] = {}
    unrecorded = 0
    for df in frames:
        record = df.attrs.get(PROBE_THREADS_ATTR)
        if not record:
            unrecorded += 1
            continue
        key = json.dumps(record, sort_keys=True)
        seen.setdefault(key, {**record, "files": 0})["files"] += 1
    return list(seen.values()) + ([{"files": unrecorded}] if unrecorded else [])


def concat_tables(
    paths: list[str | Path],
    out_path: str | Path,
    *,
    schema_version: str | None = None,
    failures: str | Path | None = None,
    cards: list[str | Path] | None = None,
    audits: list[str | Path] | None = None,
) -> pd.DataFrame:
    """Concatenate parquet tables with one schema into `out_path` (atomically); returns the table.

    schema_version: the version every row must carry (default: the probe tables' current
    `geneb.tables.scores.SCHEMA_VERSION`). Raises ValueError naming the file whose `schema_version` is another
    (or mixed), and the first file whose columns differ from those of the first file of the right version.
    The thread pools the probes ran with go into the metadata as `geneb.tables.scores.PROBE_THREADS_ATTR`
    (`thread_records`). failures: a partial run's failures file (geneb.run.partial); its failed tasks go into the table's metadata
    (`geneb.tables.scores.FAILED_TASKS_ATTR`), so they are listed, never silently missing. cards: the task cards of
    the tables; when given, the data-hygiene columns are joined on (`geneb.tables.hygiene_columns`), with the
    task audits' homolog counts from `audits`. The failures file's failed (model, task) cells, {model: {task:
    {"category", "error"}}}, go into the metadata as `geneb.tables.scores.FAILED_CELLS_ATTR`: one model failing on
    a task removes only that cell, never the other models' scores of the task.
    """
    if not paths:
        raise ValueError("no probe tables to aggregate")
    if schema_version is None:
        schema_version = SCHEMA_VERSION
    frames = [integrity.read_parquet(p) for p in paths]
    for p, df in zip(paths, frames):
        found = sorted(set(df["schema_version"].astype(str))) if "schema_version" in df.columns else []
        if found != [schema_version]:
            raise ValueError(
                f"{p}: schema_version {found or 'missing'}, expected [{schema_version!r}]; rerun the job that wrote it"
            )
    cols = list(frames[0].columns)
    for p, df in zip(paths, frames):
        if list(df.columns) != cols:
            extra, missing = sorted(set(df.columns) - set(cols)), sorted(set(cols) - set(df.columns))
            raise ValueError(
                f"{p}: columns differ from {paths[0]} (extra {extra}, missing {missing}, or another order)"
            )
    table = pd.concat(frames, ignore_index=True)
    if cards is not None:
        table = join_columns(table, cards, audits)
    table.attrs = {}
    if any(PROBE_THREADS_ATTR in df.attrs for df in frames):  # probe tables (prediction tables carry none)
        table.attrs[PROBE_THREADS_ATTR] = thread_records(frames)
    if failures is not None:
        record = json.loads(Path(failures).read_text(encoding="utf-8"))
        table.attrs[FAILED_TASKS_ATTR] = record["failed"]
        table.attrs[FAILED_CELLS_ATTR] = record.get("failed_cells") or {}
    integrity.write_parquet(table, out_path)
    return table
