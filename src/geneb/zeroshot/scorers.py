"""The zero-shot scorer table and the scorers besides `llr`: embedding distance for every model, and k-mer
Markov baselines with the seeded k-let shuffle.

Seeded k-let shuffle: a random sequence with exactly the k-let counts of the input.

Method: Altschul & Erikson (1985, Mol. Biol. Evol. 2:526) as an Euler path, the form of Kandel et al. (1996,
Discrete Appl. Math. 71:171) and of `ushuffle` (Jiang et al. 2008, BMC Bioinformatics 9:192). The sequence is a
path through the multigraph whose vertices are its (k-1)-mers and whose edges are its k-lets (one per
occurrence). A random spanning arborescence rooted at the last (k-1)-mer is drawn with Wilson's loop-erased random
walk (Wilson 1996, STOC), each vertex's tree edge becomes its last exit, the other exits are put in random order,
and the walk from the first (k-1)-mer that takes the exits in that order is an Euler path: it uses every edge once,
so every k-let count, the first and the last k-1 letters are kept. (By the BEST theorem each Euler path is drawn
with equal probability.) k = 1 is a plain permutation. Torch-free.

k-mer Markov chain baselines: how likely a background model of plain base statistics finds a sequence.

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
  differ between the two, so only those are evaluated (`_variant_effects`; equal to a full recomputation);
* paired score = per-scored-base log-likelihood of `sequence_a` minus that of `sequence_b` (larger = prefers a).

Torch-free.

The embedding-distance scorers: how far a variant moves a model's pooled embedding, for every model.

For each variant row the reference window (`sequence`) and the alt window (the same with `alt` at `pos`) are
embedded in one batched call (all ref windows, then all alt windows; a window several rows share is embedded
once) under the model's own pooling, layer and
reverse-complement mode (`geneb.extract.step.embed_with_rc`: rc average embeds both strands and averages them, as
extraction does). Two scores per row, larger distance = larger predicted effect (the `RowScores` direction; a
declared convention, never tuned on labels):

* `embedding-cosine`: 1 - cos(ref vector, alt vector), in [0, 2];
* `embedding-euclidean`: the Euclidean (L2) distance between the two vectors, in the embedding's units;
* `embedding-cosine-at-variant`, `embedding-euclidean-at-variant`: the same two distances between the hidden
  states (configured layer) of the tokens holding the variant's base (`geneb.encoders.engine.chunking`: a
  k-mer or BPE token holding it, all overlapping k-mers averaged), under the same reverse-complement mode (rc
  average: the mean of both strands' states, the reverse strand's at the mirrored base). Only for models with
  per-token states (the token-level encoders); any other model gets NotApplicable with the reason.

BEND scores variant effects by the cosine distance of ref and alt embeddings at the variant position (Marin et al.
2024); the pooled distances are there for every model, the at-variant ones where per-token states exist; TraitGym and GFMBench-api report such embedding distances beside the LLR
(docs/zeroshot.md, "Scorers"). A paired task needs a likelihood: an embedding distance is symmetric in a and b,
so it gives no preference and the scorer returns NotApplicable.

Torch-free (the encoder's family imports torch where it needs it).

The zero-shot scorer table: a name -> a callable `(ZeroShotModel, ZeroShotTask) -> RowScores frame |
NotApplicable | a list of them`, and `score_with`, which runs some of them on one task (the workflow's
score_zeroshot job and `geneb.evaluate_zeroshot` both do). A new scorer is one entry in `SCORERS` (or pass a
mapping). Torch-free (the scorers import what they load when they load it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from geneb.tasks.validation import model_input
from geneb.zeroshot.llr import llr_scores
from geneb.zeroshot.task import (
    EMBEDDING_COSINE,
    EMBEDDING_COSINE_AT_VARIANT,
    EMBEDDING_EUCLIDEAN,
    EMBEDDING_EUCLIDEAN_AT_VARIANT,
    EMBEDDING_SCORERS,
    LLR,
    NotApplicable,
    ZeroShotModel,
    ZeroShotTask,
    check_row_scores,
    markov_scorer,
    row_scores,
)


def klet_shuffle(sequence: str, k: int, rng: np.random.Generator) -> str:
    """A random sequence with the k-let counts of `sequence` (same length, letters, first and last k-1 letters).

    sequence: any letters (N and lower case are letters like the others); k >= 1; rng: the seeded generator every
    draw comes from (the same generator state gives the same shuffle). A sequence shorter than k + 1 letters has
    one arrangement and is returned as it is. Raises ValueError for k < 1.
    """
    if k < 1:
        raise ValueError(f"k-let shuffle needs k >= 1, got {k}")
    if k == 1:
        letters = list(sequence)
        return "".join(letters[i] for i in rng.permutation(len(letters)))
    if len(sequence) <= k:
        return sequence
    # vertex = (k-1)-mer; exits[v] = the target vertices of v's out-edges, one per k-let occurrence
    exits: dict[str, list[str]] = {}
    for i in range(len(sequence) - k + 1):
        exits.setdefault(sequence[i : i + k - 1], []).append(sequence[i + 1 : i + k])
    start, end = sequence[: k - 1], sequence[-(k - 1) :]
    # Wilson's algorithm on the out-edges: a uniform random arborescence pointing to `end`
    in_tree = {end}
    last_exit: dict[str, int] = {}
    for u in sorted(exits):
        v = u
        while v not in in_tree:
            last_exit[v] = int(rng.integers(len(exits[v])))
            v = exits[v][last_exit[v]]
        v = u
        while v not in in_tree:
            in_tree.add(v)
            v = exits[v][last_exit[v]]
    order: dict[str, list[str]] = {}
    for v in sorted(exits):
        targets = exits[v]
        if v in last_exit:
            keep = last_exit[v]
            rest = [t for j, t in enumerate(targets) if j != keep]
            order[v] = [rest[j] for j in rng.permutation(len(rest))] + [targets[keep]]
        else:  # the end vertex: every exit free
            order[v] = [targets[j] for j in rng.permutation(len(targets))]
    out = [start]
    taken = dict.fromkeys(order, 0)
    v = start
    for _ in range(len(sequence) - k + 1):
        nxt = order[v][taken[v]]
        taken[v] += 1
        out.append(nxt[-1])
        v = nxt
    return "".join(out)


#: additive (Laplace) smoothing: every (context, next base) pair is counted this many extra times, so a k+1-mer
#: absent from the background still has a finite probability (add-one smoothing; Jurafsky & Martin, "Speech and
#: Language Processing", section 3.5)
PSEUDOCOUNT = 1.0
#: the code of a base outside A/C/G/T (N or any other letter, or a position outside the sequence)
_NO_BASE = -1
_CODES = np.full(256, _NO_BASE, dtype=np.int8)
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


def _encode(sequence: str) -> np.ndarray:
    """Base codes int8 (L,): A=0, C=1, G=2, T=3 (either case), NO_BASE for any other letter."""
    return _CODES[np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)]


def _reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    """The reverse complement of base codes (L,) or (n, L) along the last axis; NO_BASE stays NO_BASE."""
    flipped = codes[..., ::-1]
    return np.where(flipped >= 0, _COMPLEMENT[np.clip(flipped, 0, 3)], _NO_BASE).astype(np.int8)


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
        codes = _encode(seq)
        for strand in (codes, _reverse_complement_codes(codes)):
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


def _both_strands_log_likelihood(chain: MarkovChain, sequence: str) -> tuple[float, int]:
    """(mean of the forward and reverse-complement log-likelihoods, scored bases per strand)."""
    codes = _encode(sequence)
    totals = []
    for strand in (codes, _reverse_complement_codes(codes)):
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
    out = np.full((n, 2 * half + 1), _NO_BASE, dtype=np.int8)
    for i, (seq, p) in enumerate(zip(seqs, pos)):
        lo, hi = max(0, p - half), min(len(seq), p + half + 1)
        out[i, lo - (p - half) : hi - (p - half)] = _encode(seq[lo:hi])
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


def _variant_effects(
    chain: MarkovChain, seqs: Sequence[str], pos: np.ndarray, ref: np.ndarray, alt: np.ndarray
) -> np.ndarray:
    """Effect scores float64 (n,): log p(window with ref) - log p(window with alt), averaged over both strands.

    seqs: the reference windows; pos: int (n,) 0-based variant positions; ref, alt: base codes int (n,) (A=0 ..
    T=3). Only the order+1 windows holding the variant differ, so only they are evaluated, vectorised over rows.
    """
    segments = _local_segments(seqs, pos, chain.order)
    forward = _local_delta(chain, segments, ref, alt)
    # the reverse strand: the segment reversed and complemented, the variant's bases complemented
    reverse = _local_delta(chain, _reverse_complement_codes(segments), _COMPLEMENT[ref], _COMPLEMENT[alt])
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
        return row_scores(task, chain.scorer, _variant_effects(chain, seqs, pos, ref, alt))
    per_base = {}
    empty = []
    for column in ("sequence_a", "sequence_b"):
        values = np.zeros(task.n)
        for i, seq in enumerate(task.rows[column].astype(str)):
            total, scored = _both_strands_log_likelihood(chain, seq)
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


#: the name the scorer dispatch knows the two distances by (geneb.zeroshot.scorers)
EMBEDDING = "embedding"
_PAIRED_REASON = "a paired task needs a likelihood; an embedding distance gives no preference"


def variant_windows(task: ZeroShotTask) -> tuple[list[str], list[str]]:
    """(ref windows, alt windows) of a variant task in model-input form (upper case), one per row in order.
    Raises ValueError naming every row whose pos lies outside its window, whose ref is not the window's base at
    pos, or whose alt is not one base different from ref."""
    rows = task.rows
    refs, alts, problems = [], [], []
    for i, (seq, pos, ref, alt) in enumerate(zip(rows["sequence"], rows["pos"], rows["ref"], rows["alt"])):
        seq, pos, ref, alt = model_input(str(seq)), int(pos), str(ref).upper(), str(alt).upper()
        row = int(rows.index[i])
        if not 0 <= pos < len(seq):
            problems.append(f"row {row}: pos {pos} outside the {len(seq)}-base window")
            continue
        if seq[pos] != ref:
            problems.append(f"row {row}: ref {ref!r} but the window has {seq[pos]!r} at pos {pos}")
        if len(alt) != 1 or alt == ref:
            problems.append(f"row {row}: alt {alt!r} must be one base other than ref {ref!r}")
        refs.append(seq)
        alts.append(seq[:pos] + alt + seq[pos + 1 :])
    if problems:
        shown = "; ".join(problems[:20]) + (f"; ... ({len(problems)} in all)" if len(problems) > 20 else "")
        raise ValueError(f"zero-shot task {task.name}: {shown}")
    return refs, alts


def embedding_distances(ref: np.ndarray, alt: np.ndarray, *, where: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(cosine distance, Euclidean distance), float64 (n,) each, of paired vectors ref, alt float (n, d).
    Raises ValueError naming the rows where either vector is all zeros (a k-mer encoder's empty row): its
    cosine is undefined."""
    ref, alt = np.asarray(ref, np.float64), np.asarray(alt, np.float64)
    norms = np.linalg.norm(ref, axis=1), np.linalg.norm(alt, axis=1)
    zero = np.flatnonzero((norms[0] == 0) | (norms[1] == 0))
    if len(zero):
        raise ValueError(
            f"{where}: rows {zero[:20].tolist()} have an all-zero ref or alt embedding (nothing pooled), so their "
            "cosine distance is undefined"
        )
    cosine = 1 - (ref * alt).sum(axis=1) / (norms[0] * norms[1])
    return np.clip(cosine, 0.0, 2.0), np.linalg.norm(ref - alt, axis=1)  # clip: float rounding below 0 at identity


