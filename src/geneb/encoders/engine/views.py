"""More than one vector per forward pass: per-base states at positions, and every requested (layer, pooling)
view from one pass per chunk.

Per-token states at one base of each row: the mean hidden state of the tokens that hold that base.

The pooled vector of `TokenModelEncoder.embed` summarises a whole window; a variant-effect score at the variant's
position (BEND's embedding distance, Marin et al. 2024, ICLR: cosine distance of the ref and alt states at the
variant) needs the states of the token(s) covering one base instead. Which tokens cover base `pos`:

* a tokenizer that gives character offsets (every fast Hugging Face tokenizer, the folder tokenizers): the
  tokens whose character span holds the text character(s) made from base `pos`;
* a tokenizer without offsets whose tokens spell the text (the Nucleotide Transformer's 6-mer tokenizer, a
  character tokenizer): the spans are the tokens' cumulative lengths (`_spans_from_token_texts`);
* a tokenizer without offsets or token texts whose rows have one token per base (HyenaDNA's character
  tokenizer): token `pos`;
* the `input_transform`s map bases to text characters: overlapping k-mers (k-mer t = bases t..t+k-1, so base
  `pos` is in up to k tokens, all averaged), frame-0 codons (codon t = bases 3t..3t+2), lowercase (one to one).

The states are those of the configured layer (`hidden_states`), in one forward pass per batch, of the chunk
that holds the tokens (a row longer than the model's maximum is cut into chunks as extraction cuts it, and
the chunk holding the variant is the one run). Special tokens are never averaged in.

`NoTokenPositions` is raised when no mapping exists (a tokenizer without offsets and with multi-base tokens),
so the caller can state why instead of making a score up.

Every requested (layer, pooling) of a token model from one forward pass per chunk (`geneb.registry.spec`).

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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from geneb.core.errors import NonFiniteEmbeddingError
from geneb.encoders.engine.batching import StepDownRunner, largest_first, plan_chunks, split_progress
from geneb.encoders.engine.checks import check_token_ids, nonfinite_rows
from geneb.encoders.engine.chunking import Chunk, RowAccumulator, chunk_bounds, model_texts, pool
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.encoders.protocol import EmbedCounters, EmbedResult, sequence_batch

if TYPE_CHECKING:
    from geneb.encoders.engine.tokenmodel import TokenModelEncoder
    from geneb.registry.spec import InputTransform


class NoTokenPositions(ValueError):
    """The model's tokens cannot be placed on the bases of its input (the reason is the message)."""


