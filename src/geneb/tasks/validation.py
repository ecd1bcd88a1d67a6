"""What a valid task file is: the alphabet policy, hygiene reports, labels as GENEB reads them, and the
one-pass validation of a task's files.

The sequence alphabet policy, applied in one place (docs/alphabet.md).

Policy (every choice configurable under `alphabet:` in config.yaml, and recorded in the task card):

* Case is kept in the stored sequence (soft-masking survives); models see `model_input(seq)`, the uppercase form.
* A, C, G, T and N are always allowed (either case).
* IUPAC ambiguity codes R Y S W K M B D H V are allowed when `allow_iupac` (default true), else an error.
* U (RNA) is an error unless `u_to_t`, which reads U/u as T/t.
* Whitespace anywhere is an error, unless `strip_whitespace`, which removes leading and trailing whitespace
  (spaces, tabs, '\\r', '\\n'); whitespace inside a sequence is always an error.
* An empty sequence (after stripping) is an error. Anything else (gaps '-', '.', digits, header text) is an error.

Errors never drop or alter a row silently: SequenceError names task, split, row, position and the character
(escaped, e.g. '\\r').

Data hygiene reports: duplicates within a split, train/test overlap (exact and reverse complement),
sequences that carry two labels. Reported in the task card; nothing is dropped.

Identity for all comparisons is case-insensitive (soft-masked and unmasked copies of one sequence are the
same sequence); reverse-complement overlap uses `canonical_key`, which is a comparison key only and is never
stored or fed to a model, so soft-masking survives.

One-pass validation of a task's files: every problem of every row collected, grouped by kind, reported
together (console and `resources/tasks/<task>/validation.json`), plus the per-split letter counts the card
records. Used by `geneb.tasks.prepare`; torch-free.

A problem is (kind, split, row, message); the message is the sentence a single error would have had (task,
split, row, value). `Problems.summary` shows the first `_SHOWN` of each kind and the count of the rest;
`Problems.as_dict` keeps up to `_KEPT` of each kind (the file stays small for a file of a million bad rows)
with the full count.

Labels as GENEB reads them (docs/alphabet.md, "Labels"): checked as written, integers used as they are,
names mapped to 0..n-1 in sorted order; every refusal names task, split, row and value.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from geneb.core.integrity import write_text_atomic

_ALWAYS_ALLOWED = "ACGTN"
#: what `strip_whitespace` removes at the ends of a sequence: space, tab, CR, LF (nothing else)
_STRIPPABLE = " \t\r\n"
#: IUPAC nucleotide ambiguity codes (NC-IUB 1984), N excluded (always allowed)
_IUPAC_AMBIGUITY = "RYSWKMBDHV"


class SequenceError(ValueError):
    """A sequence that breaks the alphabet policy; the message names task, split, row and character. `kind`
    names the rule it breaks (the group of a task's validation report, geneb.tasks.validation)."""

    def __init__(self, message: str, kind: str = "sequence") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class AlphabetPolicy:
    """See the module docstring. Build from config with `AlphabetPolicy.from_config(config["alphabet"])`."""

    strip_whitespace: bool = False
    u_to_t: bool = False
    allow_iupac: bool = True

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> AlphabetPolicy:
        section = dict(section or {})
        unknown = set(section) - {"strip_whitespace", "u_to_t", "allow_iupac"}
        if unknown:
            raise ValueError(f"unknown alphabet policy keys: {sorted(unknown)}")
        return cls(**section)

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)

    def allowed_letters(self) -> str:
        letters = _ALWAYS_ALLOWED + (_IUPAC_AMBIGUITY if self.allow_iupac else "") + ("U" if self.u_to_t else "")
        return letters + letters.lower()

    def _reason(self, ch: str, at_end: bool) -> tuple[str, str]:
        """(kind, reason) of a refused character."""
        if ch.isspace() and ch not in _STRIPPABLE:
            return "other whitespace or separator", (
                "a whitespace or separator character other than space, tab, CR and LF (never allowed)"
            )
        if ch.isspace():
            if at_end:
                return "whitespace at the ends", "whitespace (set alphabet.strip_whitespace to strip it at the ends)"
            return "whitespace inside a sequence", "whitespace inside a sequence (never allowed)"
        if ch.upper() == "U":
            return "RNA base U", "RNA base U (set alphabet.u_to_t to read it as T)"
        if ch.upper() in _IUPAC_AMBIGUITY:
            return "IUPAC ambiguity code", "IUPAC ambiguity code (alphabet.allow_iupac is false)"
        return "not a nucleotide code", "not a nucleotide code"

    def apply(self, seq: Any, *, task: str, split: str, row: int) -> str:
        """Check one sequence and return it as stored (case kept; stripped/U->T only where configured).

        Raises SequenceError for a non-string or empty sequence or a character outside the policy.
        """
        if not isinstance(seq, str):
            raise SequenceError(
                f"task {task!r}, split {split!r}, row {row}: sequence is {seq!r} (not text)", "sequence not text"
            )
        if self.strip_whitespace:
            seq = seq.strip(_STRIPPABLE)  # not str.strip(): that also eats NBSP, U+2028, \x1c-\x1f
        if not seq:
            raise SequenceError(f"task {task!r}, split {split!r}, row {row}: empty sequence", "empty sequence")
        if self.u_to_t:
            seq = seq.replace("U", "T").replace("u", "t")
        m = self._bad_char(seq)
        if m is not None:
            ch = m.group(0)
            at_end = not seq[: m.start()].strip() or not seq[m.start() :].strip()
            kind, reason = self._reason(ch, at_end)
            raise SequenceError(
                f"task {task!r}, split {split!r}, row {row}: character {ch!r} at position {m.start()} "
                f"is not allowed ({reason}); sequence begins {seq[:30]!r}",
                kind,
            )
        return seq

    def _bad_char(self, seq: str) -> re.Match[str] | None:
        return _pattern(self.allowed_letters()).search(seq)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(allowed: str) -> re.Pattern[str]:
    if allowed not in _PATTERNS:
        _PATTERNS[allowed] = re.compile(f"[^{re.escape(allowed)}]")
    return _PATTERNS[allowed]


