"""k-mer Markov chain baselines: how likely a background model of plain base statistics finds a sequence.

An order-k chain gives each base the probability of following its k preceding bases, counted on a declared
background (`Background`: sequences of other tasks) with additive (Laplace) smoothing. It knows no biology beyond
k+1-mer frequencies, so a foundation model's zero-shot score is worth reporting only where it beats these chains
(DART-Eval and TraitGym compare against such baselines; docs/zeroshot.md, "Scorers").

Conventions (docs/zeroshot.md):

* a sequence's log-likelihood (natural log) is that of its bases from position k on, each given its k preceding
  bases: the first k bases are conditioned on, not scored, so an order-1 chain gives a sequence and any
  dinucleotide shuffle of it that keeps its first base the same log-likelihood;
* N (any letter other than A/C/G/T after upper-casing) is never counted or scored: every (k+1)-window holding one
  is left out, in fitting and in scoring; a paired row with no window of k+1 A/C/G/T bases is an error;
* fitting counts both strands of every background sequence (the chain is strand-symmetric), and scoring averages
  the forward and reverse-complement strands;
* variant effect score = log p(ref window) - log p(alt window): an alt the background finds less likely scores
  higher (larger = stronger predicted effect, the `RowScores` direction). Only the k+1 windows holding the variant
  differ between the two, so only those are evaluated (`variant_effects`; equal to a full recomputation);
* paired score = per-scored-base log-likelihood of `sequence_a` minus that of `sequence_b` (larger = prefers a).

Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from geneb.zeroshot.scores import markov_scorer, row_scores
from geneb.zeroshot.task import ZeroShotTask

#: additive (Laplace) smoothing: every (context, next base) pair is counted this many extra times, so a k+1-mer
#: absent from the background still has a finite probability (add-one smoothing; Jurafsky & Martin, "Speech and
#: Language Processing", section 3.5)
PSEUDOCOUNT = 1.0
#: the code of a base outside A/C/G/T (N or any other letter, or a position outside the sequence)
NO_BASE = -1
_CODES = np.full(256, NO_BASE, dtype=np.int8)
for _i, _b in enumerate("ACGT"):
    _CODES[ord(_b)] = _i
    _CODES[ord(_b.lower())] = _i  # the model-input form is upper case (geneb.tasks.validation.model_input)
_COMPLEMENT = np.array([3, 2, 1, 0], dtype=np.int8)  # A<->T, C<->G on the codes


class BackgroundLeakError(ValueError):
    """A baseline's background includes the scored task or a task its rows were built from."""


@dataclass(frozen=True)
class Background:
    """The sequences a Markov baseline is fitted on, and the tasks they come from (checked against the scored
    task: `check_background`). tasks: every task name the sequences were drawn from, including the tasks those
    were built from; sequences: the background sequences (A/C/G/T/N, any case)."""

    tasks: tuple[str, ...]
    sequences: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError("a background must declare the tasks its sequences come from (tasks is empty)")
        if not self.sequences:
            raise ValueError(f"background from tasks {list(self.tasks)} holds no sequences")


def background_from_tasks(tasks: Iterable[ZeroShotTask]) -> Background:
    """A background of every sequence column of zero-shot `tasks` (variant: `sequence`; paired: `sequence_a` and
    `sequence_b`), declaring their names and their `source_tasks`."""
    names: list[str] = []
    seqs: list[str] = []
    for task in tasks:
        names += [task.name, *task.source_tasks]
        columns = ("sequence",) if task.kind == "variant" else ("sequence_a", "sequence_b")
        for column in columns:
            seqs += task.rows[column].astype(str).tolist()
    return Background(tasks=tuple(dict.fromkeys(names)), sequences=tuple(seqs))


def check_background(task: ZeroShotTask, background: Background) -> None:
    """Raise BackgroundLeakError when `background` declares `task` itself or any of its `source_tasks`: a
    baseline fitted on the rows it scores (or on the sequences they were cut from) would be scored on its
    training data."""
    forbidden = {task.name, *task.source_tasks}
    overlap = sorted(forbidden & set(background.tasks))
    if overlap:
        raise BackgroundLeakError(
            f"zero-shot task {task.name}: the Markov background includes {overlap} (the task itself or a task "
            f"its rows were built from: {sorted(forbidden)}); fit the baseline on other tasks' sequences"
        )


