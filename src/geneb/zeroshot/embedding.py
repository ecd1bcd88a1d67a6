"""The embedding-distance scorers: how far a variant moves a model's pooled embedding, for every model.

For each variant row the reference window (`sequence`) and the alt window (the same with `alt` at `pos`) are
embedded in one batched call (all ref windows, then all alt windows; a window several rows share is embedded
once) under the model's own pooling, layer and
reverse-complement mode (`geneb.extract.step.embed_with_rc`: rc average embeds both strands and averages them, as
extraction does). Two scores per row, larger distance = larger predicted effect (the `RowScores` direction; a
declared convention, never tuned on labels):

* `embedding-cosine`: 1 - cos(ref vector, alt vector), in [0, 2];
* `embedding-euclidean`: the Euclidean (L2) distance between the two vectors, in the embedding's units.

BEND scores variant effects by the cosine distance of ref and alt embeddings (at the variant position; GENEB uses
the pooled vector every model has); TraitGym and GFMBench-api report such embedding distances beside the LLR
(docs/zeroshot.md, "Scorers"). A paired task needs a likelihood: an embedding distance is symmetric in a and b,
so it gives no preference and the scorer returns NotApplicable.

Torch-free (the encoder's family imports torch where it needs it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from geneb.tasks.alphabet import model_input
from geneb.zeroshot.model import ZeroShotModel
from geneb.zeroshot.scores import EMBEDDING_COSINE, EMBEDDING_EUCLIDEAN, NotApplicable, row_scores
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


def embedding_scores(model: ZeroShotModel, task: ZeroShotTask) -> list[pd.DataFrame] | list[NotApplicable]:
    """The `embedding-cosine` and `embedding-euclidean` `RowScores` frames of a variant task (module docstring);
    NotApplicable for a paired task. Raises what `variant_windows` and `embedding_distances` raise, and the
    encoder's errors (naming model, task and row)."""
    from geneb.extract.step import embed_with_rc

    if task.kind != "variant":
        return [NotApplicable(model.name, task.name, s, PAIRED_REASON) for s in (EMBEDDING_COSINE, EMBEDDING_EUCLIDEAN)]
    refs, alts = variant_windows(task)
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
