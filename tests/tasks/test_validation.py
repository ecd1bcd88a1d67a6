"""A task file is validated in one pass: every problem of every row, grouped by kind, in the error and in
`validation.json` beside the card; a failed preparation leaves no card."""

from __future__ import annotations

import gzip
import json

import pytest

from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import TaskDataError, TaskValidationError, prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import _SHOWN, AlphabetPolicy, letter_counts

TASK = "ienhancer2l_strong_vs_weak"


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def write_split(path, rows):
    with gzip.open(path, "wt", newline="") as f:
        f.write("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in rows))


def prepare(tmp_path, root, catalogue, policy=None, checks=None, caps=None):
    out = tmp_path / "out" / TASK
    return out, lambda: prepare_task(
        TASK, task_row(catalogue, TASK), open_source(str(root)), policy or AlphabetPolicy(), caps or {}, 0, out, checks
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
    assert text.count("character '-' at position 4") == _SHOWN and f"... and {8 - _SHOWN} more" in text
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
    assert "label '2' (row 1) does not occur in train (train labels: '0')" in str(err.value)


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


def test_an_unseen_test_label_is_named_as_written_with_its_rows(tmp_path, catalogue):
    """Before: a test label absent from train was named by GENEB's class index (`classes [2]`), with no rows."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    write_split(root / TASK / "train.csv.gz", [("ACGTAC", ("enhancer", "non_enhancer")[i % 2]) for i in range(10)])
    test = [("ACGTAA", ("enhancer", "non_enhancer")[i % 2]) for i in range(300)]
    other = [3, 17, 30, 41, 52, 63, 74, 85, 96, 107, 250, 299]
    for r in other:
        test[r] = ("TTTTAA", "other")
    write_split(root / TASK / "test.csv.gz", test)
    out, run = prepare(tmp_path, root, catalogue)
    with pytest.raises(TaskValidationError) as err:
        run()
    text = str(err.value)
    assert (
        f"task {TASK!r}, split 'test': label 'other' (rows 3, 17, 30, 41, 52, 63, 74, 85, 96, 107, ... (12 rows)) "
        "does not occur in train (train labels: 'enhancer', 'non_enhancer')"
    ) in text, text
    assert "[2]" not in text and "rows are 0-based data rows of the file: row 0 is file line 2" in text
    (problem,) = json.loads((out / "validation.json").read_text())["kinds"]["test class not in train"]["problems"]
    assert problem["split"] == "test" and problem["row"] == 3


def test_a_file_with_many_kinds_of_problems_names_every_one(tmp_path, catalogue):
    """Before: a file with several problems named three of them; the rules that ran only once the others passed
    (rows without a base, the class rules) and sequences with two labels (task_checks.conflicting_labels: error)
    were left out. Seven kinds in one file: every one named, in the error and in validation.json."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    train = [(f"ACGT{'ACGT'[i % 4] * 3}{'CG'[i % 2]}", ("enhancer", "non_enhancer")[i % 2]) for i in range(30)]
    train[2] = ("ACG-TACG", "enhancer")  # not a nucleotide code
    train[4] = ("ACGTTTGA", " enhancer")  # label with whitespace
    train[6] = ("NNNNNNNN", "enhancer")  # no base (task_checks.no_base_rows: error)
    train[8] = ("GGGGCCCC", "enhancer")  # one sequence, two labels (any case) ...
    train[9] = ("ggggcccc", "non_enhancer")
    test = [(f"ACGA{'ACGT'[i % 4] * 3}", ("enhancer", "non_enhancer")[i % 2]) for i in range(20)]
    test[5] = ("", "enhancer")  # empty sequence
    test[7] = ("GGGGCCCC", "non_enhancer")  # ... and again in test
    test[11] = ("TTTTAAAC", "other")  # a label train lacks
    test[12] = ("TTTTAAAG", "")  # empty label
    write_split(root / TASK / "train.csv.gz", train)
    write_split(root / TASK / "test.csv.gz", test)
    checks = {"conflicting_labels": "error", "no_base_rows": "error"}
    out, run = prepare(tmp_path, root, catalogue, checks=checks)
    with pytest.raises(TaskValidationError) as err:
        run()
    text = str(err.value)
    kinds = {
        "not a nucleotide code": "split 'train', row 2: character '-'",
        "label with whitespace": "split 'train', row 4: label ' enhancer'",
        "no base (all N)": "split 'train', row 6: no A/C/G/T letter",
        "sequence with two labels": (
            "sequence 'GGGGCCCC' (8 bases, any case) occurs with 2 labels: 'enhancer' (train row 8), "
            "'non_enhancer' (train row 9; test row 7)"
        ),
        "empty sequence": "split 'test', row 5: empty sequence",
        "empty label": "split 'test', row 12: empty label",
        "test class not in train": "label 'other' (row 11) does not occur in train",
    }
    for kind, message in kinds.items():
        assert f"  {kind} (1):" in text and message in text, (kind, text)
    assert "7 problem(s) of 7 kind(s)" in text
    assert set(json.loads((out / "validation.json").read_text())["kinds"]) == set(kinds)
    # the same file under the default policies: the two-label sequence and the all-N row are kept, the rest refused
    out, run = prepare(tmp_path, root, catalogue)
    with pytest.raises(TaskValidationError) as err:
        run()
    assert set(json.loads((out / "validation.json").read_text())["kinds"]) == set(kinds) - {
        "no base (all N)",
        "sequence with two labels",
    }


def test_sequences_with_two_labels_are_refused_only_under_the_error_policy(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    train = [(f"ACGT{'ACGT'[i % 4]}{'CG'[i % 2]}", i % 2) for i in range(8)]  # rows 0/4 and 1/5 repeat: one label
    train[3] = ("ACGTAC", 1)  # row 0's sequence with the other label, on top of 0 and 4
    write_split(root / TASK / "train.csv.gz", train)
    write_split(root / TASK / "test.csv.gz", [("TTTTGG", 0), ("TTTTGC", 1)])
    card = prepare(tmp_path, root, catalogue)[1]()
    assert card.as_dict()["splits"]["train"]["conflicting_label_sequences"] == 1
    out, run = prepare(tmp_path, root, catalogue, checks={"conflicting_labels": "error"})
    with pytest.raises(
        TaskValidationError, match=r"occurs with 2 labels: '0' \(train rows 0, 4\), '1' \(train row 3\)"
    ):
        run()
    assert not (out / "card.json").exists()


def test_the_header_counts_the_rows_a_class_problem_concerns():
    """A label train lacks on three test rows concerns three rows, a one-class test split all of its rows: the
    header counts rows, not problems."""
    import pandas as pd

    from geneb.tasks.validation import class_problems

    train = pd.DataFrame({"row": range(6), "label": [0, 1] * 3})
    test = pd.DataFrame({"row": range(5), "label": [0, 2, 2, 1, 2]})
    text = class_problems({"train": train, "test": test}, {}, task="t").summary()
    assert "1 problem(s) of 1 kind(s) in 3 row(s)" in text and "label '2' (rows 1, 2, 4)" in text
    one_class = pd.DataFrame({"row": range(375), "label": [0] * 375})
    text = class_problems({"train": train, "test": one_class}, {}, task="t").summary()
    assert "1 problem(s) of 1 kind(s) in 375 row(s)" in text and "(all 375 rows)" in text
