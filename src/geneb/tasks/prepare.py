"""Preparing a task: caps, the task card and `prepare_task`.

Per-task caps: a seeded, stratified subsample of a split, recorded in the task card.

Allocation (largest-remainder rule): class c gets floor(cap * n_c / n) rows, the leftover rows go to the
classes with the largest fractional parts (ties broken by sorted label), and every class present keeps at
least one row when the cap allows. Within a class, rows are drawn without replacement by
`numpy.random.default_rng(seed).choice`, classes taken in sorted label order; the kept rows are returned in
source order. A pure function of (labels, cap, seed).

The task card (`resources/tasks/{task}/card.json`): one typed `TaskCard`, written by `_write_card` (from
`geneb.tasks.prepare.prepare_task`) and read by `read_card` (extraction, probing, the comparison with the
paper), side by side here so the layout has one home.

Keys and meanings: docs/data-dictionary.md, stage 1. `TaskCard.from_dict` types what the consumers read (the
data identity, category, classes, per-split counts and duplicates, train/test overlap, caps) and keeps the
whole mapping (`as_dict`), which `_write_card` writes: the file is `json.dumps(card, indent=1,
sort_keys=True)`, byte for byte what it was before the card was typed. Torch-free.

`prepare_task`: a source task -> checked parquet splits plus a task card (JSON).

Steps, per split (train, test): read the raw rows from the source; check labels (integers, classes of test
seen in train, class count as catalogued); apply the alphabet policy to every row (an error names task,
split, row and character); apply the optional cap (seeded, stratified, recorded); report duplicates, train/test
overlap (exact and reverse complement) and conflicting labels in the card. Nothing is dropped silently: the
only rows removed are those a configured cap removes, and the card records which.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.core.categories import check_category
from geneb.tasks.sources import SPLITS, TaskSource, TaskSourceError
from geneb.tasks.validation import (
    AlphabetPolicy,
    Problems,
    SequenceError,
    TaskDataError,
    TaskValidationError,
    class_problems,
    conflicting_label_problems,
    label_encoding,
    label_names,
    label_value,
    letter_counts,
    parse_labels,
    train_test_overlap,
    within_split_duplicates,
    write_report,
)


def stratified_cap(labels: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """Positions (sorted, int64) of at most `cap` rows, stratified by `labels` (shape (n,)).

    Returns all positions when n <= cap. Raises ValueError if cap < number of classes (a class would vanish).
    """
    labels = np.asarray(labels)
    n = len(labels)
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    classes, counts = np.unique(labels, return_counts=True)
    if cap < len(classes):
        raise ValueError(f"cap {cap} is smaller than the number of classes ({len(classes)}); a class would vanish")
    exact = cap * counts / n
    take = np.maximum(np.floor(exact).astype(int), 1)
    while take.sum() > cap:  # the max(…, 1) floor can overshoot: trim the most over-allocated class that has > 1
        take[np.argmax(np.where(take > 1, take - exact, -np.inf))] -= 1
    leftover = cap - take.sum()
    order = np.lexsort((np.arange(len(classes)), -(exact - np.floor(exact))))
    for i in order:
        if leftover == 0:
            break
        if take[i] < counts[i]:
            take[i] += 1
            leftover -= 1
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(labels == c), size=int(k), replace=False) for c, k in zip(classes, take)]
    return np.sort(np.concatenate(picked)).astype(np.int64)


@dataclass(frozen=True)
class SplitSummary:
    """One split of the card (`splits.{train,test}`): rows kept (`n`) and in the source (`n_source`), length
    range, rows per class (all and after dedup), within-split duplicates (`n_duplicate_rows`,
    `duplicate_rows`), the rows the `*_dedup` scores leave out (`dedup_drop_rows`), sequences with more than
    one label, and reverse-complement repeats. Counts a card lacks are None, row lists empty."""

    n: int | None = None
    n_source: int | None = None
    len_min: int | None = None
    len_max: int | None = None
    len_median: int | None = None
    class_counts: Mapping[str, int] = field(default_factory=dict)
    class_counts_dedup: Mapping[str, int] = field(default_factory=dict)
    n_duplicate_rows: int | None = None
    duplicate_rows: tuple[int, ...] = ()
    dedup_drop_rows: tuple[int, ...] = ()
    conflicting_label_sequences: int | None = None
    n_rc_duplicate_rows: int | None = None
    rc_duplicate_rows: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SplitSummary:
        rows = ("duplicate_rows", "dedup_drop_rows", "rc_duplicate_rows")
        counts = ("class_counts", "class_counts_dedup")
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in known}
        values.update({k: tuple(int(r) for r in data[k]) for k in rows if k in data})
        values.update({k: dict(data[k]) for k in counts if k in data})
        return cls(**values)


@dataclass(frozen=True)
class SplitCap:
    """The cap applied to one split (`caps.{split}`): the cap, its seed, rows in the source and kept, and the
    kept row ids' sha256."""

    cap: int | None = None
    seed: int | None = None
    n_source: int = 0
    n_kept: int = 0
    kept_rows_sha256: str | None = None

    @property
    def cut(self) -> bool:
        """Whether the cap removed rows (fewer kept than in the source)."""
        return self.n_kept < self.n_source

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SplitCap:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Overlap:
    """Test rows also in train (`train_test_overlap`): exact and reverse-complement counts and row ids, how
    many overlapping rows carry a conflicting label, and the exact ones that differ in letter case only."""

    exact: int = 0
    reverse_complement: int = 0
    exact_rows: tuple[int, ...] = ()
    reverse_complement_rows: tuple[int, ...] = ()
    label_conflicts: int = 0
    case_only: int = 0
    case_only_rows: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Overlap:
        values = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for k in ("exact_rows", "reverse_complement_rows", "case_only_rows"):
            if k in data:
                values[k] = tuple(int(r) for r in data[k])
        return cls(**values)


