"""A model's results as a submission file for the official GENEB leaderboard (schema 1.0).

Format (the reference folder's README, "Submission file", and `submissions/*.json`): `schema_version`
"1.0", `model_id`, `harness_version`, `meta` {display, params, url, zero_shot, training_data, provenance,
submitted_by}, `results` -> regime -> paper task id -> {MCC, Acc, F1}, each the mean over seeds rounded to 4
decimals. Only `geneb-paper` results on tasks whose data and split are the paper's are written (mirrored
tasks under their paper id); `validate_submission` checks a file against the benchmark spec.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb import __version__
from geneb.analysis.compare import paper_task_map
from geneb.analysis.published import PROTOCOL
from geneb.analysis.tables import REGIMES, AnalysisInputError

SCHEMA_VERSION = "1.0"
METRICS = ("MCC", "Acc", "F1")
META_KEYS = ("display", "params", "url", "zero_shot", "training_data", "provenance", "submitted_by")


def build_submission(scores: pd.DataFrame, model: str, spec: dict[str, Any], task_meta: pd.DataFrame, *, meta: dict[str, Any],
                     exclude: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:  # fmt: skip
    """The schema-1.0 submission of `model` from a validated score table.

    scores: GENEB score table (its `geneb-paper` rows of `model` are used); spec: `benchmark_spec.json`;
    task_meta: the catalogue (maps mirrored tasks onto paper ids); meta: the `meta` block (keys META_KEYS;
    missing keys become "" / False / 0); exclude: task ids (GENEB or paper ids) left out, e.g. the tasks the
    model was trained on (contamination). Raises AnalysisInputError when the model has no comparable task, or
    when two of its tasks map onto the same paper task.
    """
    rows = scores[(scores["protocol"] == PROTOCOL) & (scores["model"] == model) & scores["metric"].isin(METRICS)]
    ok, _ = paper_task_map(task_meta)
    known = {t["id"] for t in spec["tasks"]}
    rows = rows[rows["task"].isin(ok)].copy()
    rows["paper_task"] = rows["task"].map(ok)
    rows = rows[rows["paper_task"].isin(known) & ~rows["task"].isin(exclude) & ~rows["paper_task"].isin(exclude)]
    if rows.empty:
        raise AnalysisInputError(f"model {model!r} has no {PROTOCOL} result on a task with the paper's data and split")
    clash = rows.groupby("paper_task")["task"].nunique()
    if (clash > 1).any():
        raise AnalysisInputError(f"model {model!r}: several tasks map onto paper task {clash.index[clash > 1][0]!r}")
    means = rows.groupby(["regime", "paper_task", "metric"])["value"].mean()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for regime in REGIMES:
        if regime not in means.index.get_level_values(0):
            continue
        per_task = {}
        for task in sorted(means.loc[regime].index.get_level_values(0).unique()):
            m = means.loc[(regime, task)]
            per_task[task] = {k: round(float(m[k]), 4) for k in METRICS if k in m.index and np.isfinite(m[k])}
        results[regime] = per_task
    full_meta = {"display": model, "params": 0, "url": "", "zero_shot": False, "training_data": "",
                 "provenance": f"geneb {__version__}", "submitted_by": ""}  # fmt: skip
    full_meta.update({k: v for k, v in meta.items() if k in META_KEYS and v is not None})
    full_meta["params"] = int(full_meta["params"]) if full_meta["params"] == full_meta["params"] else 0
    return {"schema_version": SCHEMA_VERSION, "model_id": model, "harness_version": f"geneb-{__version__}",
            "meta": full_meta, "results": results}  # fmt: skip


def validate_submission(sub: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Problems of a submission against schema 1.0 and the benchmark spec; [] when it is valid.

    Checks the top-level keys, schema version, meta keys and types, regimes, that every task id is in the
    spec, and that each metric is a number (MCC in [-1, 1], Acc and F1 in [0, 1]).
    """
    problems = []
    for key in ("schema_version", "model_id", "harness_version", "meta", "results"):
        if key not in sub:
            problems.append(f"missing key {key!r}")
    if problems:
        return problems
    if sub["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version is {sub['schema_version']!r}, expected {SCHEMA_VERSION!r}")
    missing = [k for k in META_KEYS if k not in sub["meta"]]
    if missing:
        problems.append(f"meta lacks {missing}")
    if not isinstance(sub["meta"].get("zero_shot"), bool):
        problems.append("meta.zero_shot must be true or false")
    if not isinstance(sub["meta"].get("params"), int):
        problems.append("meta.params must be an integer")
    known = {t["id"] for t in spec["tasks"]}
    for regime, tasks in sub["results"].items():
        if regime not in spec.get("regimes", REGIMES):
            problems.append(f"unknown regime {regime!r}")
        for task, metrics in tasks.items():
            if task not in known:
                problems.append(f"{regime}: task {task!r} is not in the benchmark spec")
            for k, v in metrics.items():
                lo = -1.0 if k == "MCC" else 0.0
                if k not in METRICS:
                    problems.append(f"{regime}/{task}: unknown metric {k!r}")
                elif not isinstance(v, (int, float)) or not lo <= v <= 1:
                    problems.append(f"{regime}/{task}: {k} = {v!r} is not a number in [{lo}, 1]")
    return problems


def write_submission(sub: dict[str, Any], path: str | Path) -> None:
    """Write `sub` as indented JSON (atomically)."""
    from geneb.atomic import write_text_atomic

    write_text_atomic(path, json.dumps(sub, indent=2, sort_keys=False) + "\n")
