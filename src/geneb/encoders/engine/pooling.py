"""Mask-aware pooling of per-token hidden states into one vector per sequence.

One shared helper for every model (the DGEB lesson: a pooler written without the mask averaged pads): the mask
says which positions are real (padding, and by policy special tokens, are 0). Pooling always runs in float32
(the hidden states are cast before any sum, so a bf16/fp16 forward pass never accumulates in reduced precision).
"""

from __future__ import annotations

import numpy as np
import torch

from geneb.core.errors import EmptyPoolError

POOLINGS = ("mean", "max", "cls", "last")

__all__ = ["POOLINGS", "EmptyPoolError", "last_real_index", "pool"]


def pool(hidden: torch.Tensor, mask: torch.Tensor, method: str, *, rows: list[int] | None = None) -> torch.Tensor:
    """Pool hidden states (B, T, d) over positions where mask (B, T) is nonzero -> float32 (B, d).

    method: "mean" (average of real positions), "max" (elementwise max over real positions), "cls" (the first
    real position), "last" (the last real position, index = last nonzero of the mask, so right padding is
    handled). Values at masked positions never reach the result, not even NaN/inf. Raises EmptyPoolError naming
    the row (from `rows`, else the batch index) when a mask
    row is all zero (never 0/0 = NaN), and ValueError for an unknown method or mismatched shapes.
    """
    if method not in POOLINGS:
        raise ValueError(f"unknown pooling {method!r}; expected one of {POOLINGS}")
    if hidden.dim() != 3 or tuple(mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(f"hidden {tuple(hidden.shape)} and mask {tuple(mask.shape)} do not match (B, T, d)/(B, T)")
    m = mask.to(torch.bool)
    counts = m.sum(dim=1)
    if (counts == 0).any():
        b = int(torch.nonzero(counts == 0)[0, 0])
        name = rows[b] if rows is not None else b
        raise EmptyPoolError(f"row {name}: no positions left to pool (all padding or special tokens)")
    h = hidden.float()
    if method == "mean":
        # masked_fill, not a product with the mask: NaN/inf at a pad position times 0 is still NaN
        return h.masked_fill(~m.unsqueeze(-1), 0.0).sum(dim=1) / counts.unsqueeze(-1).to(h.dtype)
    if method == "max":
        return h.masked_fill(~m.unsqueeze(-1), float("-inf")).amax(dim=1)
    positions = torch.arange(m.shape[1], device=m.device).expand_as(m)
    if method == "cls":
        idx = torch.where(m, positions, m.shape[1]).amin(dim=1)
    else:
        idx = torch.where(m, positions, -1).amax(dim=1)
    return h[torch.arange(h.shape[0], device=h.device), idx]


def last_real_index(mask: np.ndarray | torch.Tensor) -> np.ndarray:
    """Index of the last real position per row of a (B, T) mask, e.g. [1,1,1,0,0] -> 2.

    Rows with no real position give -1 (pool() refuses them)."""
    m = torch.as_tensor(np.asarray(mask)).to(torch.bool)
    positions = torch.arange(m.shape[1]).expand_as(m)
    return torch.where(m, positions, -1).amax(dim=1).numpy()
