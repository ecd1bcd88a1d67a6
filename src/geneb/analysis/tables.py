"""The score-table contract the analyses read, and its reduction to one value per (model, task, regime).

`results/tables/scores.parquet` (docs/data-dictionary.md, stage 4) is long format: one row per (protocol,
model, task, regime, seed, metric). The analyses work on the seed mean of one metric (MCC by default) per
(protocol, model, task, regime): a *cell*. Published results (`source = "published"`) arrive already averaged
over the paper's five seeds and carry `seed = -1`.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from geneb.categories import CATEGORIES

REGIMES: tuple[str, ...] = ("full", "10shot", "1shot")
#: columns every score table must have
REQUIRED_COLUMNS: tuple[str, ...] = ("protocol", "model", "task", "category", "regime", "seed", "metric", "value")
#: seed value meaning "the mean over the paper's seeds, as published"
PUBLISHED_SEED = -1
#: the keys of one cell
CELL_KEYS: tuple[str, ...] = ("protocol", "model", "task", "category", "regime")


class AnalysisInputError(ValueError):
    """An input table or setting the analyses cannot use; the message names the table, column and value."""


def check_scores(scores: pd.DataFrame, what: str = "score table") -> pd.DataFrame:
    """Validate a score table and return a copy with a `source` column (default "geneb").

    Checks: the required columns exist; categories are the 13 official ones; regimes are full/10shot/1shot;
    no (protocol, model, task, regime, seed, metric) appears twice; MCC values are finite and within [-1, 1].
    Raises AnalysisInputError naming `what`, the column and the first offending value.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in scores.columns]
    if missing:
        raise AnalysisInputError(f"{what}: missing columns {missing}; have {list(scores.columns)}")
    df = scores.copy()
    if "source" not in df.columns:
        df["source"] = "geneb"
    bad = sorted(set(df["category"]) - set(CATEGORIES))
    if bad:
        raise AnalysisInputError(f"{what}: unknown categories {bad}; expected one of {list(CATEGORIES)}")
    bad = sorted(set(df["regime"]) - set(REGIMES))
    if bad:
        raise AnalysisInputError(f"{what}: unknown regimes {bad}; expected one of {list(REGIMES)}")
    key = ["protocol", "model", "task", "regime", "seed", "metric"]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        first = df.loc[dup, key].iloc[0].to_dict()
        raise AnalysisInputError(f"{what}: {int(dup.sum())} duplicated rows, e.g. {first}")
    mcc = df.loc[df["metric"] == "MCC", "value"].astype(float)
    bad_mcc = ~np.isfinite(mcc) | (mcc < -1 - 1e-9) | (mcc > 1 + 1e-9)
    if bad_mcc.any():
        row = df.loc[mcc.index[bad_mcc][0], list(CELL_KEYS) + ["seed", "value"]].to_dict()
        raise AnalysisInputError(f"{what}: MCC must be finite and within [-1, 1]; first bad row {row}")
    per_task = df.groupby(["task"])["category"].nunique()
    if (per_task > 1).any():
        raise AnalysisInputError(f"{what}: task {per_task.index[per_task > 1][0]!r} appears under two categories")
    return df


def load_scores(path: str) -> pd.DataFrame:
    """Read and validate a score-table parquet file (see `check_scores`)."""
    return check_scores(pd.read_parquet(path), what=str(path))


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
