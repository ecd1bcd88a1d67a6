"""Is a finished table older than its inputs? Then it shows an earlier run's results, and its readers (the `geneb`
CLI, the HTML report) say so, naming the file.

The inputs of a table in `<results_dir>/tables/` (or `<results_dir>/published/tables/`) are fixed by the workflow:
every table there is computed from the score table `scores.parquet` beside it, and `scores.parquet` from the
probe tables under `<results_dir>/probes/`. A table written before one of those was last written (file
modification times) is stale: another config (or a partial rerun) changed the inputs after it was made.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from pathlib import Path

#: the score table every other table of a tables folder is computed from
SCORES_NAME = "scores.parquet"


def _when(mtime: float) -> str:
    return _dt.datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M:%S")


def table_inputs(table: str | Path) -> list[Path]:
    """The existing input files of `table` (see the module docstring): `scores.parquet` beside it, or, for the
    score table itself, the probe tables under `<results_dir>/probes/`. [] when none exists."""
    table = Path(table)
    if table.name != SCORES_NAME:
        scores = table.with_name(SCORES_NAME)
        return [scores] if scores.is_file() else []
    probes = table.parent.parent / "probes"
    return sorted(probes.rglob("*.parquet")) if probes.is_dir() else []


def stale_warning(table: str | Path) -> str | None:
    """A one-line warning when `table` is older than its newest input (`table_inputs`), naming both files and
    when each was written; None when it is not (or has no inputs, or does not exist)."""
    table = Path(table)
    if not table.is_file():
        return None
    inputs = table_inputs(table)
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
