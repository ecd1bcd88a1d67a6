"""The score-table contract the analyses read, and its reduction to one value per (model, task, regime).

`results/tables/scores.parquet` (docs/data-dictionary.md, stage 4) is long format: one row per (protocol,
model, task, regime, seed, metric). The analyses work on the seed mean of one metric (MCC by default) per
(protocol, model, task, regime): a *cell*. Published results (`source = "published"`) arrive already averaged
over the paper's five seeds and carry `seed = -1`.
"""

from __future__ import annotations

import hashlib

import pandas as pd

from geneb.tables.scores import CELL_KEYS, AnalysisInputError


def cell_scores(scores: pd.DataFrame, metric: str = "MCC", protocol: str | None = None) -> pd.DataFrame:
    """One row per (protocol, model, task, category, regime): the seed mean of `metric`.

    scores: a validated score table (`check_scores`). Returns columns CELL_KEYS + [value, n_seeds, source],
    sorted by the keys. `protocol` keeps only that protocol. Raises AnalysisInputError when no row is left.
    """
    df = scores[scores["metric"] == metric]
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if df.empty:
        raise AnalysisInputError(f"no {metric} rows" + (f" for protocol {protocol!r}" if protocol else ""))
    out = (
        df.groupby(list(CELL_KEYS), sort=True, observed=True)
        .agg(value=("value", "mean"), n_seeds=("seed", "nunique"), source=("source", "first"))
        .reset_index()
    )
    return out


def task_matrix(cells: pd.DataFrame, regime: str, protocol: str | None = None) -> pd.DataFrame:
    """Wide (n_models, n_tasks) frame of cell values for one regime; NaN where a model lacks a task.

    Index: model (sorted); columns: task (sorted). Raises AnalysisInputError when `cells` has several
    protocols and none is chosen, or when nothing is left.
    """
    df = cells[cells["regime"] == regime]
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if df["protocol"].nunique() > 1:
        raise AnalysisInputError(f"cells hold protocols {sorted(df['protocol'].unique())}; choose one")
    if df.empty:
        raise AnalysisInputError(f"no cells for regime {regime!r}" + (f", protocol {protocol!r}" if protocol else ""))
    return df.pivot(index="model", columns="task", values="value").sort_index().sort_index(axis=1)


def task_categories(cells: pd.DataFrame) -> pd.Series:
    """Series task -> category (one category per task, as `check_scores` guarantees)."""
    return cells.drop_duplicates("task").set_index("task")["category"].sort_index()


def frame_sha256(df: pd.DataFrame, length: int = 12) -> str:
    """First `length` hex digits of a sha256 over a frame's contents (row order and column names included).

    Used as the provenance of an analysis input: two tables with equal hashes hold the same values.
    """
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:length]