def model_input(seq: str) -> str:
    """The form every model sees: uppercase. Stored sequences keep their case (soft-masking)."""
    return seq.upper()


_COMPLEMENT = str.maketrans(
    "ACGTURYSWKMBDHVNacgturyswkmbdhvn",
    "TGCAAYRSWMKVHDBNtgcaayrswmkvhdbn",
)


def reverse_complement(seq: str) -> str:
    """Reverse complement of a DNA sequence; keeps case; IUPAC codes map to their complements (U -> A)."""
    return seq.translate(_COMPLEMENT)[::-1]


def identity_key(seq: str) -> str:
    """Case-insensitive identity of a sequence (the key for exact-duplicate checks)."""
    return seq.upper()


def canonical_key(seq: str) -> str:
    """Strand-independent, case-insensitive key: the lexicographically smaller of the sequence and its
    reverse complement, uppercased. For comparisons only; the stored sequence is untouched."""
    up = seq.upper()
    rc = reverse_complement(up)
    return min(up, rc)


def within_split_duplicates(df: pd.DataFrame) -> dict[str, Any]:
    """Duplicates inside one split.

    df: columns `row`, `sequence`, `label`. Returns `n_duplicate_rows` (rows repeating an earlier row's
    sequence), `duplicate_rows` (their row ids), `class_counts` and `class_counts_dedup` (after keeping the
    first row of each (sequence, label)), `_conflicting_label_sequences` (sequences seen with >1 label), and
    `n_rc_duplicate_rows` / `rc_duplicate_rows`: rows that are not such a repeat but whose reverse complement
    (`canonical_key`) is an earlier row of the split (reported only; the dedup scores drop exact repeats).
    """
    keys = df["sequence"].map(identity_key)
    dup_mask = keys.duplicated(keep="first")
    rc_mask = df["sequence"].map(canonical_key).duplicated(keep="first") & ~dup_mask
    pair_dup = pd.DataFrame({"k": keys, "y": df["label"]}).duplicated(keep="first")
    labels_per_seq = pd.DataFrame({"k": keys, "y": df["label"]}).groupby("k")["y"].nunique()
    counts = Counter(int(v) for v in df["label"])
    counts_dedup = Counter(int(v) for v in df.loc[~pair_dup.to_numpy(), "label"])
    return {
        "n_duplicate_rows": int(dup_mask.sum()),
        "duplicate_rows": [int(r) for r in df.loc[dup_mask.to_numpy(), "row"]],
        "dedup_drop_rows": [int(r) for r in df.loc[pair_dup.to_numpy(), "row"]],
        "class_counts": {str(k): counts[k] for k in sorted(counts)},
        "class_counts_dedup": {str(k): counts_dedup[k] for k in sorted(counts_dedup)},
        "conflicting_label_sequences": int((labels_per_seq > 1).sum()),
        "n_rc_duplicate_rows": int(rc_mask.sum()),
        "rc_duplicate_rows": [int(r) for r in df.loc[rc_mask.to_numpy(), "row"]],
    }


