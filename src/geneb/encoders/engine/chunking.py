"""From sequences to vectors: model-input text and chunks, mask-aware pooling and the cross-chunk pooling
of a long row.

From sequences to forward-pass chunks: the model-input text, and token ids cut to the model's maximum.

* Text: an optional nucleotide-level `length_multiple` rule trims the trailing `len % m` bases (counted per
  row in `trimmed_bases`); an optional `input_transform` (overlapping k-mers for DNABERT-1,
  lowercase for gLM2, frame-0 codons for Mistral-Codon).
* Chunks: a sequence longer than the model's true maximum is split at token level into chunks that each
  carry the special tokens, balanced in size (`chunk_bounds`: none shorter than half the body cap, so no
  1-token scrap is embedded alone); `long_policy` chunk_mean (pool across chunks), truncate (the first `cap`
  tokens; counted per row), or error.
* Batches: chunks padded into rectangular tensors with an attention mask and a pool mask.

Mask-aware pooling of per-token hidden states into one vector per sequence.

One shared helper for every model (the DGEB lesson: a pooler written without the mask averaged pads): the mask
says which positions are real (padding, and by policy special tokens, are 0). Pooling always runs in float32
(the hidden states are cast before any sum, so a bf16/fp16 forward pass never accumulates in reduced precision).

From chunk vectors to row vectors: the cross-chunk pooling of a long row (long_policy chunk_mean).

A row longer than the model's maximum is embedded as several chunks; each chunk's vector arrives with the
number of positions it pooled, in whatever order the batches ran. Mean pooling weights each chunk's mean by
its positions (so the row's vector is the mean over all its pooled positions, as if it had been embedded in
one piece), max pooling takes the elementwise maximum, cls/last keep the single chunk's vector. Sums are in
float64 and follow the arrival order, so the result does not depend on the batching beyond float32 noise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from geneb.core.errors import EmptyPoolError, LongSequenceError
from geneb.registry.spec import Extraction, InputTransform

_log = logging.getLogger(__name__)

#: bases per codon (input_transform codons)
_CODON = 3


@dataclass
class Chunk:
    """One forward-pass item: token ids with the special tokens, and which positions are pooled (1)."""

    seq_index: int
    ids: list[int]
    pool_mask: list[int]


def transform_input(seq: str, transform: InputTransform | None, *, model: str, row: int) -> str:
    """Apply the registry's `input_transform` to one model-input sequence.

    None: unchanged. {"kind": "overlapping-kmers", "k": k}: space-separated overlapping k-mers, stride 1
    ("ACGTAG", k=3 -> "ACG CGT GTA TAG"; DNABERT-1's input format, Ji et al. 2021). {"kind": "lowercase",
    "prefix": p}: the lowercase sequence (gLM2 reads nucleotides in lowercase after a strand token p; the
    encoder puts p's tokens on every chunk as special tokens, see `TokenModelEncoder._strand_ids`).
    {"kind": "codons"}: space-separated codons of frame 0 ("ATGGCTAAA" -> "ATG GCT AAA"; Mistral-Codon's
    WordLevel input); the row must be a whole number of codons, which `length_multiple: 3` ensures by
    trimming the trailing bases first (`check_registry` requires it).
    Raises ValueError for an unknown kind, a sequence shorter than k or not a whole number of codons (naming
    model and row).
    """
    if transform is None:
        return seq
    kind = transform.kind
    if kind == "overlapping-kmers":
        if transform.k is None:
            raise ValueError(f"model {model}: input_transform overlapping-kmers needs k (the k-mer length)")
        k = int(transform.k)
        if len(seq) < k:
            raise EmptyPoolError(f"model {model}, row {row}: sequence of {len(seq)} nt is shorter than k={k}")
        return " ".join(seq[i : i + k] for i in range(len(seq) - k + 1))
    if kind == "lowercase":
        return seq.lower()
    if kind == "codons":
        if len(seq) % _CODON or not seq:
            raise ValueError(
                f"model {model}, row {row}: {len(seq)} nt is not a whole number of codons; set extraction."
                "length_multiple: 3 so that the trailing bases are trimmed (and counted) first"
            )
        return " ".join(seq[i : i + _CODON] for i in range(0, len(seq), _CODON))
    raise ValueError(f"model {model}: unknown input_transform kind {kind!r}")


def model_texts(
    sequences: list[str], rows: list[int], extraction: Extraction, *, model: str
) -> tuple[list[str], np.ndarray]:
    """The tokenizer's input for each sequence -> (texts, trimmed bases (n,) int32): the `length_multiple`
    trim, then the `input_transform`. Raises EmptyPoolError for a row shorter than the length multiple."""
    multiple = extraction.length_multiple
    trimmed = np.zeros(len(sequences), np.int32)
    texts = []
    for i, seq in enumerate(sequences):
        if multiple:
            keep = len(seq) - len(seq) % int(multiple)
            if keep == 0:
                raise EmptyPoolError(
                    f"model {model}, row {rows[i]}: {len(seq)} nt is shorter than the "
                    f"model's length multiple {multiple}"
                )
            trimmed[i] = len(seq) - keep
            seq = seq[:keep]
        texts.append(transform_input(seq, extraction.input_transform, model=model, row=rows[i]))
    if multiple and trimmed.any():
        _log.info(
            "model %s: length_multiple %d: trimmed trailing bases of %d rows (max %d nt)",
            model,
            multiple,
            int((trimmed > 0).sum()),
            int(trimmed.max()),
        )
    return texts, trimmed


def make_chunk(
    seq_index: int, body: list[int], *, prefix: list[int], strand: list[int], suffix: list[int], pool_special: bool
) -> Chunk:
    """One forward-pass item: the tokenizer's prefix, the strand token (if any), `body`, the suffix; pooled
    positions are the body's, plus the tokenizer's special tokens when `pool_special` (a strand token is never
    pooled: it is the same in every row)."""
    special = 1 if pool_special else 0
    mask = [special] * len(prefix) + [0] * len(strand) + [1] * len(body) + [special] * len(suffix)
    return Chunk(seq_index, prefix + strand + list(body) + suffix, mask)


def chunk_bounds(n: int, cap: int, multiple: int | None = None) -> list[tuple[int, int]]:
    """(start, end) token spans of the chunks of a row of `n` body tokens under a body cap `cap`.

    A row that fits (n <= cap) is one chunk. A longer row is cut into ceil(n / cap) chunks of as equal a size
    as the length rule allows, never a full chunk plus a scrap (n = cap + 1 gives two halves, not [cap, 1]):
    each chunk but the last is a whole number of `multiple` tokens (1 without a rule; `cap` is one already),
    longer chunks first, and the last takes the remainder. No chunk of a multi-chunk row is shorter than
    half the cap, rounded down to the multiple."""
    if n <= cap:
        return [(0, n)]
    unit = int(multiple or 1)
    k = -(-n // cap)
    units, rest = divmod(n, unit)
    base, extra = divmod(units, k)
    sizes = [(base + 1) * unit] * extra + [base * unit] * (k - extra)
    sizes[-1] += rest
    bounds, start = [], 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    return bounds


def split_tokens(
    encoded: Sequence[Sequence[int]],
    rows: list[int],
    *,
    cap: int,
    extraction: Extraction,
    model: str,
    chunk: Callable[[int, list[int]], Chunk],
) -> tuple[list[Chunk], np.ndarray, np.ndarray]:
    """Cut each row's token ids into balanced pieces of at most `cap` body tokens (`chunk_bounds`), each made a Chunk by
    `chunk(row index, body)` -> (chunks, n_chunks (n,), truncated (n,)). Raises LongSequenceError under
    long_policy error, EmptyPoolError for a row with no token, ValueError for cls/last pooling of a
    multi-chunk row."""
    policy = extraction.long_policy
    method = extraction.pooling
    chunks: list[Chunk] = []
    n_chunks = np.zeros(len(encoded), np.int32)
    truncated = np.zeros(len(encoded), bool)
    for i, ids in enumerate(encoded):
        if not ids:
            raise EmptyPoolError(f"model {model}, row {rows[i]}: the tokenizer produced no tokens")
        pieces = [ids[a:b] for a, b in chunk_bounds(len(ids), cap, extraction.length_multiple)]
        if len(pieces) > 1:
            if policy == "error":
                raise LongSequenceError(f"model {model}, row {rows[i]}: {len(ids)} tokens > {cap} (long_policy: error)")
            if policy == "truncate":  # the first `cap` tokens: as much of the row as fits
                pieces, truncated[i] = [ids[:cap]], True
            elif method in ("cls", "last"):
                raise ValueError(
                    f"model {model}, row {rows[i]}: pooling {method!r} is undefined across "
                    f"{len(pieces)} chunks; use long_policy truncate"
                )
        for piece in pieces:
            chunks.append(chunk(i, list(piece)))
        n_chunks[i] = len(pieces)
    return chunks, n_chunks, truncated


def pad_chunks(
    batch: list[Chunk], *, pad_id: int, side: str, min_width: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rectangular (B, T) tensors for a batch: input ids (`pad_id` outside the sequence), attention mask
    (1 = real token) and pool mask (1 = pooled position), padded on `side` (right or left) to the batch's
    longest chunk (batched tokenization is always rectangular, with a mask), or to `min_width`
    when that is wider."""
    width = max(len(c.ids) for c in batch)
    if min_width is not None:
        width = max(width, int(min_width))
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(batch), width), dtype=torch.long)
    pmask = torch.zeros((len(batch), width), dtype=torch.long)
    for b, c in enumerate(batch):
        n = len(c.ids)
        sl = slice(0, n) if side == "right" else slice(width - n, width)
        ids[b, sl] = torch.tensor(c.ids, dtype=torch.long)
        attn[b, sl] = 1
        pmask[b, sl] = torch.tensor(c.pool_mask, dtype=torch.long)
    return ids, attn, pmask


