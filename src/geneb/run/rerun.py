"""Rerun keys: params that stay equal from one Snakemake call to the next.

Params are rerun triggers, compared by `repr` (Snakemake's persistence): `stable_params` sorts every mapping so
that key order in a YAML file, or a dict built in a different order, never reruns a job, and
`canonical_path` gives a local path one spelling.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from geneb.core.provenance import canonical_json


def stable_params(obj: Any) -> Any:
    """`obj` with every mapping's keys sorted (recursively), sets as sorted lists, tuples as lists, numpy
    scalars as Python numbers and integral floats as ints (`200.0` -> `200`, `C: 1` and `C: 1.0` alike): the
    same value however it was written or built, so `repr` (Snakemake's params key) is equal across processes,
    key orders and number spellings. Booleans stay booleans. Raises TypeError for objects JSON
    cannot hold."""
    return _integral_floats_as_ints(json.loads(canonical_json(obj)))


def _integral_floats_as_ints(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _integral_floats_as_ints(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_integral_floats_as_ints(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


#: the config keys the report does not show (execution knobs, weight paths, the task lock's path, download limits)
REPORT_HIDDEN = ("execution", "model_weights", "slurm", "models_extra", "task_lock", "task_download")


def report_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a report shows (the report rules' params; `geneb merge`'s report): the validated
    `config` without the keys of REPORT_HIDDEN (they never change a result: the weights' content is in each
    model's settings hash, the task files' in the task's; so they must not rerun the report either), its tasks,
    models and protocols sorted (their order changes no result), every mapping sorted (`stable_params`).
    Raises KeyError when `config` has no tasks, models or protocols (a config not validated)."""
    shown = {key: value for key, value in config.items() if key not in REPORT_HIDDEN}
    for key in ("tasks", "models", "protocols"):
        shown[key] = sorted(shown[key])
    result: dict[str, Any] = stable_params(shown)
    return result


def canonical_path(path: str) -> str:
    """One spelling for a local path, so that `config/models.yaml`, `./config/models.yaml` and its absolute
    form are the same rerun key: a path inside the working directory becomes relative to it; one
    outside it keeps its form (relative or absolute), normalised (`a/../b` -> `b`, no trailing slash), so the
    same config in another run folder gives the same key. URLs and `hf:` specs are returned unchanged."""
    if "://" in path or path.startswith("hf:"):
        return path
    relative = os.path.relpath(os.path.abspath(path))
    if relative != ".." and not relative.startswith("../"):
        return relative
    return os.path.normpath(path)
