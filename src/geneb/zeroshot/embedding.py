"""The embedding-distance scorers: how far a variant moves a model's pooled embedding, for every model.

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
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from geneb.tasks.validation import model_input
from geneb.zeroshot.model import ZeroShotModel
from geneb.zeroshot.scores import (
    EMBEDDING_COSINE,
    EMBEDDING_COSINE_AT_VARIANT,
    EMBEDDING_EUCLIDEAN,
    EMBEDDING_EUCLIDEAN_AT_VARIANT,
    EMBEDDING_SCORERS,
    NotApplicable,
    row_scores,
)
from geneb.zeroshot.task import ZeroShotTask

#: the name the scorer dispatch knows the two distances by (geneb.zeroshot.scorers)
EMBEDDING = "embedding"
PAIRED_REASON = "a paired task needs a likelihood; an embedding distance gives no preference"


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


def embedding_scores(model: ZeroShotModel, task: ZeroShotTask) -> list[pd.DataFrame | NotApplicable]:
    """The `embedding-cosine` and `embedding-euclidean` `RowScores` frames of a variant task (`pooled_scores`),
    and their at-variant twins or NotApplicable for them (`at_variant_scores`; module docstring); NotApplicable
    for all four on a paired task. Raises what `variant_windows` and `embedding_distances` raise, and the
    encoder's errors (naming model, task and row)."""
    if task.kind != "variant":
        return [NotApplicable(model.name, task.name, s, PAIRED_REASON) for s in EMBEDDING_SCORERS]
    refs, alts = variant_windows(task)
    return [*pooled_scores(model, task, refs, alts), *at_variant_scores(model, task, refs, alts)]


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


def at_variant_scores(
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
