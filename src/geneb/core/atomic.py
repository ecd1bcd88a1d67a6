"""Atomic file writes: a result appears under its final name only when it is complete.

A job killed mid-write (SIGKILL, Slurm walltime) leaves at most a `.tmp-*` file beside the target, which no
reader looks at; the rename is atomic on POSIX file systems (same directory, same file system).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on success rename it to `target`, on error delete it.

    The caller writes the whole file to the yielded path. Parent folders are created. Any exception inside
    the block propagates after the temporary file is removed; `target` is then left untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".tmp-{target.name}.", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results should get the permissions open() gives
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(target: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8) to `target` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
