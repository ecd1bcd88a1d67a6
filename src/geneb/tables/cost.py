"""The measured cost table, `results/tables/cost.parquet`: one row per (model, task) embedding file of a run.

Read from the root attributes every extraction job writes into its HDF5 file (`geneb.extract.cost`, measured in
the process that ran the model): wall seconds of the model load apart from the embedding, sequences, input bases
and model tokens, their rates per second, peak memory, hardware, dtype and batch plan. The hardware is a column
(`hardware`): rates of two machines are never summed or averaged into one figure (`per_model` groups by it).

A file written before the cost attributes existed still gives a row (`cost_recorded` False): seconds from
`seconds_total` - `seconds_load`, sequences from the split groups' `n_rows`, tokens from their
`n_pooled_positions`; bases, peak memory and the hardware's name are missing there (NA / "unrecorded").
Columns: docs/data-dictionary.md, stage 4 ("cost.parquet").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity

#: the columns of cost.parquet, in order (docs/data-dictionary.md)
COLUMNS = (
    "model",
    "task",
    "hardware",
    "device",
    "threads",
    "dtype",
    "batch_size",
    "batch_tokens",
    "seconds_model_load",
    "seconds_load",
    "seconds_compute",
    "seconds_total",
    "model_reused",
    "sequences",
    "bases",
    "tokens",
    "forward_passes",
    "sequences_per_s",
    "bases_per_s",
    "tokens_per_s",
    "peak_memory_bytes",
    "peak_memory_kind",
    "cost_recorded",
    "settings_hash",
    "key_hash",
    "path",
)
#: hardware of a file written before the cost attributes existed
UNRECORDED = "unrecorded"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _split_sum(h5: Any, attr: str) -> int:
    """The sum of one attribute over the file's split groups (0 for a split without it)."""
    return int(sum(int(h5[g].attrs.get(attr, 0)) for g in h5 if g != "views" and hasattr(h5[g], "attrs")))


def file_row(path: str | Path) -> dict[str, Any]:
    """One cost row from an embedding file's root attributes (module docstring). Raises ValueError naming the file
    when it is not complete (no `complete` attribute) or lacks `model` / `seconds_total`."""
    import h5py

    with h5py.File(path, "r") as h5:
        a = h5.attrs
        if not bool(a.get("complete", False)) or "model" not in a or "seconds_total" not in a:
            raise ValueError(f"{path}: not a complete embedding file (no complete / model / seconds_total attribute)")
        recorded = "seconds_compute" in a
        key = json.loads(_text(a["extraction_key"])) if "extraction_key" in a else {}
        seconds_total = float(a["seconds_total"])
        compute = float(a["seconds_compute"]) if recorded else seconds_total - float(a.get("seconds_load", 0.0))
        sequences = int(a["cost_sequences"]) if recorded else _split_sum(h5, "n_rows")
        tokens = int(a["cost_tokens"]) if recorded else _split_sum(h5, "n_pooled_positions")
        bases = int(a["cost_bases"]) if recorded else None
        row = {
            "model": _text(a["model"]),
            "task": str(key.get("task", Path(path).parent.name)),
            "hardware": _text(a["device_name"]) if recorded else UNRECORDED,
            "device": _text(a.get("device", "")),
            "threads": int(a["threads"]) if recorded else None,
            "dtype": _text(a.get("compute_dtype", "")),
            "batch_size": int(a.get("batch_size", 0)),
            "batch_tokens": int(a.get("batch_tokens", 0)),
            "seconds_model_load": float(a.get("seconds_model_load", np.nan)),
            "seconds_load": float(a.get("seconds_load", np.nan)),
            "seconds_compute": compute,
            "seconds_total": seconds_total,
            "model_reused": bool(a.get("model_reused", False)),
            "sequences": sequences,
            "bases": bases,
            "tokens": tokens,
            "forward_passes": int(a["cost_forward_passes"]) if recorded else None,
            "peak_memory_bytes": int(a["peak_memory_bytes"]) if recorded else None,
            "peak_memory_kind": _text(a["peak_memory_kind"]) if recorded else UNRECORDED,
            "cost_recorded": recorded,
            "settings_hash": str(key.get("settings_hash", "")),
            "key_hash": _text(a.get("key_hash", "")),
            "path": str(path),
        }
    return row


def _rate(count: pd.Series, seconds: pd.Series) -> pd.Series:
    """count / seconds, NaN where seconds is not positive or the count is missing."""
    secs = seconds.where(seconds > 0)
    return count.astype("Float64").astype(float) / secs


def cost_table(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The cost table of `paths` (embedding files), one row each (COLUMNS), sorted by model and task. Raises
    ValueError for an incomplete file (`file_row`) and for two files of one (model, task, hardware)."""
    rows = [file_row(p) for p in paths]
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("sequences_per_s", "bases_per_s", "tokens_per_s")])
    df = df.astype({"bases": "Int64", "threads": "Int64", "forward_passes": "Int64", "peak_memory_bytes": "Int64"})
    for unit in ("sequences", "bases", "tokens"):
        df[f"{unit}_per_s"] = _rate(df[unit], df["seconds_compute"])
    dup = df.duplicated(["model", "task", "hardware"], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        raise ValueError(
            f"cost table: model {first['model']}, task {first['task']} has {int(dup.sum())} embedding files on "
            f"{first['hardware']!r}: {sorted(df[dup]['path'])}"
        )
    return df[list(COLUMNS)].sort_values(["model", "task"], kind="stable").reset_index(drop=True)


def per_model(cost: pd.DataFrame) -> pd.DataFrame:
    """Per (model, hardware): tasks, summed sequences, bases, tokens and compute seconds, their rates (sums over
    sums), the largest peak memory and the model load seconds (the largest, one load per server). Never mixes
    hardware: a model run on two machines gets two rows."""
    grouped = cost.groupby(["model", "hardware"], sort=True, observed=True)
    out = grouped.agg(
        tasks=("task", "nunique"),
        sequences=("sequences", "sum"),
        bases=("bases", lambda s: s.sum(min_count=len(s))),
        tokens=("tokens", "sum"),
        seconds_compute=("seconds_compute", "sum"),
        seconds_model_load=("seconds_model_load", "max"),
        peak_memory_bytes=("peak_memory_bytes", "max"),
    ).reset_index()
    for unit in ("sequences", "bases", "tokens"):
        out[f"{unit}_per_s"] = _rate(out[unit], out["seconds_compute"])
    return out


def write_cost_table(paths: Iterable[str | Path], out_path: str | Path) -> pd.DataFrame:
    """`cost_table(paths)` written to `out_path` (parquet, atomically with its checksum; `geneb.core.integrity`)."""
    df = cost_table(paths)
    integrity.write_parquet(df, out_path)
    return df