@dataclass(frozen=True)
class TaskCard:
    """A task card. task, category, data_hash (sha256 of the prepared splits: the data identity every cache
    key downstream carries) are required; classes (train's class indices, sorted), label_names ({index: name}
    where the source labels are names, else None), splits ({split:
    SplitSummary}), overlap (`Overlap`, None when the card has none) and caps ({split: SplitCap}) are typed
    from the card's keys. The whole mapping stays available through `as_dict` (what `_write_card` writes)."""

    task: str
    category: str
    data_hash: str
    classes: tuple[int, ...] = ()
    label_names: Mapping[str, str] | None = None
    splits: Mapping[str, SplitSummary] = field(default_factory=dict)
    overlap: Overlap | None = None
    caps: Mapping[str, SplitCap] = field(default_factory=dict)
    _data: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TaskCard:
        """Type a card mapping (as `prepare_task` builds it or `read_card` reads it); the mapping is copied.
        Raises KeyError for a card without task, category or data_hash."""
        data = copy.deepcopy(dict(data))
        overlap = data.get("train_test_overlap")
        return cls(
            task=data["task"],
            category=data["category"],
            data_hash=data["data_hash"],
            classes=tuple(int(c) for c in data.get("classes") or ()),
            label_names=dict(data["label_names"]) if data.get("label_names") is not None else None,
            splits={s: SplitSummary.from_dict(v) for s, v in (data.get("splits") or {}).items()},
            overlap=Overlap.from_dict(overlap) if overlap is not None else None,
            caps={s: SplitCap.from_dict(v) for s, v in (data.get("caps") or {}).items()},
            _data=data,
        )

    def as_dict(self) -> dict[str, Any]:
        """The card mapping it was built from (a copy; every key, typed or not)."""
        return copy.deepcopy(dict(self._data))

    @property
    def source(self) -> str:
        """The resolved task source the card was prepared from ("" when the card does not say)."""
        return str(self._data.get("source", ""))

    @property
    def test_single_class(self) -> bool:
        """Whether the test split has one class (kept under task_checks.single_class_test: keep; flagged in the
        score rows and left out of category means)."""
        return bool((self._data.get("flags") or {}).get("test_single_class"))

    @property
    def test_missing_classes(self) -> tuple[int, ...]:
        """Training classes the test split lacks (`flags.test_missing_classes`; () when it has every class)."""
        return tuple(int(c) for c in (self._data.get("flags") or {}).get("test_missing_classes") or ())

    @property
    def no_base_rows(self) -> dict[str, tuple[int, ...]]:
        """{split: row ids} of rows without an A/C/G/T letter, kept and flagged (`flags.no_base_rows`)."""
        rows = (self._data.get("flags") or {}).get("no_base_rows") or {}
        return {split: tuple(int(r) for r in ids) for split, ids in rows.items()}

    def split(self, name: str) -> SplitSummary:
        """The summary of split `name`; an empty one when the card has none (e.g. no dedup rows listed)."""
        return self.splits.get(name, SplitSummary())

    def capped_splits(self) -> dict[str, SplitCap]:
        """{split: cap} of the splits a cap cut (fewer rows kept than in the source), in split-name order."""
        return {s: c for s, c in sorted(self.caps.items()) if c.cut}


