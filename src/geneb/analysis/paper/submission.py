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
from geneb.analysis.paper.compare import paper_task_map
from geneb.analysis.paper.published import PROTOCOL
from geneb.tables.scores import REGIMES, AnalysisInputError

SUBMISSION_SCHEMA_VERSION = "1.0"
METRICS = ("MCC", "Acc", "F1")
META_KEYS = ("display", "params", "url", "zero_shot", "training_data", "provenance", "submitted_by")


def build_submission(
    scores: pd.DataFrame,
    model: str,
    spec: dict[str, Any],
    task_meta: pd.DataFrame,
    *,
    meta: dict[str, Any],
    exclude: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """The schema-1.0 submission of `model` from a validated score table.

    scores: GENEB score table (its `geneb-paper` rows of `model` are used); spec: `benchmark_spec.json`;
    task_meta: the catalogue (maps mirrored tasks onto paper ids); meta: the `meta` block (keys META_KEYS;
    missing keys become "" / False / 0); exclude: task ids (GENEB or paper ids) left out with every task of
    the same data (the catalogue's `geneb_task_id` group), e.g. the tasks the model was trained on
    (contamination). Metric values are written unrounded. Raises AnalysisInputError when the model has no comparable task, or
    when two of its tasks map onto the same paper task.
    """
    rows = scores[(scores["protocol"] == PROTOCOL) & (scores["model"] == model) & scores["metric"].isin(METRICS)]
    ok, _ = paper_task_map(task_meta)
    known = {t["id"] for t in spec["tasks"]}
    rows = rows[rows["task"].isin(ok)].copy()
    rows["paper_task"] = rows["task"].map(ok)
    # an excluded task takes every task with the same data with it (mirror <-> paper id), as in contamination
    group = {t: g for t, g in task_meta["geneb_task_id"].items() if g} if "geneb_task_id" in task_meta.columns else {}
    dropped = {group.get(t, t) for t in exclude}
    rows = rows[
        rows["paper_task"].isin(known)
        & ~rows["task"].map(lambda t: group.get(t, t)).isin(dropped)
        & ~rows["paper_task"].isin(dropped)
    ]
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
            per_task[task] = {
                k: float(m[k]) for k in METRICS if k in m.index and np.isfinite(m[k])
            }  # unrounded, as most official files
        results[regime] = per_task
    full_meta: dict[str, Any] = {
        "display": model,
        "params": 0,
        "url": "",
        "zero_shot": False,
        "training_data": "",
        "provenance": f"geneb {__version__}",
        "submitted_by": "",
    }
    full_meta.update({k: v for k, v in meta.items() if k in META_KEYS and v is not None})
    full_meta["params"] = int(full_meta["params"]) if full_meta["params"] == full_meta["params"] else 0
    return {
        "schema_version": SUBMISSION_SCHEMA_VERSION,
        "model_id": model,
        "harness_version": f"geneb-{__version__}",
        "meta": full_meta,
        "results": results,
    }


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def validate_submission(sub: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Problems of a submission against schema 1.0 and the benchmark spec; [] when it is valid.

    Checks the top-level keys (no others), schema version, `model_id` and `harness_version` as text, meta keys
    and types (`zero_shot` a boolean, `params` a non-negative integer, the text fields text), regimes, that
    every task id is in the spec and has an MCC, and that each metric is a number, not a boolean (MCC in
    [-1, 1], Acc and F1 in [0, 1]). Never raises on a malformed document: every problem is listed.
    """
    if not isinstance(sub, dict):
        return [f"a submission is a JSON object, not {type(sub).__name__}"]
    problems = []
    top = ("schema_version", "model_id", "harness_version", "meta", "results")
    for key in top:
        if key not in sub:
            problems.append(f"missing key {key!r}")
    problems += [f"unknown key {k!r}" for k in sub if k not in top]
    if problems:
        return problems
    if sub["schema_version"] != SUBMISSION_SCHEMA_VERSION:
        problems.append(f"schema_version is {sub['schema_version']!r}, expected {SUBMISSION_SCHEMA_VERSION!r}")
    for key in ("model_id", "harness_version"):
        if not isinstance(sub[key], str) or not sub[key]:
            problems.append(f"{key} must be non-empty text, got {sub[key]!r}")
    meta = sub["meta"]
    if not isinstance(meta, dict):
        return problems + ["meta must be an object"]
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        problems.append(f"meta lacks {missing}")
    if not isinstance(meta.get("zero_shot"), bool):
        problems.append("meta.zero_shot must be true or false")
    params = meta.get("params")
    if not isinstance(params, int) or isinstance(params, bool) or params < 0:
        problems.append(f"meta.params must be a non-negative integer, got {params!r}")
    for key in META_KEYS:
        if key not in ("zero_shot", "params") and key in meta and not isinstance(meta[key], str):
            problems.append(f"meta.{key} must be text, got {meta[key]!r}")
    results = sub["results"]
    if not isinstance(results, dict) or not results:
        return problems + [f"results must be a non-empty object of regimes, got {results!r:.60}"]
    known = {t["id"] for t in spec["tasks"]}
    for regime, tasks in results.items():
        if regime not in spec.get("regimes", REGIMES):
            problems.append(f"unknown regime {regime!r}")
        if not isinstance(tasks, dict) or not tasks:
            problems.append(f"{regime}: no tasks")
            continue
        for task, metrics in tasks.items():
            if task not in known:
                problems.append(f"{regime}: task {task!r} is not in the benchmark spec")
            if not isinstance(metrics, dict) or "MCC" not in metrics:
                problems.append(f"{regime}/{task}: no MCC")
                continue
            for k, v in metrics.items():
                lo = -1.0 if k == "MCC" else 0.0
                if k not in METRICS:
                    problems.append(f"{regime}/{task}: unknown metric {k!r}")
                elif not _is_number(v) or not lo <= v <= 1:
                    problems.append(f"{regime}/{task}: {k} = {v!r} is not a number in [{lo}, 1]")
    return problems


def write_submission(sub: dict[str, Any], path: str | Path) -> None:
    """Write `sub` as indented JSON (atomically)."""
    from geneb.core.integrity import write_text_atomic

    write_text_atomic(path, json.dumps(sub, indent=2, sort_keys=False) + "\n")
