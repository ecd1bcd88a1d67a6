"""What one extraction job cost, measured where the model runs: the `cost_*` attributes of an embedding file.

`CostMeter` is started by `geneb.extract.step.extract_task` after the model is loaded (so the model load is
counted apart, in `seconds_model_load` / `seconds_load`) and read when every split is embedded. It runs in the
process that runs the model: the extraction job itself, the venv child (`geneb.extract.job`) or the node's model
server (`geneb.extract.server`), so the peak memory is that process's.

Peak memory: on a CUDA device `torch.cuda.max_memory_allocated` (bytes the caching allocator handed out, reset at
the start of the task, so it is this task's peak); on a CPU the process's peak resident set size,
`resource.getrusage(RUSAGE_SELF).ru_maxrss` (kibibytes on Linux, bytes on macOS; recorded in bytes). The CPU figure
cannot be reset: it is the process's peak so far, which in a model server includes the load and every task it
embedded before (an upper bound of this task's). `peak_memory_kind` names which one a file holds.

Hardware: `device_name` is the CUDA device's name (`torch.cuda.get_device_name`) or the CPU's model name
(`/proc/cpuinfo`, else the machine type), with the torch threads on a CPU, so that a cost table never mixes
two kinds of hardware under one label (`geneb.tables.cost`).
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Any

#: peak_memory_kind of a CUDA device / of a CPU (see the module docstring)
CUDA_PEAK = "cuda_max_memory_allocated"
CPU_PEAK = "process_max_rss"


def _torch() -> Any | None:
    """torch when this process has imported it already (a k-mer job never imports torch for its cost), else None."""
    return sys.modules.get("torch")


def on_cuda(device: str) -> bool:
    """Whether `device` ("cpu", "cuda", "cuda:1", "auto") runs on a CUDA device in this process."""
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return False
    return device.startswith("cuda") or device == "auto"


def cpu_name() -> str:
    """The CPU's model name (`/proc/cpuinfo` "model name", else the machine type): the batch plan's reading."""
    from geneb.extract.batch_plan import _cpu_model

    return _cpu_model()


def device_name(device: str, threads: int | None = None) -> str:
    """The hardware a job ran on, as the cost table's `hardware` column: the CUDA device's name, or
    "<CPU model> (<threads> threads)" on a CPU (threads: the torch threads the job set; None: not set)."""
    if on_cuda(device):
        torch = _torch()
        assert torch is not None
        index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
        return str(torch.cuda.get_device_name(index))
    return cpu_name() + (f" ({int(threads)} threads)" if threads else "")


def _max_rss_bytes() -> int:
    """The process's peak resident set size in bytes (ru_maxrss: KiB on Linux, bytes on macOS)."""
    rss = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return rss if sys.platform == "darwin" else rss * 1024


@dataclass
class CostMeter:
    """Counts one extraction task's work and reads its time and peak memory (module docstring).

    device: the job's device knob; threads: its torch threads (None: not set). `add` counts one split's rows:
    sequences, input bases and the tokens the model processed (all forward passes).
    """

    device: str
    threads: int | None = None
    sequences: int = 0
    bases: int = 0
    tokens: int = 0
    forward_passes: int = 1
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def __post_init__(self) -> None:
        if on_cuda(self.device):
            torch = _torch()
            assert torch is not None
            torch.cuda.reset_peak_memory_stats()

    def add(self, sequences: list[str], tokens: int, *, passes: int = 1) -> None:
        """Count one split: `sequences` (model inputs), `tokens` model tokens per pass, `passes` strands embedded
        (2 with a reverse-complement pass). Raises ValueError for a negative token count or fewer than 1 pass."""
        if tokens < 0 or passes < 1:
            raise ValueError(f"cost: tokens {tokens} and passes {passes} must be >= 0 and >= 1")
        self.sequences += len(sequences)
        self.bases += sum(len(s) for s in sequences)
        self.tokens += int(tokens) * passes
        self.forward_passes = max(self.forward_passes, passes)

    def peak_memory(self) -> tuple[int, str]:
        """(peak bytes, kind): CUDA_PEAK on a CUDA device, else CPU_PEAK (module docstring)."""
        torch = _torch()
        if torch is not None and on_cuda(self.device):
            return int(torch.cuda.max_memory_allocated()), CUDA_PEAK
        return _max_rss_bytes(), CPU_PEAK

    def attrs(self) -> dict[str, Any]:
        """The cost attributes of the embedding file (docs/data-dictionary.md, stage 2): seconds since the meter
        started (`seconds_compute`: embedding only, the load excluded), counts, peak memory and hardware."""
        seconds = time.perf_counter() - self._t0
        peak, kind = self.peak_memory()
        return {
            "seconds_compute": round(seconds, 3),
            "cost_sequences": int(self.sequences),
            "cost_bases": int(self.bases),
            "cost_tokens": int(self.tokens),
            "cost_forward_passes": int(self.forward_passes),
            "peak_memory_bytes": int(peak),
            "peak_memory_kind": kind,
            "device_name": device_name(self.device, self.threads),
            "threads": int(self.threads or 0),
        }


def model_tokens(n_tokens: Any, n_chunks: Any, identity: dict[str, Any], *, specials_pooled: bool) -> int:
    """Tokens the model processed for one split and strand: the pooled positions (`n_tokens`, int (n,)), plus the
    special tokens of every chunk (`n_chunks`, int (n,)) when they are not pooled (`identity`'s
    `special_prefix` / `special_suffix` ids; `specials_pooled`: the extraction pools them)."""
    pooled = int(sum(int(t) for t in n_tokens))
    if specials_pooled:
        return pooled
    per_chunk = len(identity.get("special_prefix") or []) + len(identity.get("special_suffix") or [])
    return pooled + per_chunk * int(sum(int(c) for c in n_chunks))
