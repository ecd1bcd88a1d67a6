"""A task file is validated in one pass: every problem of every row, grouped by kind, in the error and in
`validation.json` beside the card; a failed preparation leaves no card."""

from __future__ import annotations

import gzip
import json

import pytest

from geneb.tasks.alphabet import AlphabetPolicy
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import TaskDataError, TaskValidationError, prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import SHOWN, letter_counts

TASK = "ienhancer2l_strong_vs_weak"


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def write_split(path, rows):
    with gzip.open(path, "wt", newline="") as f:
        f.write("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in rows))


def prepare(tmp_path, root, catalogue, policy=None):
    out = tmp_path / "out" / TASK
    return out, lambda: prepare_task(
        TASK, task_row(catalogue, TASK), open_source(str(root)), policy or AlphabetPolicy(), {}, 0, out
    )


def test_every_problem_of_both_splits_is_reported_at_once(tmp_path, catalogue):
    """Empty sequence in test row 5, empty label in test row 9 (labels used to be checked first: 'row 9' then,
    after a fix, 'row 5'), plus eight bad characters in train: one error names them all, grouped."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    train = [("ACGTACGT", i % 2) for i in range(20)]
    for i in range(8):
        train[10 + i] = ("ACGT-ACG", i % 2)
    test = [("ACGTAAAA", i % 2) for i in range(12)]
    test[5] = ("", 1)
    test[9] = ("ACGTTTTT", "")
    write_split(root / TASK / "train.csv.gz", train)
    write_split(root / TASK / "test.csv.gz", test)
    out, run = prepare(tmp_path, root, catalogue)
    (out).mkdir(parents=True)
    (out / "card.json").write_text("{}")  # a card of an earlier run: never left behind by a failure
    with pytest.raises(TaskValidationError) as err:
        run()
    text = str(err.value)
    assert isinstance(err.value, TaskDataError)
    assert f"task {TASK!r}, split 'test', row 5: empty sequence" in text
    assert f"task {TASK!r}, split 'test', row 9: empty label" in text
    assert "not a nucleotide code (8):" in text
    assert text.count("character '-' at position 4") == SHOWN and f"... and {8 - SHOWN} more" in text
    assert "10 problem(s) of 3 kind(s) in 10 row(s)" in text
    report = json.loads((out / "validation.json").read_text())
    assert report["ok"] is False and report["n_problems"] == 10
    assert report["kinds"]["not a nucleotide code"]["count"] == 8
    assert [p["row"] for p in report["kinds"]["not a nucleotide code"]["problems"]] == list(range(10, 18))
    assert report["kinds"]["empty sequence"]["problems"] == [
        {"split": "test", "row": 5, "message": f"task {TASK!r}, split 'test', row 5: empty sequence"}
    ]
    assert not (out / "card.json").exists() and not (out / "train.parquet").exists()


def test_row_problems_and_class_rules_are_reported_in_one_run(tmp_path, catalogue):
    """An empty training row and a one-class test split: both in the first run's error (the class rules are
    checked on the rows without a problem), not the second only after the row is fixed."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    write_split(root / TASK / "train.csv.gz", [("ACGTAC", i % 2) for i in range(9)] + [("", 1)])
    write_split(root / TASK / "test.csv.gz", [("ACGTAA", 0) for _ in range(6)])
    out, run = prepare(tmp_path, root, catalogue)
    with pytest.raises(TaskValidationError) as err:
        run()
    kinds = set(json.loads((out / "validation.json").read_text())["kinds"])
    assert {"empty sequence", "one class in test"} <= kinds, kinds
    assert "split 'train', row 9: empty sequence" in str(err.value)


def test_class_rules_are_reported_together(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    write_split(root / TASK / "train.csv.gz", [("ACGT", 0), ("ACGA", 0)])
    write_split(root / TASK / "test.csv.gz", [("ACGT", 0), ("ACGA", 2)])
    out, run = prepare(tmp_path, root, catalogue)
    with pytest.raises(TaskValidationError) as err:
        run()
    kinds = json.loads((out / "validation.json").read_text())["kinds"]
    assert set(kinds) == {"test class not in train", "class count differs from the catalogue", "one class"}
    assert "classes [2] never occur in train" in str(err.value)


def test_a_good_task_gets_an_ok_report_with_letter_counts(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    write_split(root / TASK / "train.csv.gz", [("acgtACGT", 0), ("ACGRACGT", 1), ("NNNNNNNA", 0), ("ACGU", 1)])
    write_split(root / TASK / "test.csv.gz", [(" ACGTACGT", 0), ("NNNN", 1)])
    out, run = prepare(tmp_path, root, catalogue, AlphabetPolicy(strip_whitespace=True, u_to_t=True))
    card = run()
    report = json.loads((out / "validation.json").read_text())
    assert report["ok"] is True and report["n_problems"] == 0
    train = card.as_dict()["splits"]["train"]["letters"]
    assert train == report["letters"]["train"]
    assert train["rows_lowercase"] == 1 and train["lowercase_bases"] == 4
    assert train["rows_iupac"] == 1 and train["rows_u_mapped"] == 1 and train["rows_mostly_n"] == 1
    test = card.as_dict()["splits"]["test"]["letters"]
    assert test["rows_whitespace_stripped"] == 1 and test["rows_all_n"] == 1 and test["rows_n"] == 1


def test_letter_counts_ignore_policies_that_are_off():
    counts = letter_counts([" ACGU"], [" ACGU"], policy_strip=False, policy_u=False)
    assert counts["rows_whitespace_stripped"] == 0 and counts["rows_u_mapped"] == 0
