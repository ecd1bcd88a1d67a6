"""Synthetic score tables and predictions with planted answers, for the analysis tests, and tiny task mirrors."""

from __future__ import annotations

import copy
import gzip
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from geneb.analysis.metadata import model_frame, with_param_count

SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"

SEEDS = (13, 17, 42)


def analysis_config(partial: dict | None = None) -> dict:
    """The `analysis:` section `partial` as the workflow sees it: validated against the config schema, which
    fills in every default (the one home of the defaults)."""
    from snakemake.utils import validate

    cfg = {"tasks": ["x"], "models": ["y"], "analysis": copy.deepcopy(partial or {})}
    validate(cfg, str(SCHEMA))
    return cfg["analysis"]


def scores_from_values(
    values: dict[tuple[str, str, str], float],
    categories: dict[str, str],
    *,
    protocol: str = "geneb-paper",
    seeds: tuple[int, ...] = SEEDS,
    noise: float = 0.0,
    rng_seed: int = 0,
) -> pd.DataFrame:
    """A score table from {(model, task, regime): MCC}: one MCC row per seed (value + zero-mean noise whose
    seed mean is exactly the planted value) plus Acc and F1 rows."""
    rng = np.random.default_rng(rng_seed)
    rows = []
    for (model, task, regime), v in values.items():
        eps = rng.normal(0, noise, len(seeds)) if noise else np.zeros(len(seeds))
        eps -= eps.mean()
        for seed, e in zip(seeds, eps):
            for metric, val in (("MCC", v + e), ("Acc", 0.5 + v / 2), ("F1", 0.5 + v / 2)):
                rows.append(
                    {
                        "schema_version": "1",
                        "protocol": protocol,
                        "model": model,
                        "task": task,
                        "category": categories[task],
                        "regime": regime,
                        "seed": seed,
                        "metric": metric,
                        "value": float(val),
                        "ci_low": np.nan,
                        "ci_high": np.nan,
                        "n_train": 100,
                        "n_test": 50,
                    }
                )
    return pd.DataFrame(rows)


def grid(
    models: list[str], tasks: list[str], fn, regimes: tuple[str, ...] = ("full",)
) -> dict[tuple[str, str, str], float]:
    """{(model, task, regime): fn(model, task, regime)} over the full grid."""
    return {(m, t, r): float(fn(m, t, r)) for m in models for t in tasks for r in regimes}


def meta(specs: dict[str, dict], param_count: str = "current") -> pd.DataFrame:
    """Model metadata frame from {model: fields} (params, architecture_family, tokenizer_type, ...), with the
    `params_used` column of the `param_count` setting (as run_analyses adds it)."""
    return with_param_count(model_frame(specs), param_count)


def predictions(
    y_true: np.ndarray, accuracy: float, seed: int, regimes: tuple[str, ...] = ("full",), seeds: tuple[int, ...] = (0,)
) -> pd.DataFrame:
    """A prediction table whose predictions equal y_true on a random `accuracy` fraction of rows (binary)."""
    rng = np.random.default_rng(seed)
    frames = []
    for regime in regimes:
        for s in seeds:
            right = rng.random(len(y_true)) < accuracy
            y_pred = np.where(right, y_true, 1 - y_true)
            frames.append(
                pd.DataFrame(
                    {
                        "regime": regime,
                        "seed": s,
                        "row": np.arange(len(y_true)),
                        "y_true": y_true,
                        "y_pred": y_pred,
                        "score": np.nan,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def write_mirror_task(root: Path, task: str, splits: Mapping[str, Sequence[tuple[str, object]]]) -> Path:
    """A task mirror folder `root` with `<task>/<split>.csv.gz` (columns sequence, label) holding the rows
    [(sequence, label)] of each split; returns `root` (what `geneb.tasks.sources.open_source` opens)."""
    (root / task).mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        with gzip.open(root / task / f"{split}.csv.gz", "wt") as f:
            f.write("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in rows))
    return root
