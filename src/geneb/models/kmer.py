"""The k-mer frequency encoder: a no-training baseline that needs no download.

Embedding of a sequence = frequencies of its overlapping k-mers over A, C, G, T (case-insensitive), a vector
of length 4^k in lexicographic k-mer order (AAA..., AAC..., ...), summing to 1. Windows containing any other
letter (N, IUPAC codes) are skipped; `n_tokens` counts the windows used. A sequence with no valid window
(shorter than k, or no k consecutive ACGT) is an error naming the row (docs/footguns.md, empty pools).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from geneb.embeddings.errors import EmptyPoolError
from geneb.models.base import EmbedResult

_CODE = np.full(256, -1, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _CODE[ord(_b)] = _i
    _CODE[ord(_b.lower())] = _i


def kmer_counts(seq: str, k: int) -> np.ndarray:
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
    """Overlapping k-mer frequency encoder (k >= 1). `embed` returns float32 (n, 4^k)."""

    k: int

    def __post_init__(self) -> None:
        if not 1 <= self.k <= 8:
            raise ValueError(f"k-mer size must be between 1 and 8 (4^k features), got {self.k}")

    def identity(self) -> dict[str, object]:
        """The encoder's definition, stored in the extraction key."""
        return {"encoder": "kmer-frequency", "k": self.k, "alphabet": "ACGT", "normalisation": "sum-to-1"}

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Frequencies float32 (n, 4^k) in input order; `desc` is unused (no progress bar: this is fast).
        Raises TypeError for a bare string and EmptyPoolError naming the row when no k-mer is valid."""
        if isinstance(sequences, str):
            raise TypeError("embed() takes a list of sequences, not one string (wrap it: [seq])")
        out = np.zeros((len(sequences), 4**self.k), dtype=np.float32)
        n_tokens = np.zeros(len(sequences), dtype=np.int32)
        for i, seq in enumerate(sequences):
            counts = kmer_counts(seq, self.k)
            total = counts.sum()
            if total == 0:
                name = rows[i] if rows is not None else i
                raise EmptyPoolError(f"row {name}: no valid {self.k}-mer (length {len(seq)}, only ACGT windows count)")
            out[i] = counts / total
            n_tokens[i] = total
        return EmbedResult(out, n_tokens, np.ones(len(sequences), np.int32), np.zeros(len(sequences), bool))


def from_settings(settings: dict, **_execution: object) -> KmerEncoder:
    """Adapter entry point (see geneb.models.adapters); execution knobs (device, batch size) do not apply."""
    return KmerEncoder(int(settings["builtin"]["k"]))