def _card_text(card: TaskCard) -> str:
    """The card's file content: JSON, indent 1, keys sorted (the layout of every card written so far)."""
    return json.dumps(card.as_dict(), indent=1, sort_keys=True)


def _write_card(path: str | Path, card: TaskCard) -> None:
    """Write `card` to `path` atomically, with its digest (`_card_text`, `geneb.core.integrity`)."""
    integrity.write_text(Path(path), _card_text(card))


def read_card(path: str | os.PathLike[str]) -> TaskCard:
    """The task card at `path` (`resources/tasks/{task}/card.json`). Raises OSError / json.JSONDecodeError for
    a missing or broken file, KeyError for a card without task, category or data_hash, IntegrityError naming it when
    its bytes differ from the digest recorded when it was written (`geneb.core.integrity`)."""
    return TaskCard.from_dict(integrity.read_json(path))


_CARD_SCHEMA_VERSION = "1"
#: the catalogue columns a prepared task depends on (card fields, the class-count check, where to read it from);
#: only these are in the prepare_task rerun key, so a note, licence or organism edit reruns nothing
CATALOGUE_COLUMNS_USED = ("category", "n_classes", "task_set", "taxon_group", "source")


def data_hash(splits: dict[str, pd.DataFrame]) -> str:
    """sha256 (hex) of the prepared splits' (row, sequence, label) in order: the data identity every cache
    key downstream carries."""
    h = hashlib.sha256()
    for split in sorted(splits):
        df = splits[split]
        h.update(f"[{split}]\n".encode())
        for row, seq, y in zip(df["row"], df["sequence"], df["label"]):
            h.update(f"{row}\t{seq}\t{y}\n".encode())
    return h.hexdigest()


def _no_base_rows(df: pd.DataFrame) -> list[int]:
    """Row ids (`row` column) of the rows without a single A/C/G/T letter (all N, or N and ambiguity codes, any
    case): no model reads a base there (docs/footguns.md, rows skipped for one model only)."""
    has_base = df["sequence"].str.contains("[ACGTacgt]", regex=True)
    return [int(r) for r in df.loc[~has_base, "row"]]


def card_flags(splits: dict[str, pd.DataFrame], train_classes: set[int]) -> dict[str, Any]:
    """The card's `flags` (only those that hold): `test_single_class` (one class in test), `test_missing_classes`
    (training classes the test split lacks: AUROC is NaN for a multiclass task, and macro-F1 counts each such class
    0 under f1_labels task or leaves it out under present) and `_no_base_rows` ({split: row ids} of rows without
    A/C/G/T, kept under task_checks.no_base_rows: keep)."""
    flags: dict[str, Any] = {}
    test_classes = set(np.unique(splits["test"]["label"]).tolist())
    if len(test_classes) < 2:
        flags["test_single_class"] = True
    missing = sorted(int(c) for c in train_classes - test_classes)
    if missing:
        flags["test_missing_classes"] = missing
    rows = {split: _no_base_rows(df) for split, df in splits.items()}
    if any(rows.values()):
        flags["no_base_rows"] = {split: r for split, r in rows.items() if r}
    return flags


def _length_stats(seqs: pd.Series) -> dict[str, int]:
    lengths = seqs.str.len()
    return {"len_min": int(lengths.min()), "len_max": int(lengths.max()), "len_median": int(lengths.median())}


def read_raw_split(task: str, split: str, source: TaskSource) -> pd.DataFrame:
    """The raw split from `source` (columns row, sequence, label); raises TaskDataError if it has no rows."""
    raw = source.read_split(task, split)
    if raw.empty:
        raise TaskDataError(f"task {task!r}, split {split!r}: no rows in {source.description}", "split without rows")
    return raw