def train_test_overlap(train: pd.DataFrame, test: pd.DataFrame) -> dict[str, Any]:
    """Test rows whose sequence occurs in train: `exact` (same sequence, any case) and `reverse_complement`
    (same canonical key but not an exact match), with the test row ids of each and how many overlapping
    test rows (exact or reverse-complement) carry a label that differs from a train copy, or whose train
    copies disagree among themselves (`label_conflicts`). `case_only` / `case_only_rows`: the `exact` rows
    that differ from every train copy in letter case only (soft-masked on one side), counted inside `exact`
    and apart."""
    train_exact: dict[str, set[int]] = {}
    train_canon: dict[str, set[int]] = {}
    train_bytes = set(train["sequence"])
    for seq, y in zip(train["sequence"], train["label"]):
        train_exact.setdefault(identity_key(seq), set()).add(int(y))
        train_canon.setdefault(canonical_key(seq), set()).add(int(y))
    exact_rows, rc_rows, case_rows, conflicts = [], [], [], 0
    for row, seq, y in zip(test["row"], test["sequence"], test["label"]):
        k = identity_key(seq)
        if k in train_exact:
            exact_rows.append(int(row))
            if seq not in train_bytes:
                case_rows.append(int(row))
            labels = train_exact[k]
        elif (c := canonical_key(seq)) in train_canon:
            rc_rows.append(int(row))
            labels = train_canon[c]
        else:
            continue
        conflicts += int(int(y) not in labels or len(labels) > 1)
    return {
        "exact": len(exact_rows),
        "reverse_complement": len(rc_rows),
        "exact_rows": exact_rows,
        "case_only": len(case_rows),
        "case_only_rows": case_rows,
        "reverse_complement_rows": rc_rows,
        "label_conflicts": conflicts,
    }


def _conflicting_label_sequences(
    splits: dict[str, pd.DataFrame],
) -> list[tuple[str, dict[int, dict[str, list[int]]]]]:
    """The sequences that occur with more than one label, within a split or across splits (case-insensitive
    identity, `identity_key`; reverse complements are not matched): [(identity key, {label: {split: row ids}})],
    in order of first occurrence (splits in the given order), labels in order of first occurrence.

    splits: {split: frame with columns `row`, `sequence`, `label`}."""
    seen: dict[str, dict[int, dict[str, list[int]]]] = {}
    for split, df in splits.items():
        for row, seq, y in zip(df["row"], df["sequence"], df["label"]):
            seen.setdefault(identity_key(str(seq)), {}).setdefault(int(y), {}).setdefault(split, []).append(int(row))
    return [(key, where) for key, where in seen.items() if len(where) > 1]


