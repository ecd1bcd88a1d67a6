"""Is a finished table older than its inputs? Then it shows an earlier run's results, and its readers (the `geneb`
CLI, the HTML report) say so, naming the file.

The inputs of a table in `<results_dir>/tables/` (or `<results_dir>/published/tables/`) are fixed by the workflow:
every table there is computed from the score table `scores.parquet` beside it, and `scores.parquet` from the
probe tables under `<results_dir>/probes/`. A table written before one of those was last written (file
modification times) is stale: another config (or a partial rerun) changed the inputs after it was made.

The probe tables are in turn made from files under `resources/` (task cards and splits, audits, shot draws,
embeddings) that a run with another `results_dir` can write again. So the workflow records, beside
`scores.parquet`, every resources/ file it was computed from with its size and modification time
(`INPUTS_NAME`, `write_input_record`); a table whose record names a file since removed or written again (a task
re-prepared, a file re-extracted) is stale too (`_changed_inputs`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from pathlib import Path

from geneb.core.integrity import write_text_atomic

#: the score table every other table of a tables folder is computed from
_SCORES_NAME = "scores.parquet"
#: the record, beside the score table, of the resources/ files it was computed from (`write_input_record`)
INPUTS_NAME = "scores_inputs.json"
#: the layout version of that record
_INPUTS_VERSION = 1


def _when(mtime: float) -> str:
    return _dt.datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M:%S")


def _table_inputs(table: str | Path) -> list[Path]:
    """The existing input files of `table` (see the module docstring): `scores.parquet` beside it, or, for the
    score table itself, the probe tables under `<results_dir>/probes/`. [] when none exists."""
    table = Path(table)
    if table.name != _SCORES_NAME:
        scores = table.with_name(_SCORES_NAME)
        return [scores] if scores.is_file() else []
    probes = table.parent.parent / "probes"
    return sorted(probes.rglob("*.parquet")) if probes.is_dir() else []


def write_input_record(path: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]]) -> dict[str, object]:
    """Write the record `path` (INPUTS_NAME beside a score table) of `files` (paths relative to the run directory,
    the current one): {"version", "root": the run directory, "files": {path: {"size": bytes, "mtime_ns": int}}}.
    Returns it. Raises FileNotFoundError naming a file that does not exist (every input exists when the table is
    made)."""
    entries = {}
    for f in files:
        st = Path(f).stat()
        entries[str(f)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    record: dict[str, object] = {"version": _INPUTS_VERSION, "root": str(Path.cwd()), "files": entries}
    write_text_atomic(Path(path), json.dumps(record, indent=1, sort_keys=True))
    return record


def _changed_inputs(scores: str | Path) -> list[tuple[str, str]]:
    """[(file, what changed)] of the resources/ files the record beside `scores` (INPUTS_NAME) names that were
    removed or written again since (size or modification time differ), by path; [] when there is no
    record (a run before the record existed, or `geneb.evaluate`'s tables). Paths are read against the recorded
    run directory, or the current one when that no longer exists (a run folder moved)."""
    record_path = Path(scores).with_name(INPUTS_NAME)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    root = Path(record.get("root") or ".")
    if not root.is_dir():
        root = Path.cwd()
    changed = []
    for name, was in (record.get("files") or {}).items():
        path = root / name
        try:
            st = path.stat()
        except OSError:
            changed.append((name, "removed"))
            continue
        if st.st_size != was.get("size") or st.st_mtime_ns != was.get("mtime_ns"):
            changed.append((name, f"written again {_when(st.st_mtime)} (was {_when(was.get('mtime_ns', 0) / 1e9)})"))
    return changed


def stale_warning(table: str | Path) -> str | None:
    """A one-line warning when `table` is older than its newest input (`_table_inputs`), naming both files and
    when each was written, or when a resources/ file its score table was computed from changed since
    (`_changed_inputs`: a task re-prepared, embeddings re-extracted, by this or another config); None when
    neither (or it has no inputs, or does not exist)."""
    table = Path(table)
    if not table.is_file():
        return None
    scores = table.with_name(_SCORES_NAME)
    changed = _changed_inputs(scores) if scores.is_file() else []
    if changed:
        name, what = changed[0]
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return (
            f"{table} was computed from {name}{more}, {what} after {scores} was made: it may not match the files "
            "under resources/ now (another run re-prepared or re-extracted them); rerun snakemake with the config "
            "that wrote this table"
        )
    inputs = _table_inputs(table)
    if not inputs:
        return None
    newest = max(inputs, key=lambda p: p.stat().st_mtime)
    t_table, t_input = table.stat().st_mtime, newest.stat().st_mtime
    if t_table >= t_input:
        return None
    return (
        f"{table} is older than its input {newest} (table written {_when(t_table)}, input {_when(t_input)}): it "
        "may show an earlier run's results; rerun snakemake with the config that wrote the input (a config's "
        "`results_dir` keeps its tables apart)"
    )


def stale_warnings(tables: Iterable[str | Path]) -> list[str]:
    """`stale_warning` of each of `tables`, the stale ones only, in order."""
    return [w for w in (stale_warning(t) for t in tables) if w]
