"""`prepare_task`: a source task -> checked parquet splits plus a task card (JSON).

Steps, per split (train, test): read the raw rows from the source; check labels (integers, classes of test
seen in train, class count as catalogued); apply the alphabet policy to every row (an error names task,
split, row and character); apply the optional cap (seeded, stratified, recorded); report duplicates, train/test
overlap (exact and reverse complement) and conflicting labels in the card. Nothing is dropped silently: the
only rows removed are those a configured cap removes, and the card records which.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.atomic import atomic_path
from geneb.categories import check_category
from geneb.tasks.alphabet import AlphabetPolicy
from geneb.tasks.caps import stratified_cap
from geneb.tasks.card import TaskCard, write_card
from geneb.tasks.hygiene import train_test_overlap, within_split_duplicates
from geneb.tasks.sources import SPLITS, TaskSource

CARD_SCHEMA_VERSION = "1"
#: the catalogue columns a prepared task depends on (card fields, the class-count check, where to read it from);
#: only these are in the prepare_task rerun key, so a note, licence or organism edit reruns nothing (case B44)
CATALOGUE_COLUMNS_USED = ("category", "n_classes", "task_set", "taxon_group", "source")


class TaskDataError(ValueError):
    """Task data that breaks a rule (labels, classes, columns); the message names task, split, row, value."""


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
        raise TaskDataError(f"{where}: empty label")
    if text != text.strip():
        raise TaskDataError(f"{where}: label {text!r} has whitespace around it; labels are read as written")
    if INTEGER_LABEL.fullmatch(text):
        if abs(int(text)) > INT64_MAX:
            raise TaskDataError(f"{where}: integer label {text!r} is outside the int64 range")
    elif NUMBER_LIKE.fullmatch(text):
        raise TaskDataError(
            f"{where}: label {text!r} is a number but not a plain integer; write class labels as "
            "0, 1, ... (GENEB never rounds or converts a label)"
        )
    return text


def label_encoding(raw: dict[str, pd.DataFrame], *, task: str) -> dict[str, int] | None:
    """How the raw labels of all splits map to class indices.

    Integer labels (every label parses as an integer) are used as they are: returns None. Named labels (no
    label parses as an integer, e.g. 'HepG2'/'K562') map to 0..n-1 in sorted name order, which keeps the
    paper protocol's "classes in sorted label order". Raises TaskDataError naming the first row of a split
    whose label kind differs from the rest (a mix of integers and names), or a label `check_label` refuses.
    """
    kinds: dict[bool, tuple[str, int, str]] = {}
    names: set[str] = set()
    for split, df in raw.items():
        for row, v in zip(df["row"], df["label"]):
            text = check_label(v, task=task, split=split, row=int(row))
            is_int = _as_int(text) is not None
            kinds.setdefault(is_int, (split, int(row), text))
            if not is_int:
                names.add(text)
    if len(kinds) > 1:
        split, row, text = kinds[True]
        s2, r2, t2 = kinds[False]
        raise TaskDataError(
            f"task {task!r}, split {s2!r}, row {r2}: label {t2!r} is not an integer while other labels are "
            f"(e.g. split {split!r}, row {row}: {text!r}); labels must be all integers or all names"
        )
    if True in kinds:
        return None
    return {name: i for i, name in enumerate(sorted(names))}


def parse_labels(
    raw: pd.Series, rows: pd.Series, encoding: dict[str, int] | None, *, task: str, split: str
) -> np.ndarray:
    """Labels as int64 (n,), through `encoding` for named labels (see label_encoding). Raises TaskDataError
    naming the row for a label outside the encoding or a non-integer label."""
    values = np.empty(len(raw), dtype=np.int64)
    for i, (row, v) in enumerate(zip(rows, raw)):
        text = check_label(v, task=task, split=split, row=int(row))
        value = encoding.get(text) if encoding is not None else _as_int(text)
        if value is None:
            raise TaskDataError(f"task {task!r}, split {split!r}, row {row}: label {v!r} is not an integer")
        values[i] = value
    return values


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


def _length_stats(seqs: pd.Series) -> dict[str, int]:
    lengths = seqs.str.len()
    return {"len_min": int(lengths.min()), "len_max": int(lengths.max()), "len_median": int(lengths.median())}


def read_raw_split(task: str, split: str, source: TaskSource) -> pd.DataFrame:
    """The raw split from `source` (columns row, sequence, label); raises TaskDataError if it has no rows."""
    raw = source.read_split(task, split)
    if raw.empty:
        raise TaskDataError(f"task {task!r}, split {split!r}: no rows in {source.description}")
    return raw


def check_split(
    raw: pd.DataFrame, encoding: dict[str, int] | None, policy: AlphabetPolicy, *, task: str, split: str
) -> pd.DataFrame:
    """Apply the label and alphabet checks to a raw split; columns row, sequence, label (int64)."""
    labels = parse_labels(raw["label"], raw["row"], encoding, task=task, split=split)
    seqs = [policy.apply(s, task=task, split=split, row=int(r)) for r, s in zip(raw["row"], raw["sequence"])]
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
) -> TaskCard:
    """Prepare one task into `out_dir/{train,test}.parquet` and `out_dir/card.json`; returns the card
    (`geneb.tasks.card.TaskCard`, written with `write_card`).

    catalogue_row: the task's row of config/tasks.tsv (category, n_classes, ...). caps: {"max_train": int|None,
    "max_test": int|None}. Raises TaskDataError / SequenceError / TaskSourceError with task, split and row.
    """
    category = check_category(str(catalogue_row["category"]))
    out_dir = Path(out_dir)
    splits: dict[str, pd.DataFrame] = {}
    card_splits: dict[str, Any] = {}
    cap_record: dict[str, Any] = {}
    raw = {split: read_raw_split(task, split, source) for split in SPLITS}
    encoding = label_encoding(raw, task=task)
    for split in SPLITS:
        df = check_split(raw[split], encoding, policy, task=task, split=split)
        n_source = len(df)
        cap = caps.get(f"max_{split}")
        if cap is not None and n_source > cap:
            try:
                keep = stratified_cap(df["label"].to_numpy(), int(cap), cap_seed)
            except ValueError as err:
                raise TaskDataError(f"task {task!r}, split {split!r}: caps max_{split} {cap}: {err}") from err
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
        card_splits[split] = {"n": len(df), "n_source": n_source, **_length_stats(df["sequence"]), **dups}

    train_classes = set(np.unique(splits["train"]["label"]).tolist())
    test_classes = set(np.unique(splits["test"]["label"]).tolist())
    if not test_classes <= train_classes:
        missing = sorted(test_classes - train_classes)
        raise TaskDataError(f"task {task!r}, split 'test': classes {missing} never occur in train")
    expected = str(catalogue_row.get("n_classes") or "").strip()
    if expected and int(expected) != len(train_classes):
        raise TaskDataError(
            f"task {task!r}, split 'train': {len(train_classes)} classes {sorted(train_classes)}, catalogue says {expected}"
        )
    if len(train_classes) < 2:
        raise TaskDataError(f"task {task!r}, split 'train': only one class {sorted(train_classes)}")

    card = TaskCard.from_dict(
        {
            "schema_version": CARD_SCHEMA_VERSION,
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
        }
    )
    for split, df in splits.items():
        with atomic_path(out_dir / f"{split}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
    write_card(out_dir / "card.json", card)
    return card


def report_lines(card: TaskCard) -> list[str]:
    """Human-readable summary of a task card (what `prepare_task` logs)."""
    lines = [f"task {card.task} ({card.category}), source {card.source}, data hash {card.data_hash[:12]}"]
    for split, s in card.splits.items():
        lines.append(
            f"  {split}: {s.n} rows (source {s.n_source}), lengths {s.len_min}-{s.len_max}, classes "
            f"{dict(s.class_counts)}, within-split duplicates {s.n_duplicate_rows} (classes after dedup "
            f"{dict(s.class_counts_dedup)}), sequences with >1 label {s.conflicting_label_sequences}"
        )
    ov = card.overlap
    lines.append(f"  test rows also in train: exact {ov.exact}, reverse complement {ov.reverse_complement}")
    for split, c in card.caps.items():
        lines.append(f"  {split} capped to {c.n_kept} of {c.n_source} rows (seed {c.seed}, stratified)")
    return lines


def prepare_from_params(task: str, params: dict[str, Any], source_spec: str, card_path: str | Path) -> TaskCard:
    """Entry point of the `prepare_task` rule: `params` is common.smk's `task_params` (catalogue row, source
    identity, alphabet policy, caps, cap seed); `source_spec` is where to read the task (the source string
    resolved from config and environment); outputs go beside `card_path`. For a mirror folder, the files
    read must be the ones whose digests are in `params` (else TaskSourceError: the data changed after the
    workflow was planned). Logs the card summary."""
    import logging

    from geneb.tasks.sources import TaskSourceError, open_source, source_identity

    planned = params.get("source_identity")
    if planned is not None and planned.get("files") and source_identity(source_spec, task) != planned:
        raise TaskSourceError(
            f"task {task!r}: the files under {source_spec} changed after the workflow was planned; run again"
        )
    source = open_source(source_spec)
    card = prepare_task(
        task,
        params["catalogue_row"],
        source,
        AlphabetPolicy.from_config(params["alphabet"]),
        params["caps"],
        int(params["cap_seed"]),
        Path(card_path).parent,
    )
    for line in report_lines(card):
        logging.getLogger(__name__).info(line)
    return card