def check_split(
    raw: pd.DataFrame,
    encoding: dict[str, int] | None,
    policy: AlphabetPolicy,
    *,
    task: str,
    split: str,
    problems: Problems | None = None,
) -> pd.DataFrame:
    """Apply the label and alphabet checks to a raw split; columns row, sequence, label (int64).

    With `problems`, every row is checked and each sequence problem added there (label problems were added by
    `label_encoding`, which saw the same rows); the frame returned is then only meaningful if none was found.
    Without, the first problem raises (TaskDataError / SequenceError)."""
    if problems is None:
        labels = parse_labels(raw["label"], raw["row"], encoding, task=task, split=split)
        seqs = [policy.apply(s, task=task, split=split, row=int(r)) for r, s in zip(raw["row"], raw["sequence"])]
    else:
        labels = np.zeros(len(raw), dtype=np.int64)
        seqs = []
        for i, (r, v, seq) in enumerate(zip(raw["row"], raw["label"], raw["sequence"])):
            with contextlib.suppress(TaskDataError):  # already in `problems`: label_encoding saw every label
                labels[i] = label_value(v, encoding, task=task, split=split, row=int(r))
            try:
                seqs.append(policy.apply(seq, task=task, split=split, row=int(r)))
            except SequenceError as err:
                problems.add(err.kind, split, int(r), str(err))
                seqs.append("")
    return pd.DataFrame(
        {"row": raw["row"].astype(np.int64), "sequence": pd.Series(seqs, dtype="string"), "label": labels}
    )


def prepare_task(
    task: str,
    catalogue_row: dict[str, Any],
    source: TaskSource,
    policy: AlphabetPolicy,
    caps: dict[str, int | None],
    cap_seed: int,
    out_dir: str | Path,
    checks: dict[str, str] | None = None,
) -> TaskCard:
    """Prepare one task into `out_dir/{train,test}.parquet` and `out_dir/card.json`; returns the card
    (`geneb.tasks.prepare.TaskCard`, written with `_write_card`).

    catalogue_row: the task's row of config/tasks.tsv (category, n_classes, ...). caps: {"max_train": int|None,
    "max_test": int|None}. checks: config `task_checks` (single_class_test: error|keep, no_base_rows:
    keep|error, conflicting_labels: keep|error). Every row of both splits and every rule (labels, alphabet,
    rows without a base, sequences with two labels, the class rules, caps smaller than the label count) is
    checked before anything is refused: the problems are raised together as TaskValidationError (grouped by
    kind; labels named as the files write them, with their rows). `out_dir/validation.json` is written in every
    case (geneb.tasks.validation), and a previous card and splits are removed first, so a failed preparation
    never leaves a card a later run would trust. Raises TaskValidationError / TaskDataError / TaskSourceError.
    """
    out_dir = Path(out_dir)
    for name in ("card.json", *(f"{split}.parquet" for split in SPLITS)):
        (out_dir / name).unlink(missing_ok=True)
    try:
        card = _prepare(task, catalogue_row, source, policy, caps, cap_seed, out_dir, checks or {})
    except TaskValidationError as err:
        write_report(out_dir / "validation.json", err.problems)
        raise
    except (TaskDataError, TaskSourceError, SequenceError) as err:
        problems = Problems(task)
        problems.add(getattr(err, "kind", type(err).__name__), None, None, str(err))
        write_report(out_dir / "validation.json", problems)
        raise
    write_report(
        out_dir / "validation.json",
        Problems(task),
        {s: v.get("letters") for s, v in card.as_dict()["splits"].items()},
        flags=card.as_dict().get("flags") or {},
    )
    return card


