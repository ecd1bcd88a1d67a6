"""Synthetic score tables and predictions with planted answers, for the analysis tests, and tiny task mirrors."""

from __future__ import annotations

import copy
import gzip
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from geneb.analysis.inputs import model_frame, with_param_count

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


#: the planted run of `flagged_board_run`: a > b > c on the clean tasks, l1 (Virus/Phage) fully leaked (its test
#: split is a copy of train: a memorised it), v1 (the only Coding/NC task) failed in a partial run
FLAGGED_CATS = {"p1": "Promoters", "e1": "Enhancers", "s1": "Splice Sites", "l1": "Virus/Phage"}
FLAGGED_VALUES = {
    "a": {"p1": 0.5, "e1": 0.4, "s1": 0.3, "l1": 0.99},
    "b": {"p1": 0.6, "e1": 0.5, "s1": 0.5, "l1": 0.2},
    "c": {"p1": 0.1, "e1": 0.1, "s1": 0.1, "l1": 0.1},
}
FAILED_TASK = {"v1": {"category": "Coding/NC", "error": "prepare_task v1: CUDA out of memory\n  traceback line 2"}}


def flagged_board_run(root: Path, leaderboard: dict | None = None, coverage_notes: dict | None = None) -> Path:
    """The tables folder of a planted partial run (FLAGGED_*) whose leaderboard rule ran (`leaderboard_step`,
    its clean leaderboard included) with a task audit that flags l1 (leaked fraction 1.0), the config's
    `leaderboard:` section `leaderboard` (validated, defaults filled) and the protocols' `coverage_notes`."""
    import yaml
    from snakemake.utils import validate

    from geneb.analysis.registry import LEADERBOARD_TABLES
    from geneb.analysis.steps import leaderboard_step
    from geneb.tables.scores import FAILED_TASKS_ATTR

    t = root / "results" / "tables"
    t.mkdir(parents=True, exist_ok=True)
    values = {(m, task, "full"): v for m, row in FLAGGED_VALUES.items() for task, v in row.items()}
    scores = scores_from_values(values, FLAGGED_CATS)
    scores["value_clean"] = np.where(scores["task"] == "l1", np.nan, scores["value"] - 0.02)
    scores["ci_low_clean"] = scores["ci_high_clean"] = np.nan
    scores["n_test_clean"] = np.where(scores["task"] == "l1", 0, 48)
    scores.attrs[FAILED_TASKS_ATTR] = FAILED_TASK
    scores.to_parquet(t / "scores.parquet", index=False)
    audit = pd.DataFrame(
        [
            {
                "task": task,
                "category": cat,
                "protocol": "geneb-paper",
                "n_train": 100,
                "n_test": 50,
                "shortcut_best_feature": "gc",
                "shortcut_best_auroc": 0.55,
                "shortcut_flag": "pass",
                "shortcut_best_model_full": None,
                "shortcut_best_mcc_full": np.nan,
                "leak_flag": "fail" if task == "l1" else "pass",
                "overlap_exact": 50 if task == "l1" else 0,
                "overlap_case_only": 0,
                "overlap_reverse_complement": 0,
                "overlap_homolog": 50 if task == "l1" else 0,
                "leaked_fraction": 1.0 if task == "l1" else 0.0,
            }
            for task, cat in FLAGGED_CATS.items()
        ]
    )
    audit.to_parquet(t / "task_audit.parquet", index=False)
    (root / "config").mkdir(exist_ok=True)
    reg = {
        "schema_version": 1,
        "models": {
            m: {
                "display": m,
                "params": 1000,
                "architecture_family": "kmer",
                "tokenizer_type": "k-mer",
                "pretraining_domain": "none",
                "family": "kmer",
                "source": {"kind": "builtin"},
                "builtin": {"k": 3},
                "license": "none",
            }
            for m in FLAGGED_VALUES
        },
    }
    (root / "config" / "models.yaml").write_text(yaml.safe_dump(reg))
    tasks = [
        {"task": t_, "task_set": "mirror", "category": c, "label": t_, "organism": "x", "taxon_group": "human"}
        for t_, c in {**FLAGGED_CATS, "v1": "Coding/NC"}.items()
    ]
    pd.DataFrame(tasks).to_csv(root / "config" / "tasks.tsv", sep="\t", index=False)
    cfg = {"tasks": ["x"], "models": ["y"], "leaderboard": dict(leaderboard or {})}
    validate(cfg, str(SCHEMA))
    names = (*LEADERBOARD_TABLES, "leaderboard_clean")
    leaderboard_step(
        scores=str(t / "scores.parquet"),
        models_yaml=str(root / "config" / "models.yaml"),
        tasks_tsv=str(root / "config" / "tasks.tsv"),
        analysis_config=analysis_config(),
        view="geneb",
        outputs={n: str(t / f"{n}.parquet") for n in names},
        leaderboard_config=cfg["leaderboard"],
        task_audit=str(t / "task_audit.parquet"),
        coverage_notes=coverage_notes,
    )
    return t