#: problems of one kind shown in the error message (the rest are counted)
_SHOWN = 5
#: problems of one kind kept in validation.json (the rest are counted)
_KEPT = 1000
#: row ids one message lists (a label's test rows, a sequence's rows); the count of all follows
_ROWS_SHOWN = 10
#: what a message's "row N" means (the summary's header says it)
_ROW_NUMBERING = "rows are 0-based data rows of the file: row 0 is file line 2, the header being line 1"
#: a row whose N fraction is above this is "mostly N" in the card's letter counts
_MOSTLY_N = 0.5
_VALIDATION_SCHEMA_VERSION = "1"
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
    """One problem: its kind, split, first row (None for a split-level problem) and message; `rows`: every row it
    concerns where that is more than `row` (a class whose rows all break a rule; a one-class split: all of it)."""

    kind: str
    split: str | None
    row: int | None
    message: str
    rows: tuple[int, ...] = ()

    def row_keys(self) -> set[tuple[str | None, int]]:
        """The (split, row) pairs this problem concerns."""
        return {(self.split, r) for r in (self.rows or (() if self.row is None else (self.row,)))}


class Problems:
    """The problems found in one task's files, in the order found."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.items: list[Problem] = []

    def add(self, kind: str, split: str | None, row: int | None, message: str, rows: Sequence[int] = ()) -> None:
        """Record a problem; rows: every row it concerns where there are several (`Problem.rows`)."""
        self.items.append(Problem(kind, split, row, message, tuple(int(r) for r in rows)))

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

    def summary(self, shown: int = _SHOWN) -> str:
        """Every kind with its count and first `shown` messages; what the task's error says."""
        groups = self.grouped()
        rows = set().union(*(p.row_keys() for p in self.items))
        lines = [
            f"task {self.task!r}: {len(self.items)} problem(s) of {len(groups)} kind(s) in {len(rows)} row(s); "
            f"every row was checked (full list: validation.json beside the card); {_ROW_NUMBERING}"
        ]
        for kind, items in groups.items():
            lines.append(f"  {kind} ({len(items)}):")
            lines.extend(f"    {p.message}" for p in items[:shown])
            if len(items) > shown:
                lines.append(f"    ... and {len(items) - shown} more")
        return "\n".join(lines)

    def as_dict(self, kept: int = _KEPT) -> dict[str, Any]:
        """The machine-readable report: ok, counts, and per kind up to `kept` problems."""
        return {
            "schema_version": _VALIDATION_SCHEMA_VERSION,
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
    iupac = set(_IUPAC_AMBIGUITY)
    for before, seq in zip(raw, stored):
        text = str(before)
        counts["rows_whitespace_stripped"] += int(policy_strip and text != text.strip(_STRIPPABLE))
        counts["rows_u_mapped"] += int(policy_u and ("U" in text or "u" in text))
        up = seq.upper()
        counts["rows_iupac"] += int(not iupac.isdisjoint(up))
        lower = sum(1 for c in seq if c.islower())
        counts["rows_lowercase"] += int(lower > 0)
        counts["lowercase_bases"] += lower
        n = up.count("N")
        counts["rows_n"] += int(n > 0)
        counts["rows_all_n"] += int(n == len(up))
        counts["rows_mostly_n"] += int(n > _MOSTLY_N * len(up))
    return counts


def _rows_text(rows: Iterable[int], shown: int = _ROWS_SHOWN) -> str:
    """Row ids as a message names them: 'row 3', 'rows 3, 17, 250' or 'rows 3, 17, ..., 250, ... (12 rows)' (the
    first `shown`, then the count). Row ids are GENEB's: 0-based data rows of the source file (ROW_NUMBERING)."""
    ids = [int(r) for r in rows]
    if len(ids) == 1:
        return f"row {ids[0]}"
    head = ", ".join(str(r) for r in ids[:shown])
    return f"rows {head}" + (f", ... ({len(ids)} rows)" if len(ids) > shown else "")


def _label_text(code: int, names: dict[int, str] | None) -> str:
    """A class as the files write it: `names[code]` quoted ('other'), or the index quoted where `names` lacks it."""
    return repr(str((names or {}).get(int(code), code)))


def _labels_with_rows(df: pd.DataFrame, names: dict[int, str] | None, shown: int = _ROWS_SHOWN) -> str:
    """ "'a' (rows 0, 2), 'b' (row 1)": every label of a split with its rows, in class order."""
    parts = []
    for code, group in df.groupby("label", sort=True)["row"]:
        rows = group.tolist()
        # the stubs type a group key as any scalar; labels are int64 class indices here
        parts.append(f"{_label_text(int(cast(int, code)), names)} ({_rows_text(rows, shown)})")
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
    (`geneb.tasks.validation.label_names`), so that a message names 'other', not the index GENEB gave it."""
    problems = Problems(task)
    train, test = splits["train"], splits["test"]
    train_classes = sorted(set(np.unique(train["label"]).tolist()))
    test_classes = sorted(set(np.unique(test["label"]).tolist()))
    train_labels = ", ".join(_label_text(c, names) for c in train_classes)
    if len(test_classes) < 2 and single_class_test != "keep":
        only = _label_text(test_classes[0], names) if test_classes else "none"
        problems.add(
            "one class in test",
            "test",
            None,
            f"task {task!r}, split 'test': only one label, {only} (all {len(test)} rows); MCC would "
            "be 0 for every model. Fix the split, or set task_checks.single_class_test: keep to score it "
            "flagged and outside the category means",
            rows=test["row"].tolist(),
        )
    for code in sorted(set(test_classes) - set(train_classes)):
        rows = test.loc[test["label"] == code, "row"].tolist()
        problems.add(
            "test class not in train",
            "test",
            int(rows[0]),
            f"task {task!r}, split 'test': label {_label_text(code, names)} ({_rows_text(rows)}) does not occur in train "
            f"(train labels: {train_labels})",
            rows=rows,
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
        only = _label_text(train_classes[0], names) if train_classes else "none"
        problems.add(
            "one class",
            "train",
            None,
            f"task {task!r}, split 'train': only one label, {only} (all {len(train)} rows)",
            rows=train["row"].tolist(),
        )
    return problems


def conflicting_label_problems(
    splits: dict[str, pd.DataFrame], *, task: str, names: dict[int, str] | None = None
) -> Problems:
    """Sequences that occur with two or more labels (case-insensitive identity, `geneb.tasks.validation.identity_key`),
    within a split or between train and test: one problem per sequence, naming its start, its length and every
    label with the splits and rows that carry it (what task_checks.conflicting_labels: error refuses). A reverse
    complement with another label is not one (a strand-specific task may label the strands apart; the card's
    train_test_overlap counts it)."""
    problems = Problems(task)
    for key, where in _conflicting_label_sequences(splits):
        parts = []
        for code, places in where.items():
            at = "; ".join(f"{split} {_rows_text(rows)}" for split, rows in places.items())
            parts.append(f"{_label_text(code, names)} ({at})")
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


_INTEGER_LABEL = re.compile(r"-?[0-9]+")
_NUMBER_LIKE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INT64_MAX = 2**63 - 1


def _as_int(text: str) -> int | None:
    """The value of a plain integer label ('0', '1', '-1'); None for anything else."""
    return int(text) if _INTEGER_LABEL.fullmatch(text) else None


def _check_label(value: object, *, task: str, split: str, row: int) -> str:
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
    if _INTEGER_LABEL.fullmatch(text):
        if abs(int(text)) > _INT64_MAX:
            raise TaskDataError(f"{where}: integer label {text!r} is outside the int64 range", "label beyond int64")
    elif _NUMBER_LIKE.fullmatch(text):
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
    paper protocol's "classes in sorted label order". A label `_check_label` refuses, and every row whose label
    kind (integer or name) is the minority one, is a problem: added to `problems`, or (None) raised as
    TaskDataError at the first one. Rows with such problems are left out of the encoding.
    """
    collect = Problems(task) if problems is None else problems
    seen: dict[bool, list[tuple[str, int, str]]] = {True: [], False: []}
    for split, df in raw.items():
        for row, v in zip(df["row"], df["label"]):
            try:
                text = _check_label(v, task=task, split=split, row=int(row))
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
    '1' and '01', joined by '/'). A label `_check_label` refuses is left out; an index without a written form (none
    here) is named by its number in `_label_text`."""
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
    text = _check_label(v, task=task, split=split, row=row)
    value = encoding.get(text) if encoding is not None else _as_int(text)
    if value is None:
        raise TaskDataError(
            f"task {task!r}, split {split!r}, row {row}: label {v!r} is not an integer", "label not an integer"
        )
    return value