def _prepare(
    task: str,
    catalogue_row: dict[str, Any],
    source: TaskSource,
    policy: AlphabetPolicy,
    caps: dict[str, int | None],
    cap_seed: int,
    out_dir: Path,
    checks: dict[str, str],
) -> TaskCard:
    category = check_category(str(catalogue_row["category"]))
    splits: dict[str, pd.DataFrame] = {}
    card_splits: dict[str, Any] = {}
    cap_record: dict[str, Any] = {}
    problems = Problems(task)
    raw: dict[str, pd.DataFrame] = {}
    for split in SPLITS:  # an empty split is one problem, the other split is still checked; a source that
        try:  # cannot be read at all (TaskSourceError) fails as it is
            raw[split] = read_raw_split(task, split, source)
        except TaskDataError as err:
            problems.add(err.kind, split, None, str(err))
    encoding = label_encoding(raw, task=task, problems=problems)
    names = label_names(raw, encoding)
    checked = {
        split: check_split(df, encoding, policy, task=task, split=split, problems=problems) for split, df in raw.items()
    }
    # every rule on the rows without a row problem, so that one run names everything to fix (no rule waits for
    # another to pass)
    bad = {(p.split, p.row) for p in problems.items}
    valid = {s: df[[(s, int(r)) not in bad for r in df["row"]]] if bad else df for s, df in checked.items()}
    if checks.get("no_base_rows", "keep") == "error":
        for split, df in valid.items():
            for row in _no_base_rows(df):
                problems.add(
                    "no base (all N)",
                    split,
                    row,
                    f"task {task!r}, split {split!r}, row {row}: no A/C/G/T letter (all N or ambiguity codes); "
                    "task_checks.no_base_rows: keep prepares it flagged",
                )
    if checks.get("conflicting_labels", "keep") == "error":
        problems.items.extend(conflicting_label_problems(valid, task=task, names=names).items)
    if set(valid) == set(SPLITS) and all(len(df) for df in valid.values()):
        single = checks.get("single_class_test", "error")
        problems.items.extend(
            class_problems(valid, catalogue_row, task=task, single_class_test=single, names=names).items
        )
        for split, df in valid.items():
            cap = caps.get(f"max_{split}")
            n_classes = df["label"].nunique()
            if cap is not None and len(df) > cap and cap < n_classes:
                problems.add(
                    "cap",
                    split,
                    None,
                    f"task {task!r}, split {split!r}: caps max_{split} {cap} is smaller than the split's "
                    f"{n_classes} labels; a label would vanish",
                )
    if problems:
        raise TaskValidationError(problems)
    for split in SPLITS:
        df = checked[split]
        letters = letter_counts(raw[split]["sequence"], df["sequence"], policy.strip_whitespace, policy.u_to_t)
        n_source = len(df)
        cap = caps.get(f"max_{split}")
        if cap is not None and n_source > cap:
            try:
                keep = stratified_cap(df["label"].to_numpy(), int(cap), cap_seed)
            except ValueError as err:
                raise TaskDataError(f"task {task!r}, split {split!r}: caps max_{split} {cap}: {err}", "cap") from err
            df = df.iloc[keep].reset_index(drop=True)
            kept_hash = hashlib.sha256(df["row"].to_numpy().tobytes()).hexdigest()
            cap_record[split] = {
                "cap": int(cap),
                "seed": cap_seed,
                "n_source": n_source,
                "n_kept": len(df),
                "kept_rows_sha256": kept_hash,
            }
        splits[split] = df
        dups = within_split_duplicates(df)
        card_splits[split] = {
            "n": len(df),
            "n_source": n_source,
            **_length_stats(df["sequence"]),
            **dups,
            "letters": letters,
        }

    train_classes = set(np.unique(splits["train"]["label"]).tolist())

    card = TaskCard.from_dict(
        {
            "schema_version": _CARD_SCHEMA_VERSION,
            "task": task,
            "category": category,
            "task_set": catalogue_row.get("task_set", ""),
            "taxon_group": catalogue_row.get("taxon_group", ""),
            "source": source.description,
            "n_classes": len(train_classes),
            "classes": sorted(int(c) for c in train_classes),
            "label_names": {str(i): name for name, i in encoding.items()} if encoding else None,
            "splits": card_splits,
            "train_test_overlap": train_test_overlap(splits["train"], splits["test"]),
            "caps": cap_record,
            "alphabet_policy": policy.as_dict(),
            "data_hash": data_hash(splits),
            **({"flags": flags} if (flags := card_flags(splits, train_classes)) else {}),
        }
    )
    for split, df in splits.items():
        integrity.write_parquet(df, out_dir / f"{split}.parquet")
    _write_card(out_dir / "card.json", card)
    return card


