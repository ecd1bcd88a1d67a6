"""What the workflow's jobs ask of a scheduler, and params that stay equal from one Snakemake call to the next.

Rules declare portable resources only (a GPU count, memory, run time); site specifics (partition, account,
GPU model, `gres` strings) live in `profiles/`. The functions here are pure, so common.smk wraps them in
one-line input functions and tests call them directly (docs/hpc.md).

Resources are never rerun triggers: changing the device, a memory size or the retry count reruns nothing.
Params are rerun triggers, compared by `repr` (Snakemake's persistence): `stable_params` sorts every
mapping so that key order in a YAML file, or a dict built in a different order, never reruns a job
(case B44).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from geneb.provenance import canonical_json

#: memory (MB) of an extraction job besides the model weights; k-mer jobs need no more
EXTRACTION_BASE_MEM_MB = 4000
#: host memory per model parameter (bytes): float32 weights (4) plus loading overhead
EXTRACTION_BYTES_PER_PARAM = 6
#: first-attempt run time of one (model, task) extraction job, minutes; a group job of a model's tasks asks
#: for the sum (50 tasks: 17 h), so it is sized for a paper task on a GPU (seconds to minutes) with margin
EXTRACTION_RUNTIME_MIN = 20
#: first-attempt memory and run time of one (protocol, model, task) probe job (all regimes and seeds)
PROBE_MEM_MB = 4000
PROBE_RUNTIME_MIN = 60


def stable_params(obj: Any) -> Any:
    """`obj` with every mapping's keys sorted (recursively), sets as sorted lists, tuples as lists, numpy
    scalars as Python numbers and integral floats as ints (`200.0` -> `200`, `C: 1` and `C: 1.0` alike): the
    same value however it was written or built, so `repr` (Snakemake's params key) is equal across processes,
    key orders and number spellings (case B44). Booleans stay booleans. Raises TypeError for objects JSON
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


def canonical_path(path: str) -> str:
    """One spelling for a local path, so that `config/models.yaml`, `./config/models.yaml` and its absolute
    form are the same rerun key (case B44): a path inside the working directory becomes relative to it; one
    outside it keeps its form (relative or absolute), normalised (`a/../b` -> `b`, no trailing slash), so the
    same config in another run folder gives the same key. URLs and `hf:` specs are returned unchanged."""
    if "://" in path or path.startswith("hf:"):
        return path
    relative = os.path.relpath(os.path.abspath(path))
    if relative != ".." and not relative.startswith("../"):
        return relative
    return os.path.normpath(path)


def scaled(base: int, attempt: int) -> int:
    """`base` doubled for every retry: attempt 1 -> base, 2 -> 2 x base, 3 -> 4 x base. Used for memory and
    run time, so a job killed for memory or walltime gets more on its retry (`retries:` in the profile)."""
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    return int(base) * 2 ** (attempt - 1)


def extraction_gpus(uses_torch: bool, device: str) -> int:
    """GPUs one extraction job asks for: 1 when the model runs on torch and the configured device is a GPU
    ("cuda", "cuda:N", or "auto", which uses one when present), else 0 (k-mer models, device cpu)."""
    if not uses_torch:
        return 0
    return 1 if device == "auto" or device.startswith("cuda") else 0


def extraction_mem_mb(n_params: int | float | None, attempt: int) -> int:
    """Host memory (MB) of one extraction job: a base plus room for the weights, doubled on each retry."""
    weights = math.ceil(float(n_params or 0) * EXTRACTION_BYTES_PER_PARAM / 1e6)
    return scaled(EXTRACTION_BASE_MEM_MB + weights, attempt)


def extraction_runtime(attempt: int) -> int:
    """Run time (minutes) of one extraction job, doubled on each retry (a walltime kill is retried longer)."""
    return scaled(EXTRACTION_RUNTIME_MIN, attempt)


def probe_mem_mb(attempt: int) -> int:
    """Memory (MB) of one probe job, doubled on each retry."""
    return scaled(PROBE_MEM_MB, attempt)


def probe_runtime(attempt: int) -> int:
    """Run time (minutes) of one probe job, doubled on each retry."""
    return scaled(PROBE_RUNTIME_MIN, attempt)


def set_aside_partial(
    paths: Iterable[str | os.PathLike[str]], *, hdf5_locking: str = "auto"
) -> list[tuple[Path, Path]]:
    """Move every existing file among `paths` that is not a complete embedding cache to
    `<folder>/.partial-<name>.<n>`, so Snakemake sees its output missing and schedules the extraction again.

    Why: Snakemake alone cannot tell a partial output from a complete one. 9.27 records a failed job's kept
    output (--keep-incomplete) as complete, and a copy interrupted mid-way (rsync --inplace, cp) is never
    marked at all (case B41). GENEB's own writers never leave such a file (atomic rename), and readers refuse
    it; this puts it out of the way before the DAG is built. Completeness is `geneb.embeddings.cache.is_complete_file`. hdf5_locking: as `execution.hdf5_locking`.
    Returns the (old, new) path pairs moved.
    """
    from geneb.embeddings.cache import is_complete_file

    moved = []
    for path in map(Path, paths):
        if not path.is_file() or is_complete_file(path, hdf5_locking=hdf5_locking):
            continue
        n = 0
        while (aside := path.with_name(f".partial-{path.name}.{n}")).exists():
            n += 1
        os.replace(path, aside)
        moved.append((path, aside))
    return moved
