"""Invariance checks for an encoder: a sequence's embedding must not depend on its batch mates.

Tolerances are explicit and per compute dtype: float error makes batched and single calls differ
slightly (non-associative reductions, different kernels), so an exact comparison would fail for honest
reasons, and a loose one would hide padding leaks. Defaults: float32 1e-5 (GENEB's contract, tested on
every family), bfloat16 2e-2, float16 1e-2 (their 8- and 11-bit mantissas; BEND/DGEB practice). A
tolerance of 0 demands bit-identical results; NaN never passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: absolute tolerance on pooled vectors per compute dtype
_DEFAULT_ATOL = {"float32": 1e-5, "bfloat16": 2e-2, "float16": 1e-2}


class InvarianceError(AssertionError):
    """A sequence's embedding changed with its batch (beyond the tolerance)."""


@dataclass(frozen=True)
class InvarianceReport:
    """What a check compared: max |a - b| over all rows and dimensions, the tolerance, and the verdict."""

    what: str
    max_abs_diff: float
    atol: float
    compute_dtype: str

    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.max_abs_diff) and self.max_abs_diff <= self.atol)

    def require(self) -> InvarianceReport:
        """Return self if ok, else raise InvarianceError with the numbers."""
        if not self.ok:
            raise InvarianceError(
                f"{self.what}: max |diff| {self.max_abs_diff:.3e} > atol {self.atol:.1e} "
                f"(compute dtype {self.compute_dtype})"
            )
        return self


def _atol(encoder: Any, atol: float | None) -> tuple[float, str]:
    dtype = str(getattr(encoder, "compute_dtype", "float32"))
    return (_DEFAULT_ATOL.get(dtype, _DEFAULT_ATOL["float32"]) if atol is None else float(atol)), dtype


def _diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return float("inf")
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.nan) if np.isnan(d).any() else float(d.max(initial=0.0))


def check_batch_invariance(
    encoder: Any, sequences: Sequence[str], *, batch_sizes: Sequence[int] = (1, 4), atol: float | None = None
) -> InvarianceReport:
    """Embed `sequences` at each batch size (encoder.batch_size is set, then restored) and report the largest
    difference to the first. atol None = DEFAULT_ATOL for the encoder's compute dtype."""
    tol, dtype = _atol(encoder, atol)
    saved = encoder.batch_size
    try:
        runs = []
        for bs in batch_sizes:
            encoder.batch_size = int(bs)
            runs.append(encoder.embed(list(sequences)).embeddings)
    finally:
        encoder.batch_size = saved
    worst = max(_diff(runs[0], r) for r in runs[1:]) if len(runs) > 1 else 0.0
    return InvarianceReport(f"batch sizes {list(batch_sizes)}", worst, tol, dtype)


def check_padding_invariance(
    encoder: Any, sequence: str, companions: Sequence[str], *, atol: float | None = None
) -> InvarianceReport:
    """Embed `sequence` alone and in one batch with `companions` (typically longer, so it gets padded) and
    report the difference of its vector. atol None = DEFAULT_ATOL for the encoder's compute dtype."""
    tol, dtype = _atol(encoder, atol)
    saved = encoder.batch_size
    try:
        encoder.batch_size = 1 + len(companions)
        together = encoder.embed([sequence, *companions]).embeddings[:1]
        alone = encoder.embed([sequence]).embeddings
    finally:
        encoder.batch_size = saved
    return InvarianceReport(
        f"{len(sequence)}-long sequence alone vs with {len(companions)} others", _diff(alone, together), tol, dtype
    )
