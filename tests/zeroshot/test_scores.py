"""The per-row score contract every zero-shot scorer returns (geneb.zeroshot.task)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geneb.zeroshot.task import ZeroShotScoreError, ZeroShotTask, check_row_scores, markov_scorer, row_scores


def _task(n: int = 4) -> ZeroShotTask:
    rows = pd.DataFrame({"sequence_a": ["ACGT"] * n, "sequence_b": ["TTTT"] * n})
    return ZeroShotTask(name="pairs", kind="paired", rows=rows, data_sha256="0" * 64)


def test_one_finite_score_per_row_in_order():
    frame = row_scores(_task(), "llr", np.array([0.5, -1.0, 2.0, 0.0]))
    assert frame["row"].tolist() == [0, 1, 2, 3]
    assert set(frame["scorer"]) == {"llr"} and frame["score"].dtype == np.float64


def test_a_nan_score_is_named_by_row():
    with pytest.raises(ZeroShotScoreError, match=r"row 2: nan"):
        row_scores(_task(), "llr", np.array([0.5, -1.0, np.nan, 0.0]))


def test_a_missing_or_repeated_row_is_named():
    frame = pd.DataFrame({"row": [0, 1, 1, 3], "scorer": "llr", "score": [0.0, 1.0, 1.0, 2.0]})
    with pytest.raises(ZeroShotScoreError, match=r"missing \[2\].*repeated \[1\]"):
        check_row_scores(_task(), frame)
    with pytest.raises(ZeroShotScoreError, match="3 rows"):
        row_scores(_task(3), "llr", np.zeros(4))


def test_markov_scorer_names():
    assert markov_scorer(3) == "markov-3"
    with pytest.raises(ValueError):
        markov_scorer(-1)