def _text_to_base(text_length: int, transform: InputTransform | None) -> np.ndarray:
    """int64 (text_length,): the base each character of the tokenizer's text was made from, -1 for a separator.

    transform None or lowercase: character i is base i. overlapping-kmers (k): text "k-mer k-mer ..." with one
    space between k-mers, so character c of k-mer t = c // (k + 1) is base t + c % (k + 1) (the space: -1).
    codons: "codon codon ...", character c is base 3 (c // 4) + c % 4 (the space: -1). Raises NoTokenPositions for
    another transform kind."""
    c = np.arange(text_length, dtype=np.int64)
    if transform is None or transform.kind == "lowercase":
        return c
    if transform.kind == "overlapping-kmers":
        width = int(transform.k or 0) + 1
        base = c // width + c % width
        return np.where(c % width == width - 1, -1, base)
    if transform.kind == "codons":
        return np.where(c % 4 == 3, -1, 3 * (c // 4) + c % 4)
    raise NoTokenPositions(f"input_transform {transform.kind!r} has no base-to-token mapping")


def _spans_from_token_texts(token_texts: Sequence[str] | None, text: str) -> list[tuple[int, int]] | None:
    """Each token's (start, end) character span in `text` when the tokens' texts, joined, spell `text` exactly
    (case-insensitive: some vocabularies are upper case); None otherwise (e.g. a BPE vocabulary's word markers)."""
    if token_texts is None or "".join(token_texts).upper() != text.upper():
        return None
    spans, start = [], 0
    for token in token_texts:
        spans.append((start, start + len(token)))
        start += len(token)
    return spans


def _tokens_at_base(
    offsets: Sequence[tuple[int, int]] | None,
    n_tokens: int,
    n_text: int,
    pos: int,
    transform: InputTransform | None,
) -> list[int]:
    """Indices (into the row's tokens, no special tokens) of the tokens that hold base `pos`.

    offsets: each token's (start, end) character span in the text, or None when the tokenizer gives none; then
    only a row of one token per text character with no transform can be placed (token i = base i). Raises
    NoTokenPositions when the row cannot be placed, ValueError when no token holds the base (it was dropped)."""
    if offsets is None:
        if transform is None and n_tokens == n_text:
            return [pos]
        raise NoTokenPositions("the tokenizer gives no character offsets and its tokens are not one per base")
    bases = _text_to_base(n_text, transform)
    found = []
    for t, (start, end) in enumerate(offsets):
        span = bases[max(start, 0) : max(end, 0)]
        if len(span) and (span == pos).any():
            found.append(t)
    if not found:
        raise ValueError(f"no token holds base {pos} (the tokenizer dropped it)")
    return found


def _variant_chunk(encoder: TokenModelEncoder, index: int, body: list[int], held: list[int], row: int) -> Chunk:
    """The chunk of a row's tokens `body` that holds the tokens `held`, pooling only them."""
    start, end = next(
        (s, e) for s, e in chunk_bounds(len(body), encoder.body_cap) if s <= held[0] < e
    )  # extraction's chunk bounds (without a length rule: the variant's chunk need not be a whole multiple)
    if held[-1] >= end:
        raise ValueError(
            f"model {encoder.model_id}, row {row}: the tokens holding the variant cross a chunk boundary "
            f"({held[0]}..{held[-1]}, chunk {start}..{end})"
        )
    chunk = encoder.chunk(index, body[start:end])
    first = len(chunk.ids) - len(encoder.suffix) - (end - start)  # position of the body's first token
    mask = [0] * len(chunk.ids)
    for t in held:
        mask[first + t - start] = 1
    return Chunk(index, chunk.ids, mask)


def embed_at_positions(
    encoder: TokenModelEncoder, sequences: list[str], rows: list[int], positions: Sequence[int]
) -> np.ndarray:
    """float32 (n, d): for each row, the mean hidden state (configured layer) of the tokens holding base
    `positions[i]` (0-based, in the sequence as given). Batches follow the encoder's plan (`batch_size` /
    `batch_tokens`), so the result does not depend on them beyond float tolerance.

    Raises NoTokenPositions (the model's tokens cannot be placed on bases: module docstring; or a
    `length_multiple` trim drops the base), ValueError naming the model and row for a position outside its
    sequence, a base no token holds, or non-finite states."""
    import torch

    if len(positions) != len(sequences):
        raise ValueError(f"model {encoder.model_id}: {len(sequences)} sequences but {len(positions)} positions")
    ext = encoder.extraction
    texts, trimmed = model_texts(sequences, rows, ext, model=encoder.model_id)
    encoded = encoder._tokenize(texts)
    offsets = encoder._offsets
    chunks = []
    for i, (seq, pos, body) in enumerate(zip(sequences, positions, encoded)):
        if not 0 <= int(pos) < len(seq):
            raise ValueError(f"model {encoder.model_id}, row {rows[i]}: position {pos} outside its {len(seq)} bases")
        if int(pos) >= len(seq) - int(trimmed[i]):  # the model never reads the base (a length_multiple trim)
            raise NoTokenPositions(
                f"model {encoder.model_id}, row {rows[i]}: base {pos} is in the {int(trimmed[i])} trailing bases "
                f"its length_multiple {ext.length_multiple} trims"
            )
        spans = offsets[i] if offsets is not None else _spans_from_token_texts(encoder._token_texts(body), texts[i])
        try:
            held = _tokens_at_base(spans, len(body), len(texts[i]), int(pos), ext.input_transform)
        except NoTokenPositions as err:
            raise NoTokenPositions(f"model {encoder.model_id}: {err}") from None
        except ValueError as err:
            raise ValueError(f"model {encoder.model_id}, row {rows[i]}: {err}") from None
        chunks.append(_variant_chunk(encoder, i, list(body), held, rows[i]))
    lengths = [len(c.ids) for c in chunks]
    if encoder.hidden_size is None:
        raise ValueError(f"model {encoder.model_id}: its hidden size is unknown, so its states cannot be stored")
    out = np.zeros((len(chunks), encoder.hidden_size), np.float32)
    plan = plan_chunks(
        lengths,
        batch_size=encoder.batch_size,
        batch_tokens=encoder.batch_tokens,
        equal_length=encoder.bucket_equal_lengths,
    )
    for idx in plan:
        batch_rows = [rows[j] for j in idx]
        ids, attn, pmask = encoder.batch_tensors([chunks[j] for j in idx])
        hidden = encoder.hidden_states(ids, attn, rows=batch_rows)
        bad = nonfinite_rows(hidden, attn)
        if bad:
            raise ValueError(
                f"model {encoder.model_id}: non-finite hidden states for rows {[batch_rows[b] for b in bad]}"
            )
        with torch.inference_mode():
            out[idx] = pool(hidden, pmask.to(hidden.device), "mean", rows=batch_rows).cpu().numpy()
    return out


def _chunk_ordinals(seq_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    ordinal, total = _chunk_ordinals(rows_of)
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