def _embedding_scores(model: ZeroShotModel, task: ZeroShotTask) -> list[pd.DataFrame | NotApplicable]:
    """The `embedding-cosine` and `embedding-euclidean` `RowScores` frames of a variant task (`pooled_scores`),
    and their at-variant twins or NotApplicable for them (`_at_variant_scores`; module docstring); NotApplicable
    for all four on a paired task. Raises what `variant_windows` and `embedding_distances` raise, and the
    encoder's errors (naming model, task and row)."""
    if task.kind != "variant":
        return [NotApplicable(model.name, task.name, s, _PAIRED_REASON) for s in EMBEDDING_SCORERS]
    refs, alts = variant_windows(task)
    return [*pooled_scores(model, task, refs, alts), *_at_variant_scores(model, task, refs, alts)]


def pooled_scores(model: ZeroShotModel, task: ZeroShotTask, refs: list[str], alts: list[str]) -> list[pd.DataFrame]:
    """The `embedding-cosine` and `embedding-euclidean` frames of a variant task whose ref and alt windows are
    `refs`, `alts` (`variant_windows`), from the model's pooled vectors."""
    from geneb.extract.step import embed_with_rc

    rows = task.rows.index.astype(int).tolist()
    where = f"model {model.name}, zero-shot task {task.name}"
    # a window shared by several variants (their common reference) is embedded once
    windows = refs + alts
    first_row = dict(zip(reversed(windows), reversed(rows + rows)))  # a window's first row, for error messages
    unique = list(dict.fromkeys(windows))
    result = embed_with_rc(model.encoder, unique, [first_row[w] for w in unique], model.rc, desc=where)
    index = {w: i for i, w in enumerate(unique)}
    vectors = result.embeddings[[index[w] for w in windows]]
    cosine, euclidean = embedding_distances(vectors[: task.n], vectors[task.n :], where=where)
    return [row_scores(task, EMBEDDING_COSINE, cosine), row_scores(task, EMBEDDING_EUCLIDEAN, euclidean)]


