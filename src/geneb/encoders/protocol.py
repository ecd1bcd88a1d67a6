"""What every encoder returns, and the contract it meets."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from geneb.registry.spec import Extraction


@dataclass(frozen=True)
class EmbedCounters:
    """What one `embed()` call counted, for the file's attributes (docs/data-dictionary.md).

    unknown_rows / unknown_tokens: rows with an unknown token, and unknown tokens (letters outside the
    model's vocabulary that reach it as UNK, or enter Enformer as N). step_downs: halvings of the batch after
    out-of-memory. fp32_retries: batches rerun in float32 after non-finite states (`nonfinite: retry_fp32`).
    Load-time checks are never counted: only the rows of the call.
    """

    unknown_rows: int = 0
    unknown_tokens: int = 0
    step_downs: int = 0
    fp32_retries: int = 0


@dataclass
class EmbedResult:
    """Pooled embeddings for n sequences, in input order.

    embeddings: float32 (n, d). n_tokens: int32 (n,) positions pooled per row (all chunks together; 0 only
    where `empty`).
    n_chunks: int32 (n,) forward-pass chunks per row (1 unless longer than the model's maximum).
    truncated: bool (n,) rows cut to the first chunk (long_policy truncate). trimmed_bases: int32 (n,)
    trailing bases dropped by a `length_multiple` rule (zeros when the model has none). counters: what
    the call counted (unknown tokens, batch step-downs, float32 retries; zeros for an encoder without them).
    empty: bool (n,) rows with nothing to pool, represented by the documented zero block (the k-mer encoders:
    no window of k consecutive A/C/G/T, e.g. an all-N row; docs/footguns.md); all False for other encoders.
    """

    embeddings: np.ndarray
    n_tokens: np.ndarray
    n_chunks: np.ndarray
    truncated: np.ndarray
    trimmed_bases: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    counters: EmbedCounters = field(default_factory=EmbedCounters)
    empty: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def __post_init__(self) -> None:
        n = len(self.n_tokens)
        if len(self.trimmed_bases) != n:
            self.trimmed_bases = np.zeros(n, np.int32)
        if len(self.empty) != n:
            self.empty = np.zeros(n, bool)


def sequence_batch(sequences: Any, rows: Any, *, model: str) -> tuple[list[str], list[int]]:
    """Check and normalise an `embed()` call's input -> (sequences, rows) as lists.

    sequences: any iterable of str (list, tuple, numpy array, pandas Series); rows: matching ids or None
    (0..n-1). Raises TypeError for a bare string or bytes (iterating it would embed single letters)
    and for an element that is not text (naming the row and its type), ValueError for a length mismatch or
    an empty batch.
    """
    if isinstance(sequences, (str, bytes, bytearray)):
        what = "string" if isinstance(sequences, str) else f"{type(sequences).__name__} object"
        raise TypeError(f"model {model}: embed() takes a list of sequences, not one {what} (wrap it: [seq])")
    if hasattr(sequences, "columns"):  # a DataFrame iterates over its column names
        raise TypeError(f"model {model}: embed() takes a list of sequences, not a table; pass its sequence column")
    seqs = list(sequences)
    ids = list(rows) if rows is not None else list(range(len(seqs)))
    if len(ids) != len(seqs):
        raise ValueError(f"model {model}: {len(seqs)} sequences but {len(ids)} row ids")
    if not seqs:
        raise ValueError(f"model {model}: nothing to embed (0 sequences)")
    for seq, row in zip(seqs, ids):
        if not isinstance(seq, str):
            raise TypeError(
                f"model {model}, row {row}: a sequence must be text (str), got {type(seq).__name__} {seq!r:.40}"
            )
    return seqs, ids


@runtime_checkable
class Encoder(Protocol):
    """What the orchestrators (geneb.extract.step, .server, .job) rely on, and all they read of an encoder.

    Every family's encoder implements it with explicit members, token-level or not, so the orchestrator reads
    attributes directly and never asks whether one exists:

    extraction: the token-level options (`Extraction`: reverse-complement trim by `length_multiple`, the
    `long_policy` a reverse-complement mode must not truncate under); None for an encoder without them (k-mer
    counts). load_check_names: the load-time probes `run_load_checks` runs, in order ((): none), recorded in
    the passed-checks record (geneb.extract.step) before they run. An encoder embeds a list of sequences
    (never a bare string) in order, one row per sequence.
    """

    extraction: Extraction | None
    load_check_names: tuple[str, ...]

    def identity(self) -> dict[str, Any]:
        """Everything that defines the embeddings beyond the registry settings (weights hash, tokenizer, ...)."""

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Embed `sequences` (model-input form, uppercase); `rows` name them in errors; `desc` labels the
        progress lines of a long call (geneb.encoders.engine.batching)."""

    def run_load_checks(self) -> tuple[str, ...]:
        """Run the load-time probes (`load_check_names`) and return their names; raises the first that fails.
        An encoder without probes returns () and does nothing."""


#: the load-time probes `TokenModelEncoder.run_load_checks` runs, in order
LOAD_CHECKS = ("vocabulary", "max_length", "padding_invariance")

_DEFERRED = contextvars.ContextVar("geneb_load_checks_deferred", default=False)


@contextlib.contextmanager
def deferred_load_checks() -> Iterator[None]:
    """Encoders built inside this block skip their load-time probes; the caller runs them
    (`run_load_checks`) or takes them from a passed-checks record of the same model and settings
    (geneb.extract.step). The adapters' constructors stay unchanged."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def checks_deferred() -> bool:
    """Whether an encoder being built now leaves its load-time probes to the caller (`deferred_load_checks`)."""
    return _DEFERRED.get()
