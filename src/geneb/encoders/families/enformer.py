"""Enformer (supervised sequence-to-function CNN + transformer) through the enformer-pytorch package.

Facts used (registry.yaml loader notes; enformer-pytorch README): `from_pretrained(hub_id)` loads the model;
`model(seq, return_embeddings=True)` takes a (B, 196608) tensor of base indices (A=0, C=1, G=2, T=3, N=4,
N = all-zero one-hot) and returns (predictions, embeddings (B, 896, 3072)); the 896 output bins of 128 bp
cover the central 114,688 bp of the window (Avsec et al. 2021: 320 bins are cropped on each side).

GENEB's policy: a sequence up to the bins' span (114,688 bp) is centred in an all-N window; the pooled vector
is the mean (or max) over the output bins that overlap the sequence, so N padding is never averaged in (the
paper's reference averaged all 896 bins of a prefix-aligned, N-padded window). A longer sequence is tiled
(`_enformer_tiles`): consecutive 114,688-bp spans, each the centre of its own window with the sequence around
it as context, so every base lies in exactly one pooled bin (window-length pieces would leave 81,920 bp of
each piece outside every bin); long_policy chunk_mean pools every tile, truncate the first, error refuses.
`n_tokens` counts pooled bins. Letters other than A, C, G, T, N enter as N (all-zero) and are counted per
split as `n_unknown_tokens`, like a tokenizer's UNK.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from geneb.core.errors import LongSequenceError, NonFiniteEmbeddingError
from geneb.encoders.engine.batching import StepDownRunner, plan_batches, split_progress
from geneb.encoders.engine.checks import check_pooled_width, refuse_unknown
from geneb.encoders.engine.chunking import pool
from geneb.encoders.engine.tokenmodel import ExecutionKnobs, init_execution
from geneb.encoders.protocol import EmbedCounters, EmbedResult, sequence_batch
from geneb.registry.spec import ExtractionSettings, SettingsLike

_log = logging.getLogger(__name__)

_WINDOW_BP = 196_608
_N_BINS = 896
_BIN_BP = 128
_WIDTH = 3072
_INDEX = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _INDEX[ord(_b)] = _i


def _enformer_tiles(
    length: int, *, window: int = _WINDOW_BP, n_bins: int = _N_BINS, bin_bp: int = _BIN_BP
) -> list[tuple[int, np.ndarray]]:
    """How a sequence of `length` bp is laid into Enformer windows: a list of (sequence position of window
    position 0 — negative where the window starts before the sequence —, bool mask (n_bins,) of the bins that
    cover this tile's own bases). Up to n_bins * bin_bp bp: one window with the sequence centred
    (`_window_and_bins`). Longer: tiles of n_bins * bin_bp bp at that stride, each centred in its window (the
    rest of the window is the neighbouring sequence, or N beyond the ends), so every base is in exactly one
    pooled bin. Raises ValueError for length < 1."""
    span = n_bins * bin_bp
    if length <= span:
        start, mask = _window_and_bins(length, window=window, n_bins=n_bins, bin_bp=bin_bp)
        return [(-start, mask)]
    flank = (window - span) // 2
    tiles = []
    for s in range(0, length, span):
        mask = np.zeros(n_bins, bool)
        mask[: -(-min(span, length - s) // bin_bp)] = True
        tiles.append((s - flank, mask))
    return tiles


def _window_and_bins(
    length: int, *, window: int = _WINDOW_BP, n_bins: int = _N_BINS, bin_bp: int = _BIN_BP
) -> tuple[int, np.ndarray]:
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


class EnformerEncoder(ExecutionKnobs):
    """See the module docstring. settings: resolved extraction settings (source hub id + revision, or a
    local folder); device/batch_size/progress: execution knobs. batch_tokens is accepted for a uniform call
    and recorded, but batches stay `batch_size` windows: every window has the same fixed length, so a token
    budget is just a row count.

    The layout (`n_bins` output bins of `bin_bp` bp, `width` channels) is read from the instance, so an adapter
    with the same window-and-bins design reuses `embed` (SPACE: `geneb.encoders.families.space.SpaceEncoder`, which also
    overrides `load_model` and `truncate_tile`, the tile long_policy truncate keeps)."""

    n_bins: int = _N_BINS
    bin_bp: int = _BIN_BP
    width: int = _WIDTH
    label: str = "Enformer"
    #: no load-time probes: the input is a fixed window of one-hot bases, with no tokenizer or padding to check
    load_check_names: tuple[str, ...] = ()

    def __init__(
        self,
        settings: SettingsLike,
        *,
        device: str = "cpu",
        batch_size: int = 2,
        batch_tokens: int | None = None,
        progress: bool = True,
    ) -> None:
        init_execution(
            self, settings, device=device, batch_size=batch_size, batch_tokens=batch_tokens, progress=progress
        )
        if self.extraction.pooling not in ("mean", "max"):
            raise ValueError(f"model {self.model_id}: {self.label} embeddings are per bin; pooling must be mean or max")
        self.load_model()

    def load_model(self) -> None:
        """Load the model (`self.model`, called as in `embed`) and set `window` and `where`; the step a
        subclass with its own checkpoint format replaces."""
        window = self.settings.load.window_bp
        self.window = int(window if window is not None else _WINDOW_BP)
        src = self.settings.source
        where = src.folder or src.hub_id
        kwargs = {"revision": src.revision} if src.kind == "hub" else {}
        from enformer_pytorch import from_pretrained

        self.model = from_pretrained(where, **kwargs).eval().to(self.device)
        self.where = where

    def run_load_checks(self) -> tuple[str, ...]:
        """No load-time probes (`load_check_names`): returns ()."""
        return self.load_check_names

    def identity(self) -> dict[str, Any]:
        """What defines these embeddings beyond the registry settings."""
        return {
            "adapter": type(self).__name__,
            "package": "enformer-pytorch",
            "name_or_path": self.where,
            "window_bp": self.window,
            "bins": _N_BINS,
            "bin_bp": _BIN_BP,
            "padding": "sequence centred in an all-N window; pooled over the output bins it overlaps",
            "compute_dtype": "float32",
        }

    def tiles(self, length: int) -> list[tuple[int, np.ndarray]]:
        """The windows of a row of `length` bp (`_enformer_tiles` with this encoder's layout)."""
        return _enformer_tiles(length, window=self.window, n_bins=self.n_bins, bin_bp=self.bin_bp)

    def truncate_tile(self, length: int) -> tuple[int, np.ndarray]:
        """The one tile long_policy truncate keeps for a row longer than the bins' span: the first (the row's
        first n_bins * bin_bp bp are pooled)."""
        return self.tiles(length)[0]

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Pooled bin embeddings float32 (n, 3072) in input order; n_tokens = bins pooled per row; the counters
        count letters outside A/C/G/T/N (entered as N) as unknown tokens."""
        sequences, rows = sequence_batch(sequences, rows, model=self.model_id)
        policy = self.extraction.long_policy
        items: list[tuple[int, int, np.ndarray]] = []  # (row index, sequence position of window start, bin mask)
        n_chunks = np.zeros(len(sequences), np.int32)
        truncated = np.zeros(len(sequences), bool)
        unknown = [sum(1 for ch in seq if ch not in "ACGTN") for seq in sequences]
        unknown_rows, unknown_letters = sum(1 for u in unknown if u), sum(unknown)
        if unknown_rows and self.extraction.unk_policy == "error":
            refuse_unknown(unknown, rows, model=self.model_id, what="letters outside A/C/G/T/N")
        if unknown_rows:
            _log.warning(
                "model %s: %d letters outside A/C/G/T/N in %d rows enter as N (first: row %s)",
                self.model_id,
                unknown_letters,
                unknown_rows,
                rows[next(i for i, u in enumerate(unknown) if u)],
            )
        for i, seq in enumerate(sequences):
            tiles = self.tiles(len(seq))
            if len(tiles) > 1 and policy == "error":
                raise LongSequenceError(
                    f"model {self.model_id}, row {rows[i]}: {len(seq)} bp > the {self.n_bins * self.bin_bp} bp "
                    "its output bins cover (long_policy: error)"
                )
            if len(tiles) > 1 and policy == "truncate":
                tiles, truncated[i] = [self.truncate_tile(len(seq))], True
            items.extend((i, ws, mask) for ws, mask in tiles)
            n_chunks[i] = len(tiles)
        acc = np.zeros((len(sequences), self.width), np.float64)
        method = self.extraction.pooling
        if method == "max":
            acc[:] = -np.inf
        counts = np.zeros(len(sequences), np.int64)
        bar = split_progress(desc or f"model {self.model_id}", [it[0] for it in items], enabled=self.progress)

        def run(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.full((len(idx), self.window), 4, dtype=torch.long)
            mask = torch.zeros((len(idx), self.n_bins), dtype=torch.long)
            for b, j in enumerate(idx):
                i, ws, bins = items[j]
                seq = sequences[i]
                lo, hi = max(ws, 0), min(ws + self.window, len(seq))  # the part of the sequence in this window
                text = seq[lo:hi]
                x[b, lo - ws : hi - ws] = torch.from_numpy(_INDEX[np.frombuffer(text.encode("ascii"), np.uint8)])
                mask[b] = torch.from_numpy(bins.astype(np.int64))
            with torch.inference_mode():
                _, emb = self.model(x.to(self.device), return_embeddings=True)
            names = [rows[items[j][0]] for j in idx]
            if not torch.isfinite(emb).all():
                bad = [names[b] for b in torch.nonzero(~torch.isfinite(emb).all(dim=-1).all(dim=-1)).flatten().tolist()]
                raise NonFiniteEmbeddingError(
                    f"model {self.model_id}: non-finite embeddings for row {bad[0]}", rows=bad
                )
            return pool(emb, mask.to(emb.device), method, rows=names).cpu(), mask.sum(dim=1)

        def done(idx: list[int], result: tuple[torch.Tensor, torch.Tensor]) -> None:
            pooled, nbins = result
            check_pooled_width(
                int(pooled.shape[1]),
                model=self.model_id,
                hidden_size=self.width,
                vocab_size=None,
                expected=self.extraction.embedding_dim,
            )
            for j, v, n in zip(idx, pooled.numpy().astype(np.float64), nbins.numpy()):
                i = items[j][0]
                acc[i] = acc[i] + v * n if method == "mean" else np.maximum(acc[i], v)
                counts[i] += int(n)
            bar.done(idx)

        runner = StepDownRunner(run, what=f"model {self.model_id}")
        try:
            runner.run(plan_batches([1] * len(items), self.batch_size), done)
        finally:
            bar.close()
        out = acc / counts[:, None] if method == "mean" else acc
        # the runner's step-downs are not counted (they never were: the file's batch_step_downs stays 0)
        counters = EmbedCounters(unknown_rows, unknown_letters)
        return EmbedResult(out.astype(np.float32), counts.astype(np.int32), n_chunks, truncated, counters=counters)


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> EnformerEncoder:
    """Adapter entry point of family `enformer`."""
    return EnformerEncoder(settings, **kwargs)