def _at_variant_scores(
    model: ZeroShotModel, task: ZeroShotTask, refs: list[str], alts: list[str]
) -> list[pd.DataFrame | NotApplicable]:
    """The `embedding-cosine-at-variant` and `embedding-euclidean-at-variant` frames of a variant task whose ref
    and alt windows are `refs`, `alts` (`variant_windows`), or NotApplicable for both, with the reason, when the
    model has no per-token states or its tokens cannot be placed on bases. Raises ValueError for an rc mode other
    than none / average / concat and what `embed_at_positions` raises for a row."""
    from geneb.encoders.engine.tokenmodel import TokenModelEncoder
    from geneb.encoders.engine.views import NoTokenPositions, embed_at_positions
    from geneb.tasks.validation import reverse_complement

    names = (EMBEDDING_COSINE_AT_VARIANT, EMBEDDING_EUCLIDEAN_AT_VARIANT)
    encoder = model.encoder
    if not isinstance(encoder, TokenModelEncoder):
        reason = f"{type(encoder).__name__} gives pooled vectors only: no per-token states at the variant"
        return [NotApplicable(model.name, task.name, s, reason) for s in names]
    rows = task.rows.index.astype(int).tolist()
    positions = task.rows["pos"].astype(int).tolist()
    windows, at = refs + alts, positions + positions
    try:
        vectors = embed_at_positions(encoder, windows, rows + rows, at)
        if model.rc != "none":
            ext = encoder.extraction
            multiple = int((ext.length_multiple if ext is not None else None) or 1)  # RC of the bases read
            kept = [w[: len(w) - len(w) % multiple] for w in windows]
            mirrored = [len(w) - 1 - p for w, p in zip(kept, at)]
            rev = embed_at_positions(encoder, [reverse_complement(w) for w in kept], rows + rows, mirrored)
            if model.rc == "average":
                vectors = (vectors + rev) / 2
            elif model.rc == "concat":
                vectors = np.concatenate([vectors, rev], axis=1)
            else:
                raise ValueError(f"model {model.name}: unknown rc mode {model.rc!r}")
    except NoTokenPositions as err:
        return [NotApplicable(model.name, task.name, s, str(err)) for s in names]
    where = f"model {model.name}, zero-shot task {task.name} (at the variant)"
    cosine, euclidean = embedding_distances(vectors[: task.n], vectors[task.n :], where=where)
    return [row_scores(task, names[0], cosine), row_scores(task, names[1], euclidean)]


