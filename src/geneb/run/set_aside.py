"""Partial embedding files moved aside before the DAG is built, so Snakemake schedules them again (case B41)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def set_aside_partial(
    paths: Iterable[str | os.PathLike[str]], *, hdf5_locking: str = "auto"
) -> list[tuple[Path, Path]]:
    """Move every existing file among `paths` that is not a complete embedding cache to
    `<folder>/.partial-<name>.<n>`, so Snakemake sees its output missing and schedules the extraction again.

    Why: Snakemake alone cannot tell a partial output from a complete one. 9.27 records a failed job's kept
    output (--keep-incomplete) as complete, and a copy interrupted mid-way (rsync --inplace, cp) is never
    marked at all (case B41). GENEB's own writers never leave such a file (atomic rename), and readers refuse
    it; this puts it out of the way before the DAG is built. Completeness is `geneb.extract.cache.is_complete_file`. hdf5_locking: as `execution.hdf5_locking`.
    Returns the (old, new) path pairs moved.
    """
    from geneb.extract.cache import is_complete_file

    moved = []
    for path in map(Path, paths):
        if not path.is_file() or is_complete_file(path, hdf5_locking=hdf5_locking):
            continue
        n = 0
        while (aside := path.with_name(f".partial-{path.name}.{n}")).exists():
            n += 1
        os.replace(path, aside)
        moved.append((path, aside))
    return moved
