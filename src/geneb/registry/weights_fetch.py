"""Building the cache folder of weights from outside the hub (`materialize`): unpacking or linking the user's
archive or file, or downloading a `source.kind: download` file with pooch, checked against its sha256
(docs/adding-a-model.md, "Weights outside the hub"; what the settings say and how the folder is named:
`geneb.registry.weights`).

A cache folder is trusted only when it holds the marker file `weights.MARKER` with its sha256: it is built in a
temporary folder beside it (`.partial-*`, never read), checked (`source.expect`, `source.file_sha256`), marked and
renamed into place in one step, so a killed unpack leaves nothing a later run trusts; an advisory lock beside it
lets the jobs of one node build it once. Torch-free.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
import socket
import tarfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from geneb.registry.settings import SettingsLike
from geneb.registry.weights import (
    CONFIG_KEY,
    MARKER,
    WEIGHT_KINDS,
    WeightsError,
    check_file_sha256,
    file_sha256,
    is_complete,
    missing_files,
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _host() -> str:
    """This host's name as it appears in temporary folder names (no "-", which separates the parts)."""
    return socket.gethostname().replace("-", "_")


def _clear_stale(parent: Path) -> None:
    """Remove the `.partial-*` / `.download-*` folders in `parent` that dead processes of this host left (a
    killed unpack or download); those of live processes and of other hosts stay."""
    if not parent.is_dir():
        return
    for p in (*parent.glob(".partial-*"), *parent.glob(".download-*")):
        _, host, pid = (p.name.rsplit("-", 2) + ["", ""])[:3]
        if host == _host() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _temp_folder(parent: Path, stem: str, sha12: str) -> Path:
    """A fresh `.<stem>-<sha12>-<host>-<pid>` folder in `parent` (host and pid let a later run clear it)."""
    parent.mkdir(parents=True, exist_ok=True)
    tmp = parent / f".{stem}-{sha12}-{_host()}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def _unpack(model: str, archive: Path, into: Path) -> Path:
    """Unpack `archive` into the empty folder `into`; returns the model folder: `into`, or its only top-level
    folder when every entry sits in one (hidden entries and `__MACOSX` aside). Raises WeightsError for an archive
    that cannot be read."""
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as z:  # zipfile drops absolute paths and `..` from member names
                z.extractall(into)
        else:
            with tarfile.open(archive, "r:*") as t:
                t.extractall(into, filter="data")  # refuses members outside `into`, links out of it, devices
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as err:
        raise WeightsError(f"model {model}: cannot unpack {archive}: {err}") from err
    top = [p for p in into.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    return top[0] if len(top) == 1 and top[0].is_dir() else into


def _place_file(src: Path, dest: Path, *, move: bool) -> None:
    """Put the single file `src` at `dest`: moved (a download of ours), else hard-linked, else symlinked to its
    resolved path (another file system)."""
    if move:
        os.replace(src, dest)
        return
    try:
        os.link(src, dest)
    except OSError:
        os.symlink(src.resolve(), dest)


def _build(model: str, source: Mapping[str, Any], file: Path, *, move: bool, origin: str) -> Path:
    """Build the cache folder `source["path"]` from `file` (an archive or a single checkpoint file) atomically:
    in a `.partial-*` folder beside it, checked against `expect` and `file_sha256`, marked, renamed into place."""
    target = Path(source["path"])
    parent = target.parent
    _clear_stale(parent)
    tmp = _temp_folder(parent, "partial", source["sha256"][:12])
    try:
        if source.get("unpack"):
            root = _unpack(model, file, tmp)
        else:
            root = tmp
            _place_file(file, root / str(source.get("filename") or file.name), move=move)
        missing = missing_files(root, source.get("expect"))
        if missing:
            raise WeightsError(
                f"model {model}: {origin} lacks {', '.join(missing)} (source.expect); the folder it gives holds "
                f"{', '.join(sorted(p.name for p in root.iterdir())[:10]) or 'nothing'}"
            )
        check_file_sha256(model, root, source.get("file_sha256"))
        marker = {
            "model": model,
            "sha256": source["sha256"],
            "from": origin,
            "unpacked": bool(source.get("unpack")),
            "filename": source.get("filename"),
            "made_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        }
        (root / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        if target.exists():  # an incomplete or stale folder under the final name: never trusted, replaced
            shutil.rmtree(target)
        try:
            os.rename(root, target)
        except OSError:
            if not is_complete(source):  # a concurrent job that won the rename is fine; anything else is not
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _download(model: str, source: Mapping[str, Any]) -> tuple[Path, Path]:
    """Download `source["url"]` with pooch into a `.download-*` folder beside the cache folder and check its
    sha256; returns (the file, its folder). Raises WeightsError naming the model, the URL and either the
    expected and actual sha256 or the network error with the fix (`geneb weights fetch`)."""
    import pooch

    target = Path(source["path"])
    _clear_stale(target.parent)
    tmp = _temp_folder(target.parent, "download", source["sha256"][:12])
    url = str(source["url"])
    try:
        got = Path(pooch.retrieve(url, known_hash=None, fname=str(source.get("filename")), path=tmp, progressbar=False))
    except Exception as err:
        shutil.rmtree(tmp, ignore_errors=True)
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise WeightsError(
            f"model {model}: cannot download {url} ({first}); run `geneb weights fetch {model}` where there is "
            f"network (e.g. a login node) with the same weights folder ({target.parent.parent}), then run again"
        ) from err
    actual = file_sha256(got)
    if actual != source["sha256"]:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WeightsError(
            f"model {model}: {url} has sha256 {actual}, expected {source['sha256']} (source.sha256); the file was "
            "deleted. A changed upload needs a new registry entry (new sha256)"
        )
    return got, tmp


def materialize(source: Mapping[str, Any], model: str, *, say: Callable[[str], None] | None = None) -> Path:
    """Make sure the folder `source["path"]` of resolved settings `source` (`settings_source`) is there and
    complete, building it once when it is not: a folder of the user's is checked to exist; an archive or single
    file of the user's is unpacked or linked, a download fetched (`_download`) first. Returns the folder.
    say: called with one line when something is built.

    Raises WeightsError (missing weights, checksum mismatch, unpack or download failure, expected files absent);
    a failed build leaves no trusted folder."""
    kind = source.get("kind")
    if kind not in WEIGHT_KINDS:
        return Path(str(source.get("path")))
    if "fingerprint" in source:  # the user's own folder, checked when the run was planned
        if not Path(source["path"]).is_dir():
            raise WeightsError(f"model {model}: the weights folder {source['path']} ({CONFIG_KEY}) is gone")
        return Path(source["path"])
    if is_complete(source):
        return Path(source["path"])
    lock = _lock(Path(source["path"]))
    try:
        if is_complete(source):  # built by another process while this one waited for the lock
            return Path(source["path"])
        if source.get("file"):
            file = Path(source["file"])
            if not file.is_file():
                raise WeightsError(f"model {model}: {file} ({CONFIG_KEY}) does not exist")
            actual = file_sha256(file)
            if actual != source["sha256"]:
                raise WeightsError(f"model {model}: {file} has sha256 {actual}, expected {source['sha256']}")
            if say:
                say(f"model {model}: {'unpacking' if source.get('unpack') else 'linking'} {file} into {source['path']}")
            return _build(model, source, file, move=False, origin=str(file))
        if kind != "download":
            raise WeightsError(f"model {model}: no weights to build {source['path']} from; set {CONFIG_KEY}")
        if say:
            say(f"model {model}: downloading {source['url']} into {source['path']}")
        file, tmp = _download(model, source)
        try:
            return _build(model, source, file, move=True, origin=str(source["url"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        _unlock(lock)


def _lock(target: Path) -> IO[str] | None:
    """An exclusive advisory lock beside `target` (`.<name>.lock`), so that the jobs of one node build a folder
    once; None where the file system has no locks (the rename in `_build` keeps concurrent builds correct)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl

        f = open(target.parent / f".{target.name}.lock", "w")  # noqa: SIM115 - held until _unlock
        fcntl.flock(f, fcntl.LOCK_EX)
        return f
    except (ImportError, OSError):
        return None


def _unlock(lock: IO[str] | None) -> None:
    if lock is not None:
        lock.close()


def ensure_weights(settings: SettingsLike) -> None:
    """Before an adapter reads `settings.source.path` (typed ExtractionSettings or the mapping): build the folder
    of a kind external / download source when the cache lacks it (`materialize`). Other kinds: nothing."""
    source = settings.get("source") if isinstance(settings, Mapping) else settings.source.as_dict()
    model = settings.get("model") if isinstance(settings, Mapping) else settings.model
    if source and source.get("kind") in WEIGHT_KINDS:
        materialize(source, str(model), say=logging.getLogger(__name__).info)