_POOLINGS = ("mean", "max", "cls", "last")


def pool(hidden: torch.Tensor, mask: torch.Tensor, method: str, *, rows: list[int] | None = None) -> torch.Tensor:
    """Pool hidden states (B, T, d) over positions where mask (B, T) is nonzero -> float32 (B, d).

    method: "mean" (average of real positions), "max" (elementwise max over real positions), "cls" (the first
    real position), "last" (the last real position, index = last nonzero of the mask, so right padding is
    handled). Values at masked positions never reach the result, not even NaN/inf. Raises EmptyPoolError naming
    the row (from `rows`, else the batch index) when a mask
    row is all zero (never 0/0 = NaN), and ValueError for an unknown method or mismatched shapes.
    """
    if method not in _POOLINGS:
        raise ValueError(f"unknown pooling {method!r}; expected one of {_POOLINGS}")
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


class RowAccumulator:
    """Accumulate pooled chunk vectors into `n_rows` row vectors.

    method: the pooling ("mean", "max", "cls", "last"). The width d is taken from the first `add`. Raises
    ValueError for an unknown method.
    """

    def __init__(self, n_rows: int, method: str) -> None:
        if method not in ("mean", "max", "cls", "last"):
            raise ValueError(f"unknown pooling {method!r}")
        self.n_rows = int(n_rows)
        self.method = method
        self.acc: np.ndarray | None = None  # float64 (n_rows, d) once the first chunk arrived
        self.counts = np.zeros(self.n_rows, np.int64)

    @property
    def started(self) -> bool:
        """True once a chunk vector has been added."""
        return self.acc is not None

    def add(self, rows: np.ndarray, pooled: np.ndarray, used: np.ndarray) -> None:
        """Add k chunk vectors: rows int (k,) row index of each chunk (0 <= row < n_rows), pooled float (k, d)
        its pooled vector, used int (k,) the positions it pooled (all pooled positions for mean/max, 1 for
        cls/last). Raises ValueError when the shapes disagree with each other or with earlier chunks."""
        rows = np.asarray(rows, dtype=np.int64)
        pooled = np.asarray(pooled, dtype=np.float64)
        used = np.asarray(used, dtype=np.int64)
        if pooled.ndim != 2 or rows.shape != (pooled.shape[0],) or used.shape != rows.shape:
            raise ValueError(f"chunks: rows {rows.shape}, pooled {pooled.shape}, used {used.shape} do not match")
        if self.acc is None:
            self.acc = np.zeros((self.n_rows, pooled.shape[1]), np.float64)
            if self.method == "max":
                self.acc[:] = -np.inf
        elif pooled.shape[1] != self.acc.shape[1]:
            raise ValueError(f"chunk vectors of width {pooled.shape[1]} after width {self.acc.shape[1]}")
        if self.method == "mean":
            np.add.at(self.acc, rows, pooled * used[:, None])  # in arrival order, like a loop of +=
        elif self.method == "max":
            np.maximum.at(self.acc, rows, pooled)
        else:  # cls / last: one chunk per row (chunking refuses more)
            self.acc[rows] = pooled
        np.add.at(self.counts, rows, used)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(vectors float32 (n_rows, d), pooled positions int32 (n_rows,)). Raises ValueError before any
        `add` (the width is unknown) and when a mean-pooled row received no position."""
        if self.acc is None:
            raise ValueError("no chunk vectors were added")
        acc = self.acc
        if self.method == "mean":
            if (self.counts == 0).any():
                raise ValueError(f"row {int(np.flatnonzero(self.counts == 0)[0])} received no pooled position")
            acc = acc / self.counts[:, None]
        return acc.astype(np.float32), self.counts.astype(np.int32)