def _report_lines(card: TaskCard) -> list[str]:
    """Human-readable summary of a task card (what `prepare_task` logs)."""
    lines = [f"task {card.task} ({card.category}), source {card.source}, data hash {card.data_hash[:12]}"]
    for split, s in card.splits.items():
        lines.append(
            f"  {split}: {s.n} rows (source {s.n_source}), lengths {s.len_min}-{s.len_max}, classes "
            f"{dict(s.class_counts)}, within-split duplicates {s.n_duplicate_rows} (classes after dedup "
            f"{dict(s.class_counts_dedup)}), sequences with >1 label {s.conflicting_label_sequences}"
        )
    ov = card.overlap
    if ov is not None:
        lines.append(
            f"  test rows also in train: exact {ov.exact} (of which case-only {ov.case_only}), reverse complement "
            f"{ov.reverse_complement}"
        )
    for split, c in card.caps.items():
        lines.append(f"  {split} capped to {c.n_kept} of {c.n_source} rows (seed {c.seed}, stratified)")
    return lines


def prepare_from_params(
    task: str,
    params: dict[str, Any],
    source_spec: str,
    card_path: str | Path,
    *,
    lock_path: str | Path | None = None,
    download: dict[str, Any] | None = None,
) -> TaskCard:
    """Entry point of the `prepare_task` rule: `params` is common.smk's `task_params` (catalogue row, source
    identity, alphabet policy, caps, cap seed); `source_spec` is where to read the task (the source string
    resolved from config and environment); outputs go beside `card_path`. For a mirror folder, the files
    read must be the ones whose digests are in `params` (else TaskSourceError: the data changed after the
    workflow was planned).

    lock_path: the task lock (config `task_lock`, `geneb.tasks.catalogue`; None: no lock, for callers outside a run).
    Before anything is read, the source's files for the task (`TaskSource.source_files`: downloaded, or the
    cached copies, for an http mirror) are compared with the task's lock entry, and a difference raises
    TaskLockError naming task, file, expected and found digests; a task not locked yet is recorded there once it
    is prepared. download: config `task_download` ({deadline_s, read_timeout_s}: an http mirror's overall limit
    per file and per read, seconds). Logs the card summary."""
    import logging

    from geneb.core.download import DEFAULT_DEADLINE_S, DEFAULT_READ_TIMEOUT_S
    from geneb.tasks.catalogue import check_files, record_files
    from geneb.tasks.sources import TaskSourceError, open_source, source_identity

    planned = params.get("source_identity")
    if planned is not None and planned.get("files") and source_identity(source_spec, task) != planned:
        raise TaskSourceError(
            f"task {task!r}: the files under {source_spec} changed after the workflow was planned; run again"
        )
    download = download or {}
    limits = {k: float(download[k]) for k in ("deadline_s", "read_timeout_s") if download.get(k) is not None}
    source = open_source(
        source_spec,
        deadline_s=limits.get("deadline_s", DEFAULT_DEADLINE_S),
        read_timeout_s=limits.get("read_timeout_s", DEFAULT_READ_TIMEOUT_S),
    )
    files: dict[str, Path] = {}
    entry = None
    if lock_path is not None:
        try:
            files = source.source_files(task)
            entry = check_files(lock_path, task, source_spec, files)
        except TaskSourceError as err:  # as prepare_task reports its own: no card left, the error in validation.json
            out_dir = Path(card_path).parent
            for name in ("card.json", *(f"{split}.parquet" for split in SPLITS)):
                (out_dir / name).unlink(missing_ok=True)
            problems = Problems(task)
            problems.add(type(err).__name__, None, None, str(err))
            write_report(out_dir / "validation.json", problems)
            raise
    card = prepare_task(
        task,
        params["catalogue_row"],
        source,
        AlphabetPolicy.from_config(params["alphabet"]),
        params["caps"],
        int(params["cap_seed"]),
        Path(card_path).parent,
        params.get("task_checks"),
    )
    log = logging.getLogger(__name__)
    if lock_path is not None and entry is None:
        record_files(lock_path, task, source_spec, files)
        log.info(f"task {task}: {len(files)} source file(s) recorded in the task lock {lock_path}")
    elif lock_path is not None:
        log.info(f"task {task}: {len(files)} source file(s) match the task lock {lock_path}")
    for line in _report_lines(card):
        log.info(line)
    return card