@dataclass(frozen=True)
class MarkovChain:
    """A fitted order-`order` chain. log_prob: float64 (4**(order+1),), natural-log p(next | context) indexed
    by the (order+1)-mer's base-4 code (A=0, C=1, G=2, T=3, first base most significant). counts: the
    background (order+1)-mer counts (both strands), same index; pseudocount: the additive smoothing used;
    background_tasks: the declared background's tasks."""

    order: int
    log_prob: np.ndarray
    counts: np.ndarray
    pseudocount: float
    background_tasks: tuple[str, ...]

    @property
    def scorer(self) -> str:
        return markov_scorer(self.order)


def encode(sequence: str) -> np.ndarray:
    """Base codes int8 (L,): A=0, C=1, G=2, T=3 (either case), NO_BASE for any other letter."""
    return _CODES[np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)]


def reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    """The reverse complement of base codes (L,) or (n, L) along the last axis; NO_BASE stays NO_BASE."""
    flipped = codes[..., ::-1]
    return np.where(flipped >= 0, _COMPLEMENT[np.clip(flipped, 0, 3)], NO_BASE).astype(np.int8)


def _window_index(windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, valid) of windows int (..., k+1): the base-4 code of each window and whether it is all A/C/G/T."""
    valid = (windows >= 0).all(axis=-1)
    width = windows.shape[-1]
    weights = 4 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    index = (np.clip(windows, 0, 3).astype(np.int64) * weights).sum(axis=-1)
    return index, np.asarray(valid)


def _windows(codes: np.ndarray, width: int) -> np.ndarray:
    if codes.shape[-1] < width:
        return np.zeros((*codes.shape[:-1], 0, width), dtype=codes.dtype)
    return np.lib.stride_tricks.sliding_window_view(codes, width, axis=-1)


def fit_markov(background: Background, order: int, *, pseudocount: float = PSEUDOCOUNT) -> MarkovChain:
    """Fit an order-`order` chain on both strands of `background`'s sequences: p(b | context) =
    (count(context b) + pseudocount) / (count(context) + 4 * pseudocount), windows holding N left out.

    Raises ValueError for order < 0, pseudocount <= 0, or a background with no window of order+1 A/C/G/T bases.
    """
    markov_scorer(order)  # raises for a negative order
    if not pseudocount > 0:
        raise ValueError(f"a Markov chain's pseudocount must be > 0 (additive smoothing), got {pseudocount}")
    size = 4 ** (order + 1)
    counts = np.zeros(size, dtype=np.int64)
    for seq in background.sequences:
        codes = encode(seq)
        for strand in (codes, reverse_complement_codes(codes)):
            index, valid = _window_index(_windows(strand, order + 1))
            counts += np.bincount(index[valid], minlength=size)
    if counts.sum() == 0:
        raise ValueError(
            f"background from tasks {list(background.tasks)}: no window of {order + 1} A/C/G/T bases to fit an "
            f"order-{order} chain on"
        )
    by_context = counts.reshape(-1, 4).astype(np.float64) + pseudocount
    log_prob = np.log(by_context / by_context.sum(axis=1, keepdims=True)).reshape(-1)
    return MarkovChain(order, log_prob, counts, float(pseudocount), background.tasks)


def log_likelihood(chain: MarkovChain, sequence: str) -> tuple[float, int]:
    """(log-likelihood in nats, number of scored bases) of one strand of `sequence`: the sum of log p(base |
    its `order` preceding bases) over every position from `order` on whose window holds no N."""
    index, valid = _window_index(_windows(encode(sequence), chain.order + 1))
    return float(chain.log_prob[index[valid]].sum()), int(valid.sum())


def both_strands_log_likelihood(chain: MarkovChain, sequence: str) -> tuple[float, int]:
    """(mean of the forward and reverse-complement log-likelihoods, scored bases per strand)."""
    codes = encode(sequence)
    totals = []
    for strand in (codes, reverse_complement_codes(codes)):
        index, valid = _window_index(_windows(strand, chain.order + 1))
        totals.append(float(chain.log_prob[index[valid]].sum()))
    return (totals[0] + totals[1]) / 2, int(valid.sum())  # both strands score the same windows


def _check_variant_rows(task: ZeroShotTask) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """(sequences, pos, ref codes, alt codes) of a variant task, every bad row reported at once."""
    rows = task.rows
    seqs = rows["sequence"].astype(str).tolist()
    pos = rows["pos"].to_numpy(dtype=np.int64)
    ref = rows["ref"].astype(str).tolist()
    alt = rows["alt"].astype(str).tolist()
    problems = []
    for i, (seq, p, r, a) in enumerate(zip(seqs, pos, ref, alt)):
        row = int(rows.index[i])
        if not 0 <= p < len(seq):
            problems.append(f"row {row}: pos {p} outside the {len(seq)}-base window")
        elif seq[p].upper() != r.upper():
            problems.append(f"row {row}: ref {r!r} but the window has {seq[p]!r} at pos {p}")
        for what, base in (("ref", r), ("alt", a)):
            if len(base) != 1 or base.upper() not in "ACGT":
                problems.append(f"row {row}: {what} {base!r} is not one of A/C/G/T (a Markov chain scores no N)")
    if problems:
        shown = "; ".join(problems[:20]) + (f"; ... ({len(problems)} in all)" if len(problems) > 20 else "")
        raise ValueError(f"zero-shot task {task.name}: {shown}")
    return seqs, pos, np.array([_CODES[ord(r)] for r in ref]), np.array([_CODES[ord(a)] for a in alt])


def _local_segments(seqs: Sequence[str], pos: np.ndarray, order: int) -> np.ndarray:
    """int8 (n, 2*order+1): the bases from pos-order to pos+order of each sequence, NO_BASE outside it."""
    n, half = len(seqs), order
    out = np.full((n, 2 * half + 1), NO_BASE, dtype=np.int8)
    for i, (seq, p) in enumerate(zip(seqs, pos)):
        lo, hi = max(0, p - half), min(len(seq), p + half + 1)
        out[i, lo - (p - half) : hi - (p - half)] = encode(seq[lo:hi])
    return out


def _local_delta(chain: MarkovChain, segments: np.ndarray, ref: np.ndarray, alt: np.ndarray) -> np.ndarray:
    """log p(ref) - log p(alt) over the order+1 windows through the centre of each segment (n, 2*order+1)."""
    centre = chain.order
    with_ref, with_alt = segments.copy(), segments.copy()
    with_ref[:, centre], with_alt[:, centre] = ref, alt
    deltas = []
    for seg in (with_ref, with_alt):
        index, valid = _window_index(_windows(seg, chain.order + 1))  # (n, order+1) windows, all through the centre
        deltas.append(np.where(valid, chain.log_prob[index], 0.0).sum(axis=1))
    return np.asarray(deltas[0] - deltas[1], dtype=np.float64)


def variant_effects(
    chain: MarkovChain, seqs: Sequence[str], pos: np.ndarray, ref: np.ndarray, alt: np.ndarray
) -> np.ndarray:
    """Effect scores float64 (n,): log p(window with ref) - log p(window with alt), averaged over both strands.

    seqs: the reference windows; pos: int (n,) 0-based variant positions; ref, alt: base codes int (n,) (A=0 ..
    T=3). Only the order+1 windows holding the variant differ, so only they are evaluated, vectorised over rows.
    """
    segments = _local_segments(seqs, pos, chain.order)
    forward = _local_delta(chain, segments, ref, alt)
    # the reverse strand: the segment reversed and complemented, the variant's bases complemented
    reverse = _local_delta(chain, reverse_complement_codes(segments), _COMPLEMENT[ref], _COMPLEMENT[alt])
    return (forward + reverse) / 2


def markov_scores(task: ZeroShotTask, chain: MarkovChain, background: Background) -> pd.DataFrame:
    """The `RowScores` frame of scorer `markov-<order>` for `task` (variant effects or paired preferences, module
    docstring). Raises BackgroundLeakError when `background` (the one `chain` was fitted on) includes the task
    or its source tasks; ValueError naming the rows for a variant row whose pos/ref/alt is off or not A/C/G/T,
    or a paired row with no window of order+1 A/C/G/T bases."""
    check_background(task, background)
    if tuple(background.tasks) != chain.background_tasks:
        raise ValueError(
            f"zero-shot task {task.name}: chain {chain.scorer} was fitted on tasks {list(chain.background_tasks)}, "
            f"not on the declared background {list(background.tasks)}"
        )
    if task.kind == "variant":
        seqs, pos, ref, alt = _check_variant_rows(task)
        return row_scores(task, chain.scorer, variant_effects(chain, seqs, pos, ref, alt))
    per_base = {}
    empty = []
    for column in ("sequence_a", "sequence_b"):
        values = np.zeros(task.n)
        for i, seq in enumerate(task.rows[column].astype(str)):
            total, scored = both_strands_log_likelihood(chain, seq)
            if scored == 0:
                empty.append(f"row {int(task.rows.index[i])} {column}")
            values[i] = total / max(scored, 1)
        per_base[column] = values
    if empty:
        raise ValueError(
            f"zero-shot task {task.name}, scorer {chain.scorer}: no window of {chain.order + 1} A/C/G/T bases to "
            f"score in {', '.join(empty[:20])}" + (f" ... ({len(empty)} in all)" if len(empty) > 20 else "")
        )
    return row_scores(task, chain.scorer, per_base["sequence_a"] - per_base["sequence_b"])
