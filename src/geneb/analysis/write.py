"""Write the analysis tables and the summary of one run (what `run.run_analyses` returns) into a tables folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.tables.scores import with_code_revision


def jsonable(obj: Any) -> Any:
    """`obj` with numpy scalars as Python numbers, non-finite floats as None and keys as strings (JSON-able)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def write_tables(
    tables: dict[str, pd.DataFrame], summary: dict[str, Any] | None, outdir: str | Path, names: tuple[str, ...]
) -> list[Path]:
    """Write `tables[name]` to `outdir/{name}.parquet` for each of `names` (an absent table is written
    empty), and, when given, the summary to `outdir/analysis_summary.json`.

    Every table gets `settings_hash` and `input_sha256` columns (provenance; from the summary, else kept as
    the table has them) and the running code's `geneb_commit` and `geneb_dirty` (`geneb.tables.scores.with_code_revision`).
    Returns the written paths.
    """
    outdir = Path(outdir)
    paths = []
    for name in names:
        df = tables.get(name, pd.DataFrame()).copy()
        if summary is not None:
            df["settings_hash"] = summary["settings_hash"]
            df["input_sha256"] = summary["input_sha256"]
        df = with_code_revision(df)
        path = outdir / f"{name}.parquet"
        integrity.write_parquet(df, path)
        paths.append(path)
    if summary is not None:
        path = outdir / "analysis_summary.json"
        write_text_atomic(path, json.dumps(jsonable(summary), indent=2, sort_keys=True) + "\n")
        paths.append(path)
    return paths
