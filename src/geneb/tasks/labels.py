"""Labels as GENEB reads them (docs/alphabet.md, "Labels"): checked as written, integers used as they are,
names mapped to 0..n-1 in sorted order; every refusal names task, split, row and value."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from geneb.tasks.validation import Problems


class TaskDataError(ValueError):
    """Task data that breaks a rule (labels, classes, columns); the message names task, split, row, value.
    `kind` names the rule (the group of the validation report)."""

    def __init__(self, message: str, kind: str = "task data") -> None:
        super().__init__(message)
        self.kind = kind


class TaskValidationError(TaskDataError):
    """Every problem of a task's files, found in one pass (`problems`, a geneb.tasks.validation.Problems); the
    message is its grouped summary."""

    def __init__(self, problems: Problems) -> None:
        super().__init__(problems.summary(), "validation")
        self.problems = problems


INTEGER_LABEL = re.compile(r"-?[0-9]+")
NUMBER_LIKE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
INT64_MAX = 2**63 - 1


def _as_int(text: str) -> int | None:
    """The value of a plain integer label ('0', '1', '-1'); None for anything else."""
    return int(text) if INTEGER_LABEL.fullmatch(text) else None


def check_label(value: object, *, task: str, split: str, row: int) -> str:
    """The label's text, unchanged, after the label policy (docs/alphabet.md, "Labels"): not empty, no
    whitespace around it (' HepG2' would be another class than 'HepG2'), an integer written plainly ('1', not
    '1.0', '+1' or '1e0': GENEB never rounds a label) and within int64. Raises TaskDataError naming task,
    split, row and value."""
    text = str(value)
    where = f"task {task!r}, split {split!r}, row {row}"
    if not text.strip():
        raise TaskDataError(f"{where}: empty label", "empty label")
    if text != text.strip():
        raise TaskDataError(
            f"{where}: label {text!r} has whitespace around it; labels are read as written", "label with whitespace"
        )
    if INTEGER_LABEL.fullmatch(text):
        if abs(int(text)) > INT64_MAX:
            raise TaskDataError(f"{where}: integer label {text!r} is outside the int64 range", "label beyond int64")
    elif NUMBER_LIKE.fullmatch(text):
        raise TaskDataError(
            f"{where}: label {text!r} is a number but not a plain integer; write class labels as "
            "0, 1, ... (GENEB never rounds or converts a label)",
            "label not a plain integer",
        )
    return text


def label_encoding(
    raw: dict[str, pd.DataFrame], *, task: str, problems: Problems | None = None
) -> dict[str, int] | None:
    """How the raw labels of all splits map to class indices.

    Integer labels (every label parses as an integer) are used as they are: returns None. Named labels (no
    label parses as an integer, e.g. 'HepG2'/'K562') map to 0..n-1 in sorted name order, which keeps the
    paper protocol's "classes in sorted label order". A label `check_label` refuses, and every row whose label
    kind (integer or name) is the minority one, is a problem: added to `problems`, or (None) raised as
    TaskDataError at the first one. Rows with such problems are left out of the encoding.
    """
    collect = Problems(task) if problems is None else problems
    seen: dict[bool, list[tuple[str, int, str]]] = {True: [], False: []}
    for split, df in raw.items():
        for row, v in zip(df["row"], df["label"]):
            try:
                text = check_label(v, task=task, split=split, row=int(row))
            except TaskDataError as err:
                if problems is None:
                    raise
                collect.add(err.kind, split, int(row), str(err))
                continue
            seen[_as_int(text) is not None].append((split, int(row), text))
    if seen[True] and seen[False]:
        major = len(seen[True]) >= len(seen[False])  # the minority kind is reported, row by row
        split, row, text = seen[major][0]
        for s2, r2, t2 in seen[not major]:
            message = (
                f"task {task!r}, split {s2!r}, row {r2}: label {t2!r} is "
                f"{'an integer' if not major else 'not an integer'} while other labels are "
                f"{'names' if not major else 'integers'} (e.g. split {split!r}, row {row}: {text!r}); labels must be "
                "all integers or all names"
            )
            if problems is None:
                raise TaskDataError(message, "mixed integer and named labels")
            collect.add("mixed integer and named labels", s2, r2, message)
        return None
    if not seen[False]:
        return None
    return {name: i for i, name in enumerate(sorted({t for _, _, t in seen[False]}))}


def label_names(raw: dict[str, pd.DataFrame], encoding: dict[str, int] | None) -> dict[int, str]:
    """{class index: the label as written in the files}, for messages that name a class: the name for named labels
    (the inverse of `encoding`), the integer's text for integer labels (forms of one integer that differ, such as
    '1' and '01', joined by '/'). A label `check_label` refuses is left out; an index without a written form (none
    here) is named by its number in `label_text`."""
    if encoding is not None:
        return {i: name for name, i in encoding.items()}
    forms: dict[int, set[str]] = {}
    for df in raw.values():
        for v in pd.unique(df["label"].astype(str)):
            value = _as_int(v)
            if value is not None:
                forms.setdefault(value, set()).add(v)
    return {value: "/".join(sorted(texts)) for value, texts in forms.items()}


def parse_labels(
    raw: pd.Series, rows: pd.Series, encoding: dict[str, int] | None, *, task: str, split: str
) -> np.ndarray:
    """Labels as int64 (n,), through `encoding` for named labels (see label_encoding). Raises TaskDataError
    naming the row for a label outside the encoding or a non-integer label."""
    values = np.empty(len(raw), dtype=np.int64)
    for i, (row, v) in enumerate(zip(rows, raw)):
        values[i] = label_value(v, encoding, task=task, split=split, row=int(row))
    return values


def label_value(v: object, encoding: dict[str, int] | None, *, task: str, split: str, row: int) -> int:
    """One label's class index (see parse_labels)."""
    text = check_label(v, task=task, split=split, row=row)
    value = encoding.get(text) if encoding is not None else _as_int(text)
    if value is None:
        raise TaskDataError(
            f"task {task!r}, split {split!r}, row {row}: label {v!r} is not an integer", "label not an integer"
        )
    return value
