"""Aggregation: per-(protocol, model, task) probe tables -> one long-format score table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from geneb.atomic import atomic_path


def concat_tables(paths: list[str | Path], out_path: str | Path) -> pd.DataFrame:
    """Concatenate parquet tables with one schema into `out_path` (atomically); returns the table.

    Raises ValueError naming the first file whose columns or `schema_version` differ from the first file's.
    """
    if not paths:
        raise ValueError("no probe tables to aggregate")
    frames = [pd.read_parquet(p) for p in paths]
    cols, versions = list(frames[0].columns), set(frames[0]["schema_version"])
    for p, df in zip(paths, frames):
        if list(df.columns) != cols or set(df["schema_version"]) != versions:
            raise ValueError(f"{p}: columns/schema_version differ from {paths[0]} ({list(df.columns)} vs {cols})")
    table = pd.concat(frames, ignore_index=True)
    with atomic_path(out_path) as tmp:
        table.to_parquet(tmp, index=False)
    return table
