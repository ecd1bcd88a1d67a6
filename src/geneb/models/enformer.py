"""Enformer (supervised sequence-to-function CNN + transformer) through the enformer-pytorch package.

Facts used (registry.yaml loader notes; enformer-pytorch README): `from_pretrained(hub_id)` loads the model;
`model(seq, return_embeddings=True)` takes a (B, 196608) tensor of base indices (A=0, C=1, G=2, T=3, N=4,
N = all-zero one-hot) and returns (predictions, embeddings (B, 896, 3072)); the 896 output bins of 128 bp
cover the central 114,688 bp of the window (Avsec et al. 2021: 320 bins are cropped on each side).

GENEB's policy: each sequence is centred in an all-N window; the pooled vector is the mean (or max) over the
output bins that overlap the sequence, so N padding is never averaged in (the paper's reference averaged
all 896 bins of a prefix-aligned, N-padded window). A sequence longer than the window is chunked into
window-length pieces (long_policy chunk_mean) or cut to the first (truncate); `n_tokens` counts pooled bins.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from geneb.embeddings.batching import StepDownRunner, plan_batches
from geneb.embeddings.errors import LongSequenceError, NonFiniteEmbeddingError
from geneb.embeddings.pooling import pool
from geneb.models.base import EmbedResult, sequence_batch
from geneb.models.guards import check_pooled_width
from geneb.models.tokenmodel import _progress, init_execution

log = logging.getLogger(__name__)

WINDOW_BP = 196_608
N_BINS = 896
BIN_BP = 128
WIDTH = 3072
_INDEX = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _INDEX[ord(_b)] = _i


def window_and_bins(length: int, *, window: int = WINDOW_BP, n_bins: int = N_BINS, bin_bp: int = BIN_BP) -> tuple[int, np.ndarray]:
    """Where a sequence of `length` bp sits when centred in the window, and which output bins it overlaps.

    Returns (start offset in the window, bool mask (n_bins,)). The output bins cover the central
    n_bins * bin_bp bases. Raises ValueError for length < 1 or > window. At least one bin is always marked
    (the one nearest the centre for a sequence shorter than a bin)."""
    if not 1 <= length <= window:
        raise ValueError(f"sequence length {length} outside 1..{window}")
    start = (window - length) // 2
    first = (window - n_bins * bin_bp) // 2
    lo, hi = start - first, start + length - first  # sequence span in output-bin coordinates (bp)
    edges = np.arange(n_bins) * bin_bp
    mask = (edges + bin_bp > lo) & (edges < hi)
    if not mask.any():
        mask[min(max((lo + hi) // 2 // bin_bp, 0), n_bins - 1)] = True
    return start, mask


class EnformerEncoder:
    """See the module docstring. settings: resolved extraction settings (source hub id + revision, or a
    local folder); device/batch_size/progress: execution knobs."""

    def __init__(self, settings: dict[str, Any], *, device: str = "cpu", batch_size: int = 2, progress: bool = True) -> None:
        init_execution(self, settings, device=device, batch_size=batch_size, progress=progress)
        if self.extraction.get("pooling", "mean") not in ("mean", "max"):
            raise ValueError(f"model {self.model_id}: Enformer embeddings are per bin; pooling must be mean or max")
        load = self.settings.get("load") or {}
        self.window = int(load.get("window_bp", WINDOW_BP))
        src = settings["source"]
        where = src.get("path") if src["kind"] == "local" else src.get("hub_id")
        kwargs = {"revision": src["revision"]} if src["kind"] == "hub" else {}
        from enformer_pytorch import from_pretrained

        self.model = from_pretrained(where, **kwargs).eval().to(self.device)
        self.where = where

    def identity(self) -> dict[str, Any]:
        """What defines these embeddings beyond the registry settings."""
        return {"adapter": type(self).__name__, "package": "enformer-pytorch", "name_or_path": self.where,
                "window_bp": self.window, "bins": N_BINS, "bin_bp": BIN_BP,
                "padding": "sequence centred in an all-N window; pooled over the output bins it overlaps",
                "compute_dtype": "float32"}  # fmt: skip

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Pooled bin embeddings float32 (n, 3072) in input order; n_tokens = bins pooled per row."""
        sequences, rows = sequence_batch(sequences, rows, model=self.model_id)
        policy = self.extraction.get("long_policy", "chunk_mean")
        items: list[tuple[int, str]] = []
        n_chunks = np.zeros(len(sequences), np.int32)
        truncated = np.zeros(len(sequences), bool)
        for i, seq in enumerate(sequences):
            pieces = [seq[s : s + self.window] for s in range(0, len(seq), self.window)] or [seq]
            if len(pieces) > 1 and policy == "error":
                raise LongSequenceError(f"model {self.model_id}, row {rows[i]}: {len(seq)} bp > window {self.window}")
            if len(pieces) > 1 and policy == "truncate":
                pieces, truncated[i] = pieces[:1], True
            items.extend((i, p) for p in pieces)
            n_chunks[i] = len(pieces)
        acc = np.zeros((len(sequences), WIDTH), np.float64)
        method = self.extraction.get("pooling", "mean")
        if method == "max":
            acc[:] = -np.inf
        counts = np.zeros(len(sequences), np.int64)
        bar = _progress(len(items), desc or self.model_id, enabled=self.progress)

        def run(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.full((len(idx), self.window), 4, dtype=torch.long)
            mask = torch.zeros((len(idx), N_BINS), dtype=torch.long)
            for b, j in enumerate(idx):
                text = items[j][1]
                start, bins = window_and_bins(len(text), window=self.window)
                x[b, start : start + len(text)] = torch.from_numpy(_INDEX[np.frombuffer(text.encode("ascii"), np.uint8)])
                mask[b] = torch.from_numpy(bins.astype(np.int64))
            with torch.inference_mode():
                _, emb = self.model(x.to(self.device), return_embeddings=True)
            names = [rows[items[j][0]] for j in idx]
            if not torch.isfinite(emb).all():
                bad = [names[b] for b in torch.nonzero(~torch.isfinite(emb).all(dim=-1).all(dim=-1)).flatten().tolist()]
                raise NonFiniteEmbeddingError(f"model {self.model_id}: non-finite embeddings for row {bad[0]}", rows=bad)
            return pool(emb, mask.to(emb.device), method, rows=names).cpu(), mask.sum(dim=1)

        def done(idx: list[int], result: tuple[torch.Tensor, torch.Tensor]) -> None:
            pooled, nbins = result
            check_pooled_width(int(pooled.shape[1]), model=self.model_id, hidden_size=WIDTH, vocab_size=None,
                               expected=self.extraction.get("embedding_dim"))  # fmt: skip
            for j, v, n in zip(idx, pooled.numpy().astype(np.float64), nbins.numpy()):
                i = items[j][0]
                acc[i] = acc[i] + v * n if method == "mean" else np.maximum(acc[i], v)
                counts[i] += int(n)
            bar.update(len(idx))

        runner = StepDownRunner(run, what=f"model {self.model_id}")
        try:
            runner.run(plan_batches([1] * len(items), self.batch_size), done)
        finally:
            bar.close()
        out = acc / counts[:, None] if method == "mean" else acc
        return EmbedResult(out.astype(np.float32), counts.astype(np.int32), n_chunks, truncated)


def from_settings(settings: dict[str, Any], **kwargs: Any) -> EnformerEncoder:
    """Adapter entry point of family `enformer`."""
    return EnformerEncoder(settings, **kwargs)
