"""What a probe worker and its jobs agree on: the worker's identity (its key) and files.

A worker is keyed by the interpreter (the software environment), a fingerprint of GENEB's own source files
and the HDF5 locking mode (set before h5py is imported), so a job never runs in a process of other code or
settings. Its files are those of a model server (`geneb.core.ipc.ServerPaths`), in the same private
per-user folder on the node, under a key no model server has (the spec's `kind`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from geneb.core.provenance import stable_hash


@dataclass(frozen=True)
class WorkerSpec:
    """python: the interpreter; code: `geneb.core.ipc.code_fingerprint()`; hdf5_locking: auto |
    on | off; idle_s: seconds without a job after which the worker stops (not in the key)."""

    python: str
    code: str
    hdf5_locking: str
    idle_s: float
    kind: str = "probe-worker"

    def key(self) -> str:
        """16-hex key of the worker (everything but idle_s)."""
        return stable_hash({k: v for k, v in asdict(self).items() if k != "idle_s"}, length=16)
