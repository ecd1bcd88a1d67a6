"""Rows without a base (all N) get one policy at preparation (task_checks.no_base_rows: keep flags them, error
refuses the task naming every row), and a test split lacking a training class is flagged in the card,
validation.json and the score rows with its AUROC / F1 consequence."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from geneb.tables.aggregate import _join_columns
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import TaskValidationError, prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy
from synth import write_mirror_task

TASK = "ienhancer2l_types_3class"  # 3 classes in the catalogue


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def _task(root: Path, train, test) -> Path:
    return write_mirror_task(root, TASK, {"train": train, "test": test})


TRAIN = [("ACGTACGTAC", 0), ("GGGCCCGGGC", 1), ("NNNNNNNNNN", 2), ("ACGTTCGTAC", 0), ("nnnnRYnnnn", 2), ("TTTAC", 1)]
TEST = [("ACGTACGTAA", 0), ("GGGCCCGGGA", 1), ("NNNNN", 0)]


def _prepare(tmp_path, catalogue, checks=None):
    root = _task(tmp_path / "m", TRAIN, TEST)
    return prepare_task(
        TASK, task_row(catalogue, TASK), open_source(str(root)), AlphabetPolicy(), {}, 0, tmp_path / "o", checks
    )


def test_no_base_rows_are_kept_and_flagged_by_default(tmp_path, catalogue):
    card = _prepare(tmp_path, catalogue)
    assert card.no_base_rows == {"train": (2, 4), "test": (2,)}
    assert card.test_missing_classes == (2,)
    report = json.loads((tmp_path / "o" / "validation.json").read_text())
    assert report["ok"] and report["flags"]["test_missing_classes"] == [2]
    assert report["flags"]["no_base_rows"] == {"train": [2, 4], "test": [2]}
    assert len(pd.read_parquet(tmp_path / "o" / "train.parquet")) == len(TRAIN)  # the same rows reach every model


def test_no_base_rows_error_names_every_row(tmp_path, catalogue):
    with pytest.raises(TaskValidationError) as err:
        _prepare(tmp_path, catalogue, {"no_base_rows": "error"})
    message = str(err.value)
    for where in ("split 'train', row 2", "split 'train', row 4", "split 'test', row 2"):
        assert where in message
    assert not (tmp_path / "o" / "card.json").exists()


def test_missing_test_class_and_overlap_reach_the_score_rows(tmp_path, catalogue):
    _prepare(tmp_path, catalogue)
    scores = pd.DataFrame({"task": [TASK, TASK], "metric": ["MCC", "AUROC"], "value": [0.1, float("nan")]})
    joined = _join_columns(scores, [tmp_path / "o" / "card.json"])
    assert (joined["test_missing_classes"] == "2").all()
    assert joined["test_class_note"].str.contains("AUROC is NaN").all()
    assert joined["test_class_note"].str.contains("macro-F1 counts each missing class 0").all()
    assert (joined["no_base_rows_train"] == 2).all() and (joined["overlap_exact"] == 0).all()
    assert joined["overlap_homolog"].isna().all()  # no audit given: unknown, not 0
