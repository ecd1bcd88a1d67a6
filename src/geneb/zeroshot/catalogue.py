"""The catalogue of zero-shot tasks, `config/zeroshot_tasks.tsv`: one row per task with its kind, the
builder that makes it (`geneb.zeroshot.build`; `source` for a task read as it is from config zeroshot.task_source,
e.g. a user's own variant set), the real tasks it is built from (`-`: none) and a description. Torch-free.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from geneb.zeroshot.task import ZEROSHOT_KINDS, ZeroShotKind

CATALOGUE_COLUMNS = ("task", "kind", "builder", "source_tasks", "description")
DEFAULT_CATALOGUE = Path("config/zeroshot_tasks.tsv")
#: the `builder` of a task that is not built but read from a source (config zeroshot.task_source)
SOURCE_BUILDER = "source"
#: the `source_tasks` cell of a task built from no catalogued task
NO_SOURCE_TASKS = "-"


class ZeroShotCatalogueError(ValueError):
    """A catalogue with problems; the message names the file, each row (0-based data row) and value."""


@dataclass(frozen=True)
class CatalogueEntry:
    """One catalogued task: `source_tasks` are real task ids (comma-separated in the file)."""

    task: str
    kind: ZeroShotKind
    builder: str
    source_tasks: tuple[str, ...]
    description: str


def read_zeroshot_catalogue(path: str | Path = DEFAULT_CATALOGUE) -> list[CatalogueEntry]:
    """The entries of a catalogue file in file order. Raises ZeroShotCatalogueError listing every problem: a
    missing column, an empty cell, an unknown kind, a task listed twice."""
    path = Path(path)
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
    missing = [c for c in CATALOGUE_COLUMNS if c not in df.columns]
    if missing:
        raise ZeroShotCatalogueError(f"{path}: lacks column(s) {', '.join(missing)} (has {', '.join(df.columns)})")
    problems: list[str] = []
    seen: dict[str, int] = {}
    entries = []
    for row, rec in enumerate(df[list(CATALOGUE_COLUMNS)].itertuples(index=False)):
        for column in CATALOGUE_COLUMNS:
            if not str(getattr(rec, column)).strip():
                problems.append(f"row {row}: empty {column}")
        if rec.kind not in ZEROSHOT_KINDS:
            problems.append(f"row {row}: kind {rec.kind!r} is not one of {', '.join(ZEROSHOT_KINDS)}")
        if rec.task in seen:
            problems.append(f"row {row}: task {rec.task!r} is listed already in row {seen[rec.task]}")
        seen.setdefault(rec.task, row)
        cell = str(rec.source_tasks).strip()
        sources = () if cell == NO_SOURCE_TASKS else tuple(t.strip() for t in cell.split(",") if t.strip())
        if not sources and rec.builder != SOURCE_BUILDER and cell:
            problems.append(f"row {row}: builder {rec.builder!r} needs source_tasks (only a `source` task may have -)")
        entries.append(CatalogueEntry(rec.task, rec.kind, rec.builder, sources, rec.description))
    if problems:
        raise ZeroShotCatalogueError(
            f"{path}: {len(problems)} problem(s) (rows are 0-based data rows)\n  " + "\n  ".join(problems)
        )
    return entries


@functools.lru_cache(maxsize=8)
def _entries(path: str, mtime_ns: int) -> dict[str, CatalogueEntry]:
    return {e.task: e for e in read_zeroshot_catalogue(path)}


def catalogue_entry(path: str | Path, task: str) -> CatalogueEntry:
    """The entry of `task` in the catalogue at `path` (read once per file version). Raises ZeroShotCatalogueError
    naming the task and the catalogued ids when it is not there."""
    entries = _entries(str(path), Path(path).stat().st_mtime_ns)
    if task not in entries:
        raise ZeroShotCatalogueError(
            f"zero-shot task {task!r} is not in {path} (catalogued: {', '.join(entries) or 'none'}); add a row"
        )
    return entries[task]
