"""What every zero-shot builder shares: reading a real task's split, its provenance record, seeded draws.

A builder reads the training split of real labelled tasks (a mirror folder, `geneb.tasks.sources.MirrorFolder`,
e.g. `../shared/data/tasks`), so that a probe's test rows never become zero-shot rows. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.tasks.prepare import data_hash
from geneb.tasks.sources import MirrorFolder, file_record

#: the split every builder draws from
_SOURCE_SPLIT = "train"
#: letters a drawn source sequence may hold (a sequence with N or anything else is not drawn)
_ACGT = frozenset("ACGT")


@dataclass(frozen=True)
class SourceSplit:
    """One split of a real task as read: `rows` has `row` (int, 0-based data row of the file), `sequence` (str,
    untouched) and `label` (str, as written)."""

    task: str
    split: str
    path: Path
    rows: pd.DataFrame

    def record(self) -> dict[str, Any]:
        """The provenance entry: task, split, file name, the file's sha256 and the sha256 of the rows read
        (`geneb.tasks.prepare.data_hash` over (row, sequence, label) as written)."""
        return {
            "task": self.task,
            "split": self.split,
            "file": self.path.name,
            "file_sha256": file_record(self.path)["sha256"],
            "rows_sha256": data_hash({self.split: self.rows}),
        }

    def sequence_id(self, row: int) -> str:
        """The id a built row names its source sequence by: `<task>:<split>:<row>`."""
        return f"{self.task}:{self.split}:{row}"


#: a builder's function: (source splits, seed, parameters) -> (rows of its kind, builder-specific provenance)
_BuildFunction = Callable[[Sequence[SourceSplit], int, Mapping[str, Any]], tuple[pd.DataFrame, dict[str, Any]]]


@dataclass(frozen=True)
class Builder:
    """A builder: its name (the catalogue's `builder`), the kind of task it makes, its default parameters (sizes
    included), its function and its version: raised whenever the same seed and sources would give other rows, so
    that the workflow's task key (`geneb.zeroshot.plan.ZeroShotPlan.task_params`) changes and old folders are
    rebuilt."""

    name: str
    kind: str
    defaults: Mapping[str, Any]
    build: _BuildFunction
    version: int = 1


def read_source_split(tasks_root: str | Path, task: str, split: str = _SOURCE_SPLIT) -> SourceSplit:
    """`split` of `task` under the mirror folder `tasks_root`. Raises TaskSourceError naming task and split when
    the file is missing or unreadable."""
    mirror = MirrorFolder(Path(tasks_root))
    rows = mirror.read_split(task, split)
    path = mirror.split_file(task, split)
    assert path is not None  # read_split raised otherwise
    return SourceSplit(task=task, split=split, path=path, rows=rows)


def clean_rows(source: SourceSplit, label: str | None = None, min_length: int = 1) -> pd.DataFrame:
    """The rows of `source` a builder may draw: label `label` (None: any), only A/C/G/T letters, at least
    `min_length` bases, the first row of each distinct sequence; in row order."""
    df = source.rows
    if label is not None:
        df = df[df["label"].astype(str) == label]
    ok = df["sequence"].map(lambda s: len(s) >= min_length and set(s) <= _ACGT)
    return df[ok].drop_duplicates("sequence").reset_index(drop=True)


def sequences(source: SourceSplit, label: str | None = None, min_length: int = 1) -> list[tuple[int, str]]:
    """(row, sequence) of `clean_rows(source, label, min_length)`, in row order."""
    df = clean_rows(source, label=label, min_length=min_length)
    return [(int(r), str(s)) for r, s in zip(df["row"].tolist(), df["sequence"].tolist())]


def draw_rows(df: pd.DataFrame, n: int, rng: np.random.Generator, what: str) -> pd.DataFrame:
    """`n` rows of `df` drawn without replacement by `rng`, in source-row order. Raises ValueError naming `what`
    when `df` has fewer than `n` rows."""
    if len(df) < n:
        raise ValueError(f"{what}: needs {n} usable source sequences, the source has {len(df)}")
    picked = np.sort(rng.choice(len(df), size=n, replace=False))
    return df.iloc[picked].reset_index(drop=True)


def provenance(
    builder: str, seed: int, sources: Sequence[SourceSplit], parameters: Mapping[str, Any], **details: Any
) -> dict[str, Any]:
    """meta.json's `provenance` of a built task: builder, seed, source tasks (with digests), parameters and any
    builder-specific details (counts, motif ids)."""
    return {
        "builder": builder,
        "seed": int(seed),
        "source_tasks": [s.record() for s in sources],
        "parameters": dict(parameters),
        **details,
    }
