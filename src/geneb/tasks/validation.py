"""One-pass validation of a task's files: every problem of every row collected, grouped by kind, reported
together (console and `resources/tasks/<task>/validation.json`), plus the per-split letter counts the card
records. Used by `geneb.tasks.prepare`; torch-free.

A problem is (kind, split, row, message); the message is the sentence a single error would have had (task,
split, row, value). `Problems.summary` shows the first `SHOWN` of each kind and the count of the rest;
`Problems.as_dict` keeps up to `KEPT` of each kind (the file stays small for a file of a million bad rows)
with the full count.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from geneb.core.atomic import write_text_atomic
from geneb.tasks.alphabet import IUPAC_AMBIGUITY, STRIPPABLE
from geneb.tasks.hygiene import conflicting_label_sequences

#: problems of one kind shown in the error message (the rest are counted)
SHOWN = 5
#: problems of one kind kept in validation.json (the rest are counted)
KEPT = 1000
#: row ids one message lists (a label's test rows, a sequence's rows); the count of all follows
ROWS_SHOWN = 10
#: what a message's "row N" means (the summary's header says it)
ROW_NUMBERING = "rows are 0-based data rows of the file: row 0 is file line 2, the header being line 1"
#: a row whose N fraction is above this is "mostly N" in the card's letter counts
MOSTLY_N = 0.5
VALIDATION_SCHEMA_VERSION = "1"
#: the per-split letter counts of the card (`letter_counts`), in order
LETTER_KEYS = (
    "rows_whitespace_stripped",
    "rows_u_mapped",
    "rows_iupac",
    "rows_lowercase",
    "lowercase_bases",
    "rows_n",
    "rows_all_n",
    "rows_mostly_n",
)


@dataclass(frozen=True)
class Problem:
    kind: str
    split: str | None
    row: int | None
    message: str


class Problems:
    """The problems found in one task's files, in the order found."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.items: list[Problem] = []

    def add(self, kind: str, split: str | None, row: int | None, message: str) -> None:
        self.items.append(Problem(kind, split, row, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def grouped(self) -> dict[str, list[Problem]]:
        """{kind: problems} in order of first appearance."""
        out: dict[str, list[Problem]] = {}
        for p in self.items:
            out.setdefault(p.kind, []).append(p)
        return out

    def summary(self, shown: int = SHOWN) -> str:
        """Every kind with its count and first `shown` messages; what the task's error says."""
        groups = self.grouped()
        rows = {(p.split, p.row) for p in self.items if p.row is not None}
        lines = [
            f"task {self.task!r}: {len(self.items)} problem(s) of {len(groups)} kind(s) in {len(rows)} row(s); "
            f"every row was checked (full list: validation.json beside the card); {ROW_NUMBERING}"
        ]
        for kind, items in groups.items():
            lines.append(f"  {kind} ({len(items)}):")
            lines.extend(f"    {p.message}" for p in items[:shown])
            if len(items) > shown:
                lines.append(f"    ... and {len(items) - shown} more")
        return "\n".join(lines)

    def as_dict(self, kept: int = KEPT) -> dict[str, Any]:
        """The machine-readable report: ok, counts, and per kind up to `kept` problems."""
        return {
            "schema_version": VALIDATION_SCHEMA_VERSION,
            "task": self.task,
            "ok": not self.items,
            "n_problems": len(self.items),
            "kinds": {
                kind: {
                    "count": len(items),
                    "problems": [{"split": p.split, "row": p.row, "message": p.message} for p in items[:kept]],
                }
                for kind, items in self.grouped().items()
            },
        }


def write_report(
    path: str | Path, problems: Problems, letters: dict[str, Any] | None = None, *, flags: dict[str, Any] | None = None
) -> None:
    """Write `problems` (and, for a task that passed, the card's letter counts and its `flags`: a test split
    lacking a training class, rows without a base; `geneb.tasks.prepare.card_flags`) to `path` as JSON."""
    report = problems.as_dict()
    if letters is not None:
        report["letters"] = letters
    if flags:
        report["flags"] = flags
    write_text_atomic(Path(path), json.dumps(report, indent=1, sort_keys=True))


def letter_counts(raw: Iterable[object], stored: Iterable[str], policy_strip: bool, policy_u: bool) -> dict[str, int]:
    """Per-split letter hygiene of accepted rows: raw source sequences beside the stored ones.

    rows_whitespace_stripped (strip_whitespace removed something), rows_u_mapped (U/u read as T/t),
    rows_iupac (an ambiguity code R Y S W K M B D H V; BPE models see UNK, k-mer encoders skip windows:
    docs/alphabet.md), rows_lowercase / lowercase_bases (soft-masking, kept; models see upper case), rows_n
    (any N), rows_all_n, rows_mostly_n (more than MOSTLY_N of the row is N)."""
    counts = dict.fromkeys(LETTER_KEYS, 0)
    iupac = set(IUPAC_AMBIGUITY)
    for before, seq in zip(raw, stored):
        text = str(before)
        counts["rows_whitespace_stripped"] += int(policy_strip and text != text.strip(STRIPPABLE))
        counts["rows_u_mapped"] += int(policy_u and ("U" in text or "u" in text))
        up = seq.upper()
        counts["rows_iupac"] += int(not iupac.isdisjoint(up))
        lower = sum(1 for c in seq if c.islower())
        counts["rows_lowercase"] += int(lower > 0)
        counts["lowercase_bases"] += lower
        n = up.count("N")
        counts["rows_n"] += int(n > 0)
        counts["rows_all_n"] += int(n == len(up))
        counts["rows_mostly_n"] += int(n > MOSTLY_N * len(up))
    return counts


def rows_text(rows: Iterable[int], shown: int = ROWS_SHOWN) -> str:
    """Row ids as a message names them: 'row 3', 'rows 3, 17, 250' or 'rows 3, 17, ..., 250, ... (12 rows)' (the
    first `shown`, then the count). Row ids are GENEB's: 0-based data rows of the source file (ROW_NUMBERING)."""
    ids = [int(r) for r in rows]
    if len(ids) == 1:
        return f"row {ids[0]}"
    head = ", ".join(str(r) for r in ids[:shown])
    return f"rows {head}" + (f", ... ({len(ids)} rows)" if len(ids) > shown else "")


def label_text(code: int, names: dict[int, str] | None) -> str:
    """A class as the files write it: `names[code]` quoted ('other'), or the index quoted where `names` lacks it."""
    return repr(str((names or {}).get(int(code), code)))


def _labels_with_rows(df: pd.DataFrame, names: dict[int, str] | None, shown: int = ROWS_SHOWN) -> str:
    """ "'a' (rows 0, 2), 'b' (row 1)": every label of a split with its rows, in class order."""
    parts = []
    for code, group in df.groupby("label", sort=True)["row"]:
        rows = group.tolist()
        # the stubs type a group key as any scalar; labels are int64 class indices here
        parts.append(f"{label_text(int(cast(int, code)), names)} ({rows_text(rows, shown)})")
    return ", ".join(parts)


def class_problems(
    splits: dict[str, pd.DataFrame],
    catalogue_row: dict[str, Any],
    *,
    task: str,
    single_class_test: str = "error",
    names: dict[int, str] | None = None,
) -> Problems:
    """The class-level rules, all checked: test labels seen in train (one problem per unseen label, with its test
    rows), the catalogue's class count, two or more training classes (a probe cannot be fitted on one), and two or
    more test classes unless `single_class_test` is "keep" (MCC is 0 for every model on a one-class test split).

    splits: {split: frame with `row` and `label` (class index)}; names: {class index: label as written}
    (`geneb.tasks.labels.label_names`), so that a message names 'other', not the index GENEB gave it."""
    problems = Problems(task)
    train, test = splits["train"], splits["test"]
    train_classes = sorted(set(np.unique(train["label"]).tolist()))
    test_classes = sorted(set(np.unique(test["label"]).tolist()))
    train_labels = ", ".join(label_text(c, names) for c in train_classes)
    if len(test_classes) < 2 and single_class_test != "keep":
        only = label_text(test_classes[0], names) if test_classes else "none"
        problems.add(
            "one class in test",
            "test",
            None,
            f"task {task!r}, split 'test': only one label, {only} (all {len(test)} rows); MCC would "
            "be 0 for every model. Fix the split, or set task_checks.single_class_test: keep to score it "
            "flagged and outside the category means",
        )
    for code in sorted(set(test_classes) - set(train_classes)):
        rows = test.loc[test["label"] == code, "row"].tolist()
        problems.add(
            "test class not in train",
            "test",
            int(rows[0]),
            f"task {task!r}, split 'test': label {label_text(code, names)} ({rows_text(rows)}) does not occur in train "
            f"(train labels: {train_labels})",
        )
    expected = str(catalogue_row.get("n_classes") or "").strip()
    if expected and int(expected) != len(train_classes):
        problems.add(
            "class count differs from the catalogue",
            "train",
            None,
            f"task {task!r}, split 'train': {len(train_classes)} label(s) {_labels_with_rows(train, names)}; "
            f"the catalogue (n_classes) says {expected}",
        )
    if len(train_classes) < 2:
        only = label_text(train_classes[0], names) if train_classes else "none"
        problems.add(
            "one class", "train", None, f"task {task!r}, split 'train': only one label, {only} (all {len(train)} rows)"
        )
    return problems


def conflicting_label_problems(
    splits: dict[str, pd.DataFrame], *, task: str, names: dict[int, str] | None = None
) -> Problems:
    """Sequences that occur with two or more labels (case-insensitive identity, `geneb.tasks.hygiene.identity_key`),
    within a split or between train and test: one problem per sequence, naming its start, its length and every
    label with the splits and rows that carry it (what task_checks.conflicting_labels: error refuses). A reverse
    complement with another label is not one (a strand-specific task may label the strands apart; the card's
    train_test_overlap counts it)."""
    problems = Problems(task)
    for key, where in conflicting_label_sequences(splits):
        parts = []
        for code, places in where.items():
            at = "; ".join(f"{split} {rows_text(rows)}" for split, rows in places.items())
            parts.append(f"{label_text(code, names)} ({at})")
        first_split, first_rows = next(iter(next(iter(where.values())).items()))
        problems.add(
            "sequence with two labels",
            first_split,
            int(first_rows[0]),
            f"task {task!r}: sequence {key[:24]!r}{'…' if len(key) > 24 else ''} ({len(key)} bases, any case) "
            f"occurs with {len(where)} labels: {', '.join(parts)}; task_checks.conflicting_labels: keep prepares "
            "it (counted in the card)",
        )
    return problems
