"""The zero-shot scorer table: a name -> a callable `(ZeroShotModel, ZeroShotTask) -> RowScores frame |
NotApplicable | a list of them`, and `score_with`, which runs some of them on one task (the workflow's
score_zeroshot job and `geneb.evaluate_zeroshot` both do). A new scorer is one entry in `SCORERS` (or pass a
mapping). Torch-free (the scorers import what they load when they load it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from geneb.zeroshot.embedding import EMBEDDING, embedding_scores
from geneb.zeroshot.llr_scorer import llr_scores
from geneb.zeroshot.model import ZeroShotModel
from geneb.zeroshot.scores import LLR, NotApplicable, check_row_scores
from geneb.zeroshot.task import ZeroShotTask

ScorerOutput = pd.DataFrame | NotApplicable | Sequence[pd.DataFrame | NotApplicable]
Scorer = Callable[[ZeroShotModel, ZeroShotTask], ScorerOutput]
#: the scorers a name in `scorers=` selects; a new scorer is one entry here
SCORERS: dict[str, Scorer] = {LLR: llr_scores, EMBEDDING: embedding_scores}


def scorer_table(scorers: Sequence[str] | Mapping[str, Scorer]) -> dict[str, Scorer]:
    """{name: scorer} of `scorers` (names of `SCORERS`, or a mapping taken as given). Raises ValueError naming
    unknown scorer names and the known ones."""
    if isinstance(scorers, Mapping):
        return dict(scorers)
    unknown = [s for s in scorers if s not in SCORERS]
    if unknown:
        raise ValueError(f"unknown zero-shot scorer(s) {unknown}; known: {sorted(SCORERS)} (or pass a mapping)")
    return {s: SCORERS[s] for s in scorers}


def _outputs(output: ScorerOutput) -> list[pd.DataFrame | NotApplicable]:
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
