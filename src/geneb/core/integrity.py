"""Files a later step can trust: atomic writes and content digests.

Atomic file writes: a result appears under its final name only when it is complete.

A job killed mid-write (SIGKILL, Slurm walltime) leaves at most a `.tmp-*` file beside the target, which no
reader looks at; the rename is atomic on POSIX file systems (same directory, same file system).

Content digests of the files a later step trusts: recorded when a file is written, checked when it is read.

Every artifact GENEB reads back (embedding HDF5 files, probe, prediction and score parquets, shot files, task
audits, prepared task splits and cards) is written through `sealed_path` (or `write_text` / `write_parquet`),
which records the sha256 of the file's bytes in a sidecar `<file>.sha256` (the `sha256sum` format, so
`sha256sum -c <file>.sha256` checks it too) before the file appears under its final name. Readers open it through
`verify` (`read_text`, `read_json`, `read_parquet` here, `geneb.extract.cache` for HDF5), which hashes the whole
file and raises `IntegrityError` naming the file, the recorded and the found digest when they differ. A digest of
the whole file detects every changed byte and every truncation, whatever the format; the formats' own checks
(HDF5 fletcher32, Parquet page CRCs) cover the data pages only, not the metadata a reader also trusts (the
extraction key attribute, a parquet footer's schema), and are not used. Cost: docs/performance.md ("Content
checks").

Files written before digests were recorded (no sidecar) are read with one warning per file and process; the
workflow's plan adopts each once (records its digest after a full read by its format's reader, with one logged
line) and `geneb verify --adopt` does the same offline; a file its format's reader cannot read is set aside
instead (`geneb.run.integrity`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geneb.core.provenance import file_sha256


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


if TYPE_CHECKING:
    import pandas as pd

#: the sidecar of `<file>` is `<file>` + this suffix
DIGEST_SUFFIX = ".sha256"

_log = logging.getLogger(__name__)
_warned: set[str] = set()


class IntegrityError(RuntimeError):
    """A file whose bytes differ from the digest recorded when it was written (or whose digest file is broken);
    `path` is the file."""

    def __init__(self, message: str, path: str | os.PathLike[str]) -> None:
        super().__init__(message)
        self.path = Path(path)


def digest_path(path: str | os.PathLike[str]) -> Path:
    """The sidecar that holds `path`'s digest: `<path>.sha256`."""
    path = Path(path)
    return path.with_name(path.name + DIGEST_SUFFIX)


def identity(path: str | os.PathLike[str]) -> tuple[int, int, int]:
    """(inode, size, mtime_ns) of `path`: a reader compares it before its check and after its open, so a file
    replaced in between is not read unchecked."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The sha256 (64 hex) of the bytes of `path` (`geneb.core.provenance.file_sha256`, the one file digest).
    Raises OSError (FileNotFoundError)."""
    return file_sha256(path, length=64)


def record_digest(path: str | os.PathLike[str], digest: str | None = None) -> str:
    """Write `path`'s sidecar atomically (`digest`, default: computed now) and return the digest."""
    path = Path(path)
    digest = digest or sha256_file(path)
    with atomic_path(digest_path(path)) as tmp:
        tmp.write_text(f"{digest}  {path.name}\n", encoding="utf-8")
    return digest


def recorded_digest(path: str | os.PathLike[str]) -> str | None:
    """The digest recorded for `path`, or None when it has no sidecar (written before digests were recorded).
    Raises IntegrityError naming `path` when the sidecar is not one 64-hex digest line for this file name."""
    side = digest_path(path)
    try:
        text = side.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise IntegrityError(f"{path}: its digest file {side.name} cannot be read ({err})", path) from err
    parts = text.split()
    ok = len(parts) == 2 and len(parts[0]) == 64 and parts[1] == Path(path).name and text.endswith("\n")
    if not ok or any(c not in "0123456789abcdef" for c in parts[0]):
        raise IntegrityError(f"{path}: its digest file {side.name} is not '<sha256>  {Path(path).name}'", path)
    return parts[0]


@contextlib.contextmanager
def sealed_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """`geneb.core.integrity.atomic_path` that also records the digest: yield a temporary path beside `target`; on
    success hash it, write the sidecar, then rename it to `target`. The sidecar is written first, so a process
    killed in between leaves the old file with a new digest (a mismatch: set aside and rebuilt), never a new file
    without one."""
    target = Path(target)
    with atomic_path(target) as tmp:
        yield tmp
        record_digest(target, sha256_file(tmp))


def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """`os.replace(src, dst)` of a file written with `sealed_path`, its digest carried along: `dst`'s digest file
    is written first (the digest recorded for `src`), then the file renamed, then `src`'s digest file removed. A
    file without a digest is renamed alone (and a stale digest file of `dst` removed)."""
    digest = recorded_digest(src)
    if digest is None:
        digest_path(dst).unlink(missing_ok=True)
    else:
        record_digest(dst, digest)
    os.replace(src, dst)
    digest_path(src).unlink(missing_ok=True)


def discard(path: str | os.PathLike[str]) -> None:
    """Remove `path` and its digest file (a temporary result nobody will read)."""
    Path(path).unlink(missing_ok=True)
    digest_path(path).unlink(missing_ok=True)


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8) to `target` atomically, with its digest."""
    with sealed_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_parquet(frame: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Write `frame` (without its index; `frame.attrs` kept in the schema metadata, as pandas does) to `target`
    atomically, with its digest."""
    with sealed_path(target) as tmp:
        frame.to_parquet(tmp, index=False)


def check(path: str | os.PathLike[str]) -> str | None:
    """Hash `path` and compare it with its recorded digest; return the digest (None: no digest recorded, the file
    is unchecked). Raises FileNotFoundError for a missing file, IntegrityError naming the file, the recorded and
    the found digest on a mismatch (a changed byte, a truncation, an append)."""
    expected = recorded_digest(path)
    if expected is None:
        Path(path).stat()  # FileNotFoundError for a missing file, as with a digest
        return None
    found = sha256_file(path)
    if found != expected:
        size = os.path.getsize(path)
        raise IntegrityError(
            f"{path}: content differs from the digest recorded when it was written (recorded sha256 {expected[:16]}…, "
            f"found {found[:16]}… over {size} bytes): changed or truncated since (a workflow run sets it aside and "
            "builds it again; `geneb verify` lists every such file)",
            path,
        )
    return expected


def verify(path: str | os.PathLike[str]) -> None:
    """What every reader calls before it parses `path`: `check`, and for a file without a digest one warning per
    file and process (module docstring). Raises what `check` raises."""
    if check(path) is None and str(path) not in _warned:
        _warned.add(str(path))
        _log.warning(
            "%s: no content digest recorded (written before GENEB recorded them); read unchecked. "
            "The next workflow run, or `geneb verify --adopt`, records one",
            path,
        )


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of `path`, checked against its digest (hashed from the same bytes the caller gets)."""
    data = Path(path).read_bytes()
    expected = recorded_digest(path)
    if expected is None:
        verify(path)
    elif hashlib.sha256(data).hexdigest() != expected:
        check(path)  # raises, with the message every reader gives
        raise IntegrityError(f"{path}: changed while it was read", path)
    return data


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON content of `path`, checked against its digest."""
    return json.loads(_read_bytes(path))


def read_parquet(path: str | os.PathLike[str], **kwargs: Any) -> pd.DataFrame:
    """`pandas.read_parquet(path, **kwargs)` of a file checked against its digest (parsed from the checked
    bytes)."""
    import io

    import pandas as pd

    return pd.read_parquet(io.BytesIO(_read_bytes(path)), **kwargs)
