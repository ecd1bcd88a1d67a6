"""What every task source shares: the errors, the `TaskSource` protocol, the digests of source files (the task
lock's and `meta.json`'s) and the one CSV reader of a split file (`geneb.tasks.sources` builds the sources on it).
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from geneb.core.provenance import file_sha256

#: the splits a task is made of (a mirror's other files, e.g. a `dev` split, are not read)
SPLITS = ("train", "test")
#: a CR not followed by LF
LONE_CR = re.compile(rb"\r(?!\n)")

SEQUENCE_COLUMNS = ("sequence", "text", "seq")
#: the endings of a split file (a lock change to one of these is a change of the task's data, not of its notes)
DATA_FILE_SUFFIXES = (".csv.gz", ".csv")


class TaskSourceError(RuntimeError):
    """A task or split that cannot be fetched or read; the message names source, task and split."""


class NotOnServer(TaskSourceError):
    """An http mirror answered 404 for a file (meta.json is optional, a `.csv.gz` split may be a `.csv`)."""


class TaskDigestError(TaskSourceError):
    """A source file whose content is not the one a digest says (meta.json's `sha256`, the task lock); the message
    names task, file, expected and found digests."""


class TaskSource(Protocol):
    """What every source provides."""

    @property
    def description(self) -> str:
        """The source in words, for messages ("mirror folder resources/tasks", ...)."""
        ...

    def read_split(self, task: str, split: str) -> pd.DataFrame:
        """The raw split ("train" or "test"), one row per source line in file order: columns `row` (int,
        0-based line index), `sequence` (str, untouched) and `label` (as given: integer or name). Raises
        TaskSourceError naming source, task and split when the split is missing or unreadable."""
        ...

    def read_meta(self, task: str) -> dict[str, Any]:
        """The task's `meta.json` as a dict ({} where the source has none, e.g. a Hugging Face dataset)."""
        ...

    def source_files(self, task: str, *, fresh: bool = False) -> dict[str, Path]:
        """{name: local path} of every file the source reads for `task` (fetched first where remote; `fresh`:
        a remote source fetches again instead of using its cached copies), the names as the task lock records
        them. Raises TaskSourceError when a split is missing or a file fails a digest the source knows."""
        ...


@lru_cache(maxsize=4096)
def _record(path: str, size: int, mtime_ns: int, inode: int) -> tuple[str, int]:
    return file_sha256(path, length=64), size


def file_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """{"sha256": 64 hex, "size": bytes} of a file, computed once per process for a file whose size, modification
    time and inode are unchanged (planning digests a mirror's files for the rerun key and the lock). Raises
    OSError when the file cannot be read."""
    st = os.stat(path)
    sha, size = _record(os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    return {"sha256": sha, "size": size}


def check_meta_digests(task: str, meta: Mapping[str, Any], files: Mapping[str, Path], where: str) -> None:
    """Check `files` ({name: path}) against `meta.json`'s `sha256` ({file name: hex digest}) where it names them.
    Raises TaskSourceError naming task, file, expected and found digests (`where`: the source)."""
    digests = meta.get("sha256") or {}
    if not isinstance(digests, dict):
        raise TaskSourceError(f"task {task!r}: meta.json of {where}: `sha256` is not a mapping of file name to digest")
    for name, path in files.items():
        expected = digests.get(name)
        if expected is None:
            continue
        found = file_record(path)["sha256"]
        if str(expected).lower() != found:
            raise TaskDigestError(
                f"task {task!r}: {name} of {where} ({path}) fails its sha256 check: meta.json says {expected}, "
                f"the file has {found}"
            )


def normalise_columns(df: pd.DataFrame, *, where: str) -> pd.DataFrame:
    """Rename the sequence column to `sequence`, keep `label`, add `row`; raise naming the columns found."""
    seq_col = next((c for c in SEQUENCE_COLUMNS if c in df.columns), None)
    if seq_col is None or "label" not in df.columns:
        raise TaskSourceError(
            f"{where}: expected a sequence column ({' or '.join(SEQUENCE_COLUMNS)}) and 'label'; found {list(df.columns)}"
        )
    out = pd.DataFrame({"row": range(len(df)), "sequence": df[seq_col].to_numpy(), "label": df["label"].to_numpy()})
    return out


def read_csv(path: Path, *, where: str) -> pd.DataFrame:
    """A split file (`.csv.gz` or `.csv`) as the raw split (columns row, sequence, label; see TaskSource.read_split),
    every cell text as written. Raises TaskSourceError naming `where`, the file and the line for a file that cannot
    be read."""
    # keep_default_na=False: a sequence "NA" or "N" must stay text, and an empty cell stays "" (an error later);
    # skip_blank_lines=False: a blank line is a row (refused later, by its row id), never silently skipped
    try:
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        _check_line_ends(data, path, where=where)
        df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except TaskSourceError:
        raise
    except Exception as exc:  # pandas raises several types for broken files
        raise TaskSourceError(
            f"{where}: cannot read {path}: {str(exc).strip()} (line numbers count file lines from 1, the header being line 1; "
            "GENEB's row ids count data rows from 0)"
        ) from exc
    return normalise_columns(df, where=where)


def _check_line_ends(data: bytes, path: Path, *, where: str) -> None:
    """Refuse a lone carriage return in a file whose lines end in LF: the CSV reader would take it for a line
    end and split that row in two (a stray CR inside a sequence), shifting every later row id. Files with
    CRLF or CR-only line ends are fine, and so is a CR inside a quoted field (kept as text, then refused by
    the alphabet policy naming its row)."""
    if b"\n" not in data:
        return
    for m in LONE_CR.finditer(data):
        if data.count(b'"', data.rfind(b"\n", 0, m.start()) + 1, m.start()) % 2:
            continue  # inside a quoted field: the reader keeps it, and the alphabet policy names its row
        line = data.count(b"\n", 0, m.start()) + 1
        raise TaskSourceError(
            f"{where}: a carriage return ('\\r') inside line {line} of {path} (data row {line - 2}), in a file whose "
            "lines end in '\\n'; a sequence or label holds a stray '\\r'"
        )
