"""The k-mer frequency encoder: a no-training baseline that needs no download.

Embedding of a sequence = frequencies of its overlapping k-mers over A, C, G, T (case-insensitive), a vector
of length 4^k in lexicographic k-mer order (AAA..., AAC..., ...), summing to 1. With several k (a k-mer
spectrum, e.g. k = 3..6) the per-k vectors are concatenated in the order given, each summing to 1. Windows containing any other
letter (N, IUPAC codes) are skipped; `n_tokens` counts the windows used (of the first k in a spectrum), and every
such letter is counted as an unknown token (`EmbedCounters.unknown_tokens`, the file's `n_unknown_tokens`; rows
holding one: `unknown_rows`), as a tokenizer counts the letters it maps to UNK.

A sequence with no valid window for some k (shorter than k, or no k consecutive ACGT: an all-N or mostly-N
row) gets the zero vector for that k's block and is flagged `empty` (the HDF5 `empty` dataset, counted in the
split's `n_empty_rows` attribute and logged), instead of refusing the whole task: a frequency of nothing is
no frequency, and a probe sees such rows as one point at the origin (docs/footguns.md, empty pools).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from geneb.encoders.protocol import EmbedCounters, EmbedResult, sequence_batch
from geneb.registry.spec import Extraction, ExtractionSettings

_log = logging.getLogger(__name__)

_CODE = np.full(256, -1, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _CODE[ord(_b)] = _i
    _CODE[ord(_b.lower())] = _i


def _kmer_counts(seq: str, k: int) -> np.ndarray:
    """Counts (4^k,) int64 of the overlapping ACGT k-mers of `seq` (windows with other letters skipped)."""
    codes = _CODE[np.frombuffer(seq.encode("ascii"), dtype=np.uint8)]
    if len(codes) < k:
        return np.zeros(4**k, dtype=np.int64)
    windows = sliding_window_view(codes, k)
    valid = (windows >= 0).all(axis=1)
    index = windows[valid] @ (4 ** np.arange(k - 1, -1, -1))
    return np.bincount(index, minlength=4**k)


@dataclass
class KmerEncoder:
    """Overlapping k-mer frequency encoder. `k`: one size, or a list of sizes (a spectrum), each 1..8.
    `embed` returns float32 (n, sum of 4^k). It meets the `Encoder` protocol with no token options
    (`extraction` None) and no load-time probes (`load_check_names` ()). Raises ValueError for sizes outside
    1..8 or repeated."""

    k: int | list[int]
    #: nothing is loaded, so there is nothing to probe
    load_check_names: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        sizes = [self.k] if isinstance(self.k, int) else list(self.k)
        if not sizes or any(not isinstance(k, int) or not 1 <= k <= 8 for k in sizes) or len(set(sizes)) != len(sizes):
            raise ValueError(f"k-mer sizes must be distinct integers between 1 and 8 (4^k features), got {self.k!r}")
        self.sizes = sizes
        self.extraction: Extraction | None = None  # counts of letters: no tokenizer, chunking or layer options

    def run_load_checks(self) -> tuple[str, ...]:
        """No load-time probes: returns () (`load_check_names`)."""
        return self.load_check_names

    def identity(self) -> dict[str, object]:
        """The encoder's definition, stored in the extraction key."""
        return {"encoder": "kmer-frequency", "k": self.k, "alphabet": "ACGT", "normalisation": "sum-to-1 per k"}

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Frequencies float32 (n, 4^k) in input order; `desc` is unused (no progress bar: this is fast).
        A k with no valid window in a row leaves that block zero and flags the row `empty` (module docstring).
        Raises TypeError for a bare string."""
        sequences, rows = sequence_batch(sequences, rows, model=f"kmer-{self.k}")
        widths = [4**k for k in self.sizes]
        out = np.zeros((len(sequences), sum(widths)), dtype=np.float32)
        n_tokens = np.zeros(len(sequences), dtype=np.int32)
        empty = np.zeros(len(sequences), dtype=bool)
        unknown = np.zeros(len(sequences), dtype=np.int64)
        for i, seq in enumerate(sequences):
            unknown[i] = int((_CODE[np.frombuffer(seq.encode("ascii"), dtype=np.uint8)] < 0).sum())
            start = 0
            for k, width in zip(self.sizes, widths):
                counts = _kmer_counts(seq, k)
                total = counts.sum()
                if total == 0:
                    empty[i] = True  # the block stays zero
                else:
                    out[i, start : start + width] = counts / total
                if start == 0:
                    n_tokens[i] = total  # windows of the first k
                start += width
        if empty.any():
            first = [rows[i] for i in np.flatnonzero(empty)[:5]]
            _log.warning(
                "kmer-%s: %d row(s) without a valid k-mer window get the zero vector (rows %s%s)",
                self.k,
                int(empty.sum()),
                first,
                " ..." if empty.sum() > 5 else "",
            )
        n = len(sequences)
        counters = EmbedCounters(unknown_rows=int((unknown > 0).sum()), unknown_tokens=int(unknown.sum()))
        return EmbedResult(out, n_tokens, np.ones(n, np.int32), np.zeros(n, bool), counters=counters, empty=empty)


def from_settings(settings: ExtractionSettings, **_execution: object) -> KmerEncoder:
    """Adapter entry point (see geneb.registry.families); execution knobs (device, batch size) do not apply."""
    k = settings.builtin["k"]
    return KmerEncoder(int(k) if isinstance(k, int) else [int(x) for x in k])
