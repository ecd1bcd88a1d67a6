"""What the workflow's jobs ask of a scheduler: portable resources (a GPU count, memory, run time).

Rules declare portable resources only; site specifics (partition, account, GPU model, `gres` strings) live in
`profiles/`. The functions here are pure, so common.smk wraps them in one-line input functions and tests call
them directly (docs/hpc.md). Resources are never rerun triggers: changing the device, a memory size or the
retry count reruns nothing (rerun keys: `geneb.run.rerun`).
"""

from __future__ import annotations

import math

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
