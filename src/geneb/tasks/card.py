"""The task card (`resources/tasks/{task}/card.json`): one typed `TaskCard`, written by `write_card` (from
`geneb.tasks.prepare.prepare_task`) and read by `read_card` (extraction, probing, the comparison with the
paper), side by side here so the layout has one home.

Keys and meanings: docs/data-dictionary.md, stage 1. `TaskCard.from_dict` types what the consumers read (the
data identity, category, classes, per-split counts and duplicates, train/test overlap, caps) and keeps the
whole mapping (`as_dict`), which `write_card` writes: the file is `json.dumps(card, indent=1,
sort_keys=True)`, byte for byte what it was before the card was typed. Torch-free.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geneb.core import integrity


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
    from the card's keys. The whole mapping stays available through `as_dict` (what `write_card` writes)."""

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


def card_text(card: TaskCard) -> str:
    """The card's file content: JSON, indent 1, keys sorted (the layout of every card written so far)."""
    return json.dumps(card.as_dict(), indent=1, sort_keys=True)


def write_card(path: str | Path, card: TaskCard) -> None:
    """Write `card` to `path` atomically, with its digest (`card_text`, `geneb.core.integrity`)."""
    integrity.write_text(Path(path), card_text(card))


def read_card(path: str | os.PathLike[str]) -> TaskCard:
    """The task card at `path` (`resources/tasks/{task}/card.json`). Raises OSError / json.JSONDecodeError for
    a missing or broken file, KeyError for a card without task, category or data_hash, IntegrityError naming it when
    its bytes differ from the digest recorded when it was written (`geneb.core.integrity`)."""
    return TaskCard.from_dict(integrity.read_json(path))
