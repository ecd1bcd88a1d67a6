"""Seeded builders of zero-shot tasks from the real labelled tasks (one module per builder) and the dispatcher
that builds the catalogued tasks (`config/zeroshot_tasks.tsv`) into ordinary zero-shot task folders whose
meta.json records builder, seed, source tasks with digests and parameters (docs/zeroshot.md). Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from geneb.zeroshot.build import copy_recall, motif_disruption, real_vs_shuffled, stop_gain
from geneb.zeroshot.build.common import Builder, provenance, read_source_split
from geneb.zeroshot.task import (
    DEFAULT_CATALOGUE,
    CatalogueEntry,
    ZeroShotTask,
    read_zeroshot_catalogue,
    read_zeroshot_task,
    write_zeroshot_task,
)

BUILDERS: dict[str, Builder] = {
    b.name: b for b in (real_vs_shuffled.BUILDER, motif_disruption.BUILDER, stop_gain.BUILDER, copy_recall.BUILDER)
}
DEFAULT_SEED = 0


def build_task(
    entry: CatalogueEntry,
    tasks_root: str | Path,
    out_dir: str | Path,
    seed: int = DEFAULT_SEED,
    params: Mapping[str, Any] | None = None,
) -> ZeroShotTask:
    """Build one catalogued task from the training splits of its source tasks under the mirror folder
    `tasks_root` into `out_dir/<task>/` and return it as read back (`build_into`)."""
    return build_into(entry, tasks_root, Path(out_dir) / entry.task, seed, params)


def build_into(
    entry: CatalogueEntry,
    tasks_root: str | Path,
    folder: str | Path,
    seed: int = DEFAULT_SEED,
    params: Mapping[str, Any] | None = None,
) -> ZeroShotTask:
    """Build one catalogued task from the training splits of its source tasks under the mirror folder
    `tasks_root` into `folder` (rows.tsv, meta.json) and return it as read back. params: overrides of the
    builder's defaults (e.g. smaller sizes). Raises ValueError for an unknown builder, a kind that is not the
    builder's, an unknown parameter or too few usable source rows; TaskSourceError for a missing source task."""
    builder = BUILDERS.get(entry.builder)
    if builder is None:
        raise ValueError(
            f"zero-shot task {entry.task!r}: unknown builder {entry.builder!r} (have {', '.join(BUILDERS)})"
        )
    if builder.kind != entry.kind:
        raise ValueError(
            f"zero-shot task {entry.task!r}: builder {builder.name!r} makes {builder.kind!r} tasks, the catalogue says {entry.kind!r}"
        )
    unknown = sorted(set(params or {}) - set(builder.defaults))
    if unknown:
        raise ValueError(
            f"zero-shot task {entry.task!r}: builder {builder.name!r} has no parameter(s) {', '.join(unknown)}"
        )
    merged = {**builder.defaults, **(params or {})}
    sources = [read_source_split(tasks_root, t) for t in entry.source_tasks]
    rows, details = builder.build(sources, seed, merged)
    meta = {
        "kind": builder.kind,
        "name": entry.task,
        "description": entry.description,
        "provenance": provenance(builder.name, seed, sources, merged, **details),
    }
    return read_zeroshot_task(write_zeroshot_task(folder, rows, meta), name=entry.task)


def build_tasks(
    out_dir: str | Path,
    tasks_root: str | Path,
    seed: int = DEFAULT_SEED,
    tasks: Sequence[str] | None = None,
    catalogue: str | Path = DEFAULT_CATALOGUE,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[ZeroShotTask]:
    """Build the catalogue's tasks (`tasks`: these only, in catalogue order) with one seed; params: {task:
    parameter overrides}. Raises ValueError naming tasks the catalogue lacks."""
    entries = read_zeroshot_catalogue(catalogue)
    if tasks:
        unknown = sorted(set(tasks) - {e.task for e in entries})
        if unknown:
            raise ValueError(
                f"zero-shot task(s) {', '.join(unknown)} not in {catalogue} (has {', '.join(e.task for e in entries)})"
            )
        entries = [e for e in entries if e.task in set(tasks)]
    return [build_task(e, tasks_root, out_dir, seed, (params or {}).get(e.task)) for e in entries]