_ScorerOutput = pd.DataFrame | NotApplicable | Sequence[pd.DataFrame | NotApplicable]
Scorer = Callable[[ZeroShotModel, ZeroShotTask], _ScorerOutput]
#: the scorers a name in `scorers=` selects; a new scorer is one entry here
SCORERS: dict[str, Scorer] = {LLR: llr_scores, EMBEDDING: _embedding_scores}


def scorer_table(scorers: Sequence[str] | Mapping[str, Scorer]) -> dict[str, Scorer]:
    """{name: scorer} of `scorers` (names of `SCORERS`, or a mapping taken as given). Raises ValueError naming
    unknown scorer names and the known ones."""
    if isinstance(scorers, Mapping):
        return dict(scorers)
    unknown = [s for s in scorers if s not in SCORERS]
    if unknown:
        raise ValueError(f"unknown zero-shot scorer(s) {unknown}; known: {sorted(SCORERS)} (or pass a mapping)")
    return {s: SCORERS[s] for s in scorers}


def _outputs(output: _ScorerOutput) -> list[pd.DataFrame | NotApplicable]:
    if isinstance(output, (pd.DataFrame, NotApplicable)):
        return [output]
    return list(output)


def score_with(
    model: ZeroShotModel, task: ZeroShotTask, scorers: Sequence[str] | Mapping[str, Scorer]
) -> tuple[list[pd.DataFrame], list[NotApplicable]]:
    """Run `scorers` (names of `SCORERS`, or a mapping name -> scorer) of `model` on `task`: (the RowScores frames,
    each checked against the task, in scorer order; the scorers that did not apply, with their reasons). Raises
    ValueError for an unknown scorer name and what the scorers raise."""
    frames: list[pd.DataFrame] = []
    declined: list[NotApplicable] = []
    for scorer in scorer_table(scorers).values():
        for out in _outputs(scorer(model, task)):
            if isinstance(out, NotApplicable):
                declined.append(out)
            else:
                check_row_scores(task, out)
                frames.append(out)
    return frames, declined
