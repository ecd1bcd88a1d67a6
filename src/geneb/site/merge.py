"""Rows of several runs on one site: each labelled by its run, and the rule for a cell two runs both hold.

A cell is one (model, task, regime, protocol) score, plus the view where the table has a `view` column. Two runs
may hold the same cell (a run repeated, or a second run adding models to the first): the site shows it once per
run, and requires the runs to agree on it, to `CELL_TOLERANCE`. A cell whose values differ is refused
(`SiteConflictError`), naming the cell, the runs and their values: the site would otherwise show two answers to
one question without saying which is right. The category rows of the leaderboard are not compared: they
are means over each run's own set of tasks, and are shown per run.
"""

from __future__ import annotations

import pandas as pd

from geneb.site.collect import RunTables
from geneb.tables.scores import AnalysisInputError

#: the largest |difference| of two runs' values of one cell that counts as the same value (MCC units; the
#: tables store float64 seed means, so a repeated run reads back the same number)
CELL_TOLERANCE = 1e-9
#: the keys of a cell
CELL_KEYS = ("model", "task", "regime", "protocol")
#: conflicts named in the error message
SHOWN_CONFLICTS = 10


class SiteConflictError(AnalysisInputError):
    """Two runs given to one site hold the same cell with different values."""


def labelled(runs: list[RunTables], name: str) -> pd.DataFrame:
    """The table `name` of every run that has it, concatenated, with a first column `run` (the run's label).
    Empty (no columns) when no run has it."""
    parts = []
    for run in runs:
        t = run.table(name)
        if t is not None and len(t):
            parts.append(t.assign(run=run.label)[["run", *t.columns]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def cell_keys(cells: pd.DataFrame) -> list[str]:
    """The key columns of a cell in `cells`: CELL_KEYS, and `view` where present."""
    return [*CELL_KEYS, *(["view"] if "view" in cells.columns else [])]


def check_cells(cells: pd.DataFrame) -> None:
    """Raise SiteConflictError when two runs of `cells` (labelled rows of leaderboard_tasks: run, the cell keys,
    value) hold one cell with values more than CELL_TOLERANCE apart (one NaN and one number differ too), naming
    the first SHOWN_CONFLICTS cells, their runs and values, and the count."""
    if cells.empty or cells["run"].nunique() < 2:
        return
    keys = cell_keys(cells)
    conflicts = []
    for key, g in cells.groupby(keys, sort=True, dropna=False):
        if g["run"].nunique() < 2:
            continue
        v = g["value"].astype(float)
        nan = v.isna()
        if (nan.any() and not nan.all()) or (not nan.all() and v.max() - v.min() > CELL_TOLERANCE):
            cell = ", ".join(f"{k}={x}" for k, x in zip(keys, key))
            values = "; ".join(f"{r}: {x:.6f}" for r, x in zip(g["run"], v))
            conflicts.append(f"({cell}) {values}")
    if conflicts:
        shown = "\n".join(f"- {c}" for c in conflicts[:SHOWN_CONFLICTS])
        more = f"\n... and {len(conflicts) - SHOWN_CONFLICTS} more" if len(conflicts) > SHOWN_CONFLICTS else ""
        raise SiteConflictError(
            f"site: {len(conflicts)} (model, task, regime, protocol) cell(s) differ between the runs given; a site "
            f"shows one value per cell, so give runs that agree (or one of them):\n{shown}{more}"
        )


def board_rows(runs: list[RunTables]) -> pd.DataFrame:
    """The leaderboard rows of every run, labelled by run, with each row's bootstrap rank interval (`rank_low`,
    `rank_high`, `p_top1` and the value's `ci_low` / `ci_high` from rank_intervals, where the run has it) and the model's display name."""
    board = labelled(runs, "leaderboard")
    ri = labelled(runs, "rank_intervals")
    keys = ["run", "protocol", "regime", "model", "category"]
    if len(ri) and set(keys) <= set(ri.columns):
        extra = [
            c
            for c in ("rank_low", "rank_high", "p_top1", "ci_low", "ci_high")
            if c in ri.columns and c not in board.columns
        ]
        board = board.merge(ri[keys + extra].drop_duplicates(keys), on=keys, how="left")
    return with_display(board, runs)


def with_display(df: pd.DataFrame, runs: list[RunTables]) -> pd.DataFrame:
    """`df` with a `display` column after `model`: the models table's display name (the id where none)."""
    if df.empty or "model" not in df.columns:
        return df
    names: dict[str, str] = {}
    for run in runs:
        m = run.table("models")
        if m is not None and "display" in m.columns:
            names.update({k: v for k, v in zip(m["model"], m["display"]) if isinstance(v, str) and v})
    out = df.drop(columns=[c for c in ("display",) if c in df.columns])
    out.insert(list(out.columns).index("model") + 1, "display", [names.get(m, m) for m in out["model"]])
    return out
