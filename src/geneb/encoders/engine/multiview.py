"""Every requested (layer, pooling) of a token model from one forward pass per chunk (`geneb.registry.views`).

`embed_views` runs the encoder's own chunks and batch plan (length-sorted, largest first, the out-of-memory
step-down, the token-id, non-finite and width guards of `TokenModelEncoder`) once, asks the model for its per-layer
hidden states, and pools each requested layer with each requested pooling right after the batch's forward pass,
into one float64 accumulator (n_rows, d) per view: the batch's hidden states are dropped before the next batch, so
what a batch holds does not grow with the number of views, only the accumulators (n_rows x d x views) do.

Across the chunks of a long row: mean weights each chunk's mean by its pooled positions and max takes the
elementwise maximum (as `accumulate.RowAccumulator`); last is the last pooled position of the row's last chunk and
cls the first position (the model's prefix token) of its first chunk, whatever order the batches ran in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from geneb.core.errors import NonFiniteEmbeddingError
from geneb.encoders.engine.accumulate import RowAccumulator
from geneb.encoders.engine.batching import StepDownRunner, largest_first, plan_chunks
from geneb.encoders.engine.guards import check_token_ids, nonfinite_rows
from geneb.encoders.engine.pooling import pool
from geneb.encoders.engine.progress import split_progress
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.encoders.protocol import EmbedCounters, EmbedResult, sequence_batch

__all__ = ["chunk_ordinals", "embed_views"]


def chunk_ordinals(seq_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ordinal of each chunk within its row, 0-based, in list order; chunks of its row) for chunk row indices
    int (k,), e.g. [0, 0, 1, 0] -> ([0, 1, 0, 2], [3, 3, 1, 3])."""
    seq_index = np.asarray(seq_index, dtype=np.int64)
    ordinal = np.zeros(len(seq_index), np.int64)
    seen: dict[int, int] = {}
    for j, r in enumerate(seq_index.tolist()):
        ordinal[j] = seen.get(r, 0)
        seen[r] = ordinal[j] + 1
    total = np.array([seen[r] for r in seq_index.tolist()], np.int64)
    return ordinal, total


def _pool_views(
    hidden: list[torch.Tensor], attn: torch.Tensor, pmask: torch.Tensor, specs: list[tuple[int, str]], rows: list[int]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """[(pooled float32 (B, d), pooled positions (B,))] for each (slot in `hidden`, pooling) of `specs`."""
    out = []
    for layer, pooling in specs:
        h = hidden[layer]
        mask = attn if pooling == "cls" else pmask  # cls: the first real position, the prefix token itself
        method = "last" if pooling == "last" else pooling
        pooled = pool(h, mask.to(h.device), method, rows=rows)
        used = pmask.sum(dim=1) if pooling in ("mean", "max") else torch.ones(len(rows), dtype=torch.long)
        out.append((pooled.cpu(), used))
    return out


def embed_views(
    enc: TokenModelEncoder,
    sequences: list[str],
    rows: list[int] | None,
    specs: list[tuple[int, str]],
    *,
    desc: str | None = None,
) -> tuple[EmbedResult, list[np.ndarray]]:
    """Embed `sequences` with a `TokenModelEncoder` `enc` for every (layer, pooling) of `specs` (layer: absolute
    hidden-state index, 0 = embeddings; pooling: mean | max | last | cls) from one forward pass per chunk.

    Returns (the call's EmbedResult with per-row n_tokens, n_chunks, truncated, trimmed_bases and counters, and an
    empty (n, 0) `embeddings`; [float32 (n, d) per spec, in `specs` order]). Raises ValueError when cls is asked of
    a model without a prefix token (naming the model), TypeError for a bare string, and what the
    encoder's forward pass raises (ModelForwardError, NonFiniteEmbeddingError, LayerNotExposedError for a model
    that does not expose its per-layer states).
    """
    sequences, rows = sequence_batch(sequences, rows, model=enc.model_id)
    if any(p == "cls" for _, p in specs) and not enc.prefix:
        raise ValueError(f"model {enc.model_id}: pooling cls needs a prefix token, and this model puts none first")
    chunks, n_chunks, truncated, trimmed, unknown = enc.chunks_and_unknowns(sequences, rows)
    layers = sorted({layer for layer, _ in specs})
    slot = {layer: i for i, layer in enumerate(layers)}
    local = [(slot[layer], pooling) for layer, pooling in specs]
    lengths = [len(c.ids) for c in chunks]
    plan = largest_first(
        plan_chunks(
            lengths, batch_size=enc.batch_size, batch_tokens=enc.batch_tokens, equal_length=enc.bucket_equal_lengths
        ),
        lengths,
    )
    rows_of = np.array([c.seq_index for c in chunks], dtype=np.int64)
    ordinal, total = chunk_ordinals(rows_of)
    accs = [RowAccumulator(len(sequences), p) for _, p in specs]
    retries = [0]
    bar = split_progress(desc or f"model {enc.model_id}", rows_of, lengths, enabled=enc.progress)

    def run(idx: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        batch = [chunks[j] for j in idx]
        named = [rows[c.seq_index] for c in batch]
        ids, attn, pmask = enc.batch_tensors(batch)
        check_token_ids(ids[attn.bool()], enc.num_embeddings, model=enc.model_id, rows=named)
        hidden = enc.hidden_states(ids, attn, rows=named, layers=layers)
        bad = sorted({b for h in hidden for b in nonfinite_rows(h, attn)})
        if bad and enc.autocast:
            retries[0] += 1
            hidden = enc.hidden_states(ids, attn, force_fp32=True, rows=named, layers=layers)
            bad = sorted({b for h in hidden for b in nonfinite_rows(h, attn)})
        if bad:
            raise NonFiniteEmbeddingError(
                f"model {enc.model_id}: non-finite hidden states (NaN/inf) for row {named[bad[0]]}",
                rows=[named[b] for b in bad],
            )
        return _pool_views(hidden, attn, pmask, local, named)

    def done(idx: list[int], result: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        idx_arr = np.asarray(idx, dtype=np.int64)
        for (_, pooling), acc, (pooled, used) in zip(local, accs, result):
            keep = np.ones(len(idx), bool)
            if pooling == "cls":
                keep = ordinal[idx_arr] == 0
            elif pooling == "last":
                keep = ordinal[idx_arr] == total[idx_arr] - 1
            if not acc.started:
                enc.check_width(int(pooled.shape[1]))
            acc.add(rows_of[idx_arr[keep]], pooled.numpy()[keep], used.numpy()[keep])
        bar.done(idx_arr)

    free = torch.cuda.empty_cache if enc.device.startswith("cuda") else None
    runner = StepDownRunner(run, what=f"model {enc.model_id}", free=free, row_of=lambda j: rows[chunks[j].seq_index])
    try:
        runner.run(plan, done)
    finally:
        bar.close()
    vectors = [acc.result()[0] for acc in accs]
    n_tokens = _pooled_positions(chunks, len(sequences))
    counters = EmbedCounters(*unknown, runner.step_downs, retries[0])
    base = EmbedResult(np.zeros((len(sequences), 0), np.float32), n_tokens, n_chunks, truncated, trimmed, counters)
    return base, vectors


def _pooled_positions(chunks: list[Any], n_rows: int) -> np.ndarray:
    """Pooled positions per row (all chunks), int32 (n_rows,): the `n_tokens` of the registry's mean pooling."""
    out = np.zeros(n_rows, np.int64)
    for c in chunks:
        out[c.seq_index] += int(sum(c.pool_mask))
    return out.astype(np.int32)
