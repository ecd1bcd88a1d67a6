"""`geneb.evaluate` with a workdir used again: a prepared task is kept while its preparation params and source
files are unchanged (the workflow's rerun rule), prepared again when they change or its files are incomplete, and
the scores are those of a fresh workdir either way. A real task of ../shared, capped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import geneb
import geneb.tasks.prepare as prepare_module
from geneb.api.evaluate import _PREPARED_STAMP

TASK = "idna_ms_4mc_c_equisetifolia"


def base_counts(sequences: list[str]) -> np.ndarray:
    """A user's model in a notebook: the A, C, G, T counts of each row, float64 (n, 4)."""
    return np.array([[s.count(b) for b in "ACGT"] for s in sequences], dtype=np.float64)


@pytest.fixture
def calls(monkeypatch):
    seen: list[str] = []
    real = prepare_module.prepare_from_params

    def counting(task, *args, **kwargs):
        seen.append(task)
        return real(task, *args, **kwargs)

    monkeypatch.setattr(prepare_module, "prepare_from_params", counting)
    return seen


def _evaluate(shared, workdir, max_train=120):
    caps = {"seed": 0, "default": {"max_train": max_train, "max_test": 80}, "per_task": {}}
    return geneb.evaluate(
        base_counts, [TASK], task_source=str(shared / "data" / "tasks"), caps=caps, workdir=workdir, name="acgt"
    )


def _mcc(scores: pd.DataFrame) -> list[float]:
    return scores.loc[scores["metric"] == "MCC", "value"].tolist()


def test_a_prepared_task_is_kept_while_unchanged(shared, tmp_path, calls):
    first = _evaluate(shared, tmp_path / "work")
    again = _evaluate(shared, tmp_path / "work")
    assert calls == [TASK]  # the second call reused the prepared task
    fresh = _evaluate(shared, tmp_path / "fresh")
    assert _mcc(first) == _mcc(again) == _mcc(fresh)
    assert set(again["data_hash"]) == set(fresh["data_hash"])


def test_changed_params_or_incomplete_files_prepare_again(shared, tmp_path, calls):
    work = tmp_path / "work"
    _evaluate(shared, work)
    other = _evaluate(shared, work, max_train=100)  # new caps: new params
    assert calls == [TASK, TASK]
    assert set(other["n_train"]) != set(_evaluate(shared, tmp_path / "fresh")["n_train"])
    # resources/tasks/<task>/<hash of the preparation params>/: the capped one of the two param sets
    (task_dir,) = (
        p.parent
        for p in (work / "resources" / "tasks" / TASK).glob("*/card.json")
        if json.loads(p.read_text())["splits"]["train"]["n"] <= 100
    )
    (task_dir / "test.parquet").unlink()  # a killed preparation's leftovers are never trusted
    _evaluate(shared, work, max_train=100)
    assert calls == [TASK, TASK, TASK, TASK]
    (task_dir / _PREPARED_STAMP).write_text('{"key": "someone else"}')
    _evaluate(shared, work, max_train=100)
    assert len(calls) == 5
