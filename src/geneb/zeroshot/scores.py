"""What a zero-shot scorer returns: one score per task row, and the reason a scorer does not apply.

Every scorer (the language-model LLR, the embedding distances, the k-mer Markov baselines) returns a
`RowScores` frame, the one table the metrics, the cache and the workflow read:

* `row`: int64, the task's row id (0..n-1, `ZeroShotTask.rows.index`), every row exactly once, in order;
* `scorer`: str, one of the scorer names below (the same on every row);
* `score`: float64, finite. Direction is fixed across scorers so that metrics never flip a sign:
  for a variant task, larger = stronger predicted effect (AUROC of `score` against `label`); for a paired task,
  larger = the model prefers `sequence_a` (paired accuracy = share of rows with score > 0).

A scorer that cannot score a (model, task) pair (a paired task needs a likelihood; a model without a language-model
head has none) returns `NotApplicable` with the reason, never a made-up score.

Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from geneb.zeroshot.task import ZeroShotTask

ROW_SCORE_COLUMNS: tuple[str, ...] = ("row", "scorer", "score")
#: the format version of a score file of RowScores rows (geneb.zeroshot.job; a new one reruns every score_zeroshot
#: job: it is in the rule's params)
SCORE_FILE_VERSION = "3"

#: the language model's log-likelihood ratio (masked marginal or causal; docs/zeroshot.md)
LLR = "llr"
#: distance between the pooled ref and alt embeddings (every model, variant tasks only)
EMBEDDING_COSINE = "embedding-cosine"
EMBEDDING_EUCLIDEAN = "embedding-euclidean"
#: the same distances between the states at the variant's position (models with per-token states)
EMBEDDING_COSINE_AT_VARIANT = "embedding-cosine-at-variant"
EMBEDDING_EUCLIDEAN_AT_VARIANT = "embedding-euclidean-at-variant"
#: every output of the embedding scorer
EMBEDDING_SCORERS: tuple[str, ...] = (
    EMBEDDING_COSINE,
    EMBEDDING_EUCLIDEAN,
    EMBEDDING_COSINE_AT_VARIANT,
    EMBEDDING_EUCLIDEAN_AT_VARIANT,
)
#: prefix of the k-mer Markov chain baselines: `markov-<order>`
MARKOV_PREFIX = "markov-"


#: the task kinds each scorer applies to by construction (a distance between two embeddings gives no preference
#: between two sequences); the leaderboard's macro of an entry covers the tasks of its scorer's kinds
EMBEDDING_KINDS: tuple[str, ...] = ("variant",)
ALL_KINDS: tuple[str, ...] = ("variant", "paired")


def scorer_kinds(scorer: str) -> tuple[str, ...]:
    """The task kinds `scorer` applies to: variant only for the embedding distances, both for `llr` and the
    Markov baselines (and any other scorer)."""
    return EMBEDDING_KINDS if scorer in EMBEDDING_SCORERS else ALL_KINDS


def markov_scorer(order: int) -> str:
    """The scorer name of the order-`order` k-mer Markov chain baseline (`markov-<order>`)."""
    if order < 0:
        raise ValueError(f"a Markov chain's order is >= 0, got {order}")
    return f"{MARKOV_PREFIX}{order}"


class ZeroShotScoreError(ValueError):
    """A scorer's output breaks the `RowScores` contract (missing or repeated rows, a non-finite score)."""


@dataclass(frozen=True)
class NotApplicable:
    """A scorer that does not apply to a (model, task) pair, and why (shown in the tables as not applicable)."""

    model: str
    task: str
    scorer: str
    reason: str


def row_scores(task: ZeroShotTask, scorer: str, scores: np.ndarray) -> pd.DataFrame:
    """Wrap one score per row of `task` into a checked `RowScores` frame.

    scores: float (n,), in row order. Raises ZeroShotScoreError naming the task, scorer and the first rows
    where the count differs from the task's or a score is NaN or infinite.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.shape != (task.n,):
        raise ZeroShotScoreError(
            f"zero-shot task {task.name}, scorer {scorer}: {values.shape} scores for {task.n} rows"
        )
    frame = pd.DataFrame({"row": task.rows.index.to_numpy(dtype=np.int64), "scorer": scorer, "score": values})
    check_row_scores(task, frame)
    return frame


def check_row_scores(task: ZeroShotTask, frame: pd.DataFrame) -> None:
    """Raise ZeroShotScoreError unless `frame` is a `RowScores` frame for every row of `task`, in order."""
    missing = [c for c in ROW_SCORE_COLUMNS if c not in frame.columns]
    if missing:
        raise ZeroShotScoreError(f"zero-shot task {task.name}: score table lacks columns {missing}")
    scorers = sorted(set(frame["scorer"]))
    where = f"zero-shot task {task.name}, scorer {','.join(map(str, scorers))}"
    if len(scorers) != 1:
        raise ZeroShotScoreError(f"{where}: one scorer per table, got {scorers}")
    rows = frame["row"].to_numpy()
    expected = task.rows.index.to_numpy()
    if len(rows) != len(expected) or not np.array_equal(rows, expected):
        raise ZeroShotScoreError(
            f"{where}: rows must be the task's {len(expected)} row ids in order, got {len(rows)} "
            f"(first differences: {_first_differences(rows, expected)})"
        )
    score = frame["score"].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(score))
    if len(bad):
        shown = ", ".join(f"row {int(rows[i])}: {score[i]}" for i in bad[:5])
        raise ZeroShotScoreError(f"{where}: {len(bad)} non-finite scores ({shown})")


def _first_differences(rows: np.ndarray, expected: np.ndarray, limit: int = 5) -> str:
    got, want = set(rows.tolist()), set(expected.tolist())
    missing = sorted(want - got)[:limit]
    extra = sorted(got - want)[:limit]
    repeated = sorted(pd.Series(rows).value_counts().loc[lambda s: s > 1].index.tolist())[:limit]
    parts = [f"missing {missing}" if missing else "", f"unknown {extra}" if extra else ""]
    parts.append(f"repeated {repeated}" if repeated else "")
    return "; ".join(p for p in parts if p) or "same ids, different order"
