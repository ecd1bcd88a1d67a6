"""Where a model's weights come from: pinned hub revisions (the lockfile), and weights from outside the hub
with their cache folders.

Pinned hub revisions: the commit every hub model is loaded at, kept in a lockfile.

`config/models.yaml` is generated from reference facts that carry no commit hashes, so its hub models are
`source.kind: hub-unpinned` and refused. Pins live in their own lockfile, `config/model_revisions.yaml`
(config key `model_revisions`), which the first workflow run with network access fills (`lock_revisions`,
called when the DAG is built; docs/hpc.md, "Pinning the hub models"):

    schema_version: 1
    revisions:
      DNABERT-S:
        hub_id: zhihan1996/DNABERT-S
        revision: 0123...(40 hex)
        resolved_from: main          # the ref that was resolved
        resolved_at: 2026-11-30T10:00:00+00:00

`apply_pins` turns each pinned entry into `source.kind: hub` with that revision (the hub id must match, so a
pin can never move to another repository). `lock_revisions` resolves every selected model that has no pin yet,
once, by asking the Hugging Face hub API which commit `main` points to now (`HfApi.model_info(repo,
revision=ref).sha`; the endpoint follows HF_ENDPOINT), and writes those commits to the lockfile atomically; a
model already in the lockfile is never asked for again, so later runs use exactly the locked commits. Nothing
ever loads a floating revision. `resolve_revisions` is the same lookup for named models (`geneb pin-revisions`,
which moves a pin to the commit a ref points to now).

Model weights from outside the Hugging Face hub, turned into the plain local folder an adapter reads at
`settings.source.path` (docs/adding-a-model.md, "Weights outside the hub"; docs/data-dictionary.md).

Two source kinds:

* `external`: weights GENEB cannot download (Google Drive, Harvard Dataverse, ...). The entry says what to fetch
  (`source.fetch`, `source.url`, `source.where`) and which files the folder must hold (`source.expect`); the user
  fetches them and points GENEB at them with the config key `model_weights: {<model id>: <path>}` (relative paths
  against the working directory), merged into the registry at load time (`apply_weights`, like the pins lockfile).
  The path is a folder (used as it is, identified by `files.folder_fingerprint`), an archive (.zip, .tar,
  .tar.gz/.tgz, .tar.bz2, .tar.xz: identified by its sha256 and unpacked once into the cache), or a single
  checkpoint file (identified by its sha256 and linked into a cache folder under its own name).
* `download`: `source.url` (http(s), ftp or a pooch `doi:` address) with its `source.sha256` (required), fetched
  with pooch into the cache and checked against the checksum, unpacked when it is an archive (`source.unpack`,
  default: by the file name's suffix). `geneb weights fetch MODEL` does it ahead of a run (a login node);
  an extraction job does it when the cache lacks it and the network is there (`geneb.registry.weights`).

This module merges the config's paths into the registry (`apply_weights`), says why weights cannot be used
(`weights_refusal`), resolves the settings source that names them (`settings_source`) and tells a complete cache
folder (`is_complete`); `geneb.registry.weights` builds that folder (unpack, download, lock).

The cache is `<weights_dir>/<model>/<sha256[:12]>/` (config `execution.weights_dir`, default
resources/model_weights). Checksums: `source.sha256` is the archive's (or the single file's) sha256,
`source.file_sha256` maps relative paths in the folder to theirs; a mismatch is a WeightsError naming the model,
the file, the expected and the actual sha256.

The settings hash (`extraction.extraction_hash`) takes the content, never a location: a folder's `fingerprint`,
or the `sha256` of an archive, a file or a download, with the layout keys `unpack` and `filename`; `path`,
`file`, `url`, `expect` and `_file_sha256` are left out. Torch-free.

Building the cache folder of weights from outside the hub (`materialize`): unpacking or linking the user's
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
import difflib
import json
import logging
import os
import shutil
import socket
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import yaml

from geneb.core import yamlio
from geneb.core.integrity import write_text_atomic
from geneb.core.provenance import REVISION, cached_file_sha256
from geneb.registry.spec import ModelSpec, SettingsLike, Source

_PINS_SCHEMA_VERSION = 1
#: the lockfile's header (its comments are rewritten with every write)
_PINS_HEADER = """\
# Pinned hub revisions: a lockfile, merged into config/models.yaml at load time (geneb.registry.weights).
# A hub model runs only at a commit recorded here: loading by name alone would run whatever the hub holds
# today. The first workflow run that selects an unpinned hub model resolves its `main` once, on the
# machine that plans the run (it needs the network then), and writes the commit here; later runs use exactly
# these commits. Commit this file with your results. To move a pin: geneb pin-revisions MODEL [--ref REF].
"""


class PinError(ValueError):
    """A pins file or a pin that cannot be applied (the message names the model)."""


def read_pins(path: str | Path) -> dict[str, dict[str, Any]]:
    """The `revisions` mapping of a pins file; {} when the file does not exist. Raises PinError for a bad
    file or a revision that is not a 40-hex commit."""
    path = Path(path)
    if not path.exists():
        return {}
    data = yamlio.safe_load(path.read_text()) or {}
    if data.get("schema_version") != _PINS_SCHEMA_VERSION or not isinstance(data.get("revisions", {}), dict):
        raise PinError(f"{path}: expected schema_version {_PINS_SCHEMA_VERSION} and a `revisions` mapping")
    pins = data.get("revisions") or {}
    for model, pin in pins.items():
        if not isinstance(pin, dict) or not REVISION.match(str(pin.get("revision", ""))) or not pin.get("hub_id"):
            raise PinError(f"{path}: model {model}: a pin needs hub_id and a 40-hex commit revision, got {pin!r}")
    return pins


def apply_pins(registry: dict[str, Any], pins: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return `registry` with every pinned model turned into `source.kind: hub` at its pinned revision.

    Raises PinError when a pin names a model not in the registry, a model that is not a hub model, or a hub id
    other than the entry's."""
    models = registry["models"]
    for model, pin in pins.items():
        if model not in models:
            raise PinError(f"pinned model {model!r} is not in the registry")
        src = dict(models[model].get("source") or {})
        if src.get("kind") not in ("hub", "hub-unpinned"):
            raise PinError(f"model {model}: pinned, but its source is {src.get('kind')!r}, not a hub model")
        if src.get("hub_id") != pin["hub_id"]:
            raise PinError(
                f"model {model}: pin is for hub id {pin['hub_id']!r}, the registry says {src.get('hub_id')!r}"
            )
        src.update(kind="hub", revision=pin["revision"])
        models[model] = {**models[model], "source": src}
    return registry


class HubUnreachable(PinError):
    """The hub could not be reached at all (no network, HF_HUB_OFFLINE): no model can be pinned now."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _resolve_one(api: Any, model: str, hub_id: str, ref: str) -> dict[str, Any]:
    """The pin of `model` (hub repository `hub_id`) at the commit `ref` points to now. Raises HubUnreachable
    when no answer came (connection, timeout, offline mode) and PinError when the hub answered with an error
    (missing repository, no permission) or with something that is not a 40-hex commit."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        sha = api.model_info(hub_id, revision=ref).sha
    except HfHubHTTPError as exc:  # the hub answered: 404, 401, 403, 5xx
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PinError(f"model {model}: cannot resolve {hub_id}@{ref} on {api.endpoint}: {first}") from exc
    except Exception as exc:  # no answer at all: connection refused, DNS, timeout, HF_HUB_OFFLINE
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HubUnreachable(f"model {model}: cannot reach {api.endpoint} to resolve {hub_id}@{ref}: {first}") from exc
    if not sha or not REVISION.match(sha):
        raise PinError(f"model {model}: the hub answered revision {sha!r} for {hub_id}@{ref}, not a 40-hex commit")
    return {"hub_id": hub_id, "revision": sha, "resolved_from": ref, "resolved_at": _now()}


def resolve_revisions(
    registry: Any,
    models: list[str],
    *,
    ref: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Ask the hub which commit `ref` of each model's repository is now; returns pins (see module docstring).
    registry: the typed `geneb.registry.registry.Registry` (`load_registry`).

    Raises PinError naming the model for a non-hub model or a failed lookup (missing repository, no network
    (HubUnreachable), no permission)."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    pins: dict[str, dict[str, Any]] = {}
    for model in models:
        spec = registry.models.get(model)
        if spec is None:
            raise PinError(f"model {model!r} is not in the registry")
        src = spec.source
        if src.kind not in ("hub", "hub-unpinned") or not src.hub_id:
            raise PinError(f"model {model}: source {src.kind!r} has no hub id to pin")
        pins[model] = _resolve_one(api, model, src.hub_id, ref)
    return pins


@dataclass(frozen=True)
class LockResult:
    """What `lock_revisions` did. pinned: the pins it resolved and wrote now; locked: {model: commit} of the
    selected models whose pin was already in the lockfile (used as they are); failed: {model: why it could not
    be pinned}; unreachable: True when the hub could not be reached at all (the failed models need the network)."""

    pinned: dict[str, dict[str, Any]] = field(default_factory=dict)
    locked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    unreachable: bool = False


def lock_revisions(
    registry: Any,
    models: Iterable[str],
    path: str | Path,
    *,
    pinnable: Iterable[str] | None = None,
    ref: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> LockResult:
    """Pin, once, every model of `models` that is a hub model without a pin (`source.kind: hub-unpinned`) and
    is among `pinnable` (default: all of them; the workflow passes the ones with an adapter, which could run
    once pinned): resolve `ref` on the hub and merge the commits into the lockfile `path` atomically. Models
    already pinned there are not asked for again (`locked`). registry: the typed Registry, loaded with `path`'s
    pins applied.

    Never raises for a failed lookup: a model the hub refuses is in `failed` with the hub's answer; when the hub
    cannot be reached (no network, HF_HUB_OFFLINE=1) the remaining models are not tried and are all in `failed`,
    with `unreachable` set. Raises PinError for a lockfile that cannot be read."""
    models = list(models)
    already = read_pins(path)
    allowed = set(models if pinnable is None else pinnable)
    locked = {m: str(already[m]["revision"]) for m in models if m in already}
    todo = [m for m in models if m in allowed and registry.models[m].source.kind == "hub-unpinned"]
    if not todo:
        return LockResult(locked=locked)
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    pinned: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    unreachable = False
    for model in todo:
        hub_id = str(registry.models[model].source.hub_id)
        if unreachable:
            failed[model] = f"{hub_id}: not tried, the hub was unreachable"
            continue
        try:
            pinned[model] = _resolve_one(api, model, hub_id, ref)
        except HubUnreachable as err:
            unreachable = True
            failed[model] = str(err).removeprefix(f"model {model}: ")
        except PinError as err:
            failed[model] = str(err).removeprefix(f"model {model}: ")
    if pinned:
        write_pins(path, pinned)
    return LockResult(pinned=pinned, locked=locked, failed=failed, unreachable=unreachable)


def write_pins(path: str | Path, pins: dict[str, dict[str, Any]]) -> None:
    """Merge `pins` into the pins file at `path` (created if missing), atomically, models in name order."""
    merged = {**read_pins(path), **pins}
    text = _PINS_HEADER + yaml.safe_dump(
        {"schema_version": _PINS_SCHEMA_VERSION, "revisions": dict(sorted(merged.items()))}, sort_keys=False
    )
    write_text_atomic(path, text)


#: the source kinds whose weights this module resolves
WEIGHT_KINDS = ("external", "download")
#: the config key that points GENEB at the weights the user fetched: {model id: folder, archive or file}
_CONFIG_KEY = "model_weights"
#: the default cache folder (config `execution.weights_dir`)
DEFAULT_WEIGHTS_DIR = "resources/model_weights"
#: the file that marks a cache folder complete (hidden: `folder_fingerprint` and adapters skip it)
_MARKER = ".geneb-weights.json"
#: archive suffixes unpacked (tarfile's and zipfile's formats); any other file is taken as a single checkpoint file
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
#: settings-source keys that say where the weights are or how to check them, not what they are: left out of
#: the settings hash (`extraction.extraction_hash`) for kinds external and download
LOCATION_KEYS = ("path", "file", "url", "expect", "file_sha256")
#: docs section every message points at
_DOCS = "docs/adding-a-model.md, 'Weights outside the hub'"


class WeightsError(ValueError):
    """Weights that cannot be used: missing, incomplete, a checksum mismatch, a failed download or unpack (the
    message names the model, the file or URL, and the fix)."""


def is_archive(path: str | os.PathLike[str]) -> bool:
    """Whether the file name ends in one of ARCHIVE_SUFFIXES (case-insensitive)."""
    return str(path).lower().endswith(_ARCHIVE_SUFFIXES)


def _file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 (64 hex) of one file, memoised per process on (resolved path, size, mtime)
    (`geneb.core.provenance.cached_file_sha256`). Raises FileNotFoundError."""
    return cached_file_sha256(path)


def _config_line(model: str) -> str:
    """The config line that points GENEB at a model's fetched weights, e.g. `model_weights: {m: /path/to/m}`."""
    return f"`{_CONFIG_KEY}: {{{model}: /path/to/{model}}}`"


def apply_weights(registry: dict[str, Any], weights: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the parsed registry mapping `registry` with each model of `weights` (config `model_weights`:
    {model id: path}) given `source.path` = that path (`~` expanded; relative paths stay relative to the working
    directory). Only entries of kind external or download take a path (a download's is a copy the user already
    has, checked against its sha256).

    Raises WeightsError for a model not in the registry (with close matches), another source kind, or a path
    that is not a non-empty string."""
    models = registry["models"]
    for model, path in (weights or {}).items():
        if model not in models:
            close = difflib.get_close_matches(str(model), list(models), n=3)
            raise WeightsError(
                f"{_CONFIG_KEY}: model {model!r} is not in the registry" + (f"; did you mean {close}?" if close else "")
            )
        src = dict(models[model].get("source") or {})
        if src.get("kind") not in WEIGHT_KINDS:
            raise WeightsError(
                f"{_CONFIG_KEY}: model {model} has source kind {src.get('kind')!r}; only models whose weights are "
                f"outside the hub (kind external or download) take a path here"
            )
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise WeightsError(f"{_CONFIG_KEY}: model {model}: expected a path to a folder or an archive, got {path!r}")
        src["path"] = os.path.expanduser(str(path))
        models[model] = {**models[model], "source": src}
    return registry


def cache_folder(weights_dir: str | os.PathLike[str], model: str, sha256: str) -> Path:
    """`<weights_dir>/<model>/<sha256[:12]>`: the folder an archive, file or download with this sha256 becomes."""
    return Path(weights_dir) / model / sha256[:12]


def _missing_files(folder: str | os.PathLike[str], expect: tuple[str, ...] | list[str] | None) -> list[str]:
    """The relative paths of `expect` that are not in `folder` (files or folders), in their given order."""
    return [rel for rel in expect or () if not (Path(folder) / rel).exists()]


def _check_file_sha256(model: str, folder: str | os.PathLike[str], expected: Mapping[str, str] | None) -> None:
    """Check each {relative path: sha256} of `expected` against the file in `folder`. Raises WeightsError naming
    the model, the file, the expected and the actual sha256 (or that the file is missing)."""
    for rel, want in (expected or {}).items():
        p = Path(folder) / rel
        if not p.is_file():
            raise WeightsError(f"model {model}: {p} is missing; source.file_sha256 expects it with sha256 {want}")
        got = _file_sha256(p)
        if got != want.lower():
            raise WeightsError(f"model {model}: {p} has sha256 {got}, expected {want} (source.file_sha256)")


def _fetch_text(src: Source) -> str:
    parts = [src.fetch or f"download the model's weights ({src.where or 'see the entry notes'})"]
    if src.url and src.url not in parts[0]:
        parts.append(f"from {src.url}")
    return " ".join(parts)


def weights_refusal(spec: ModelSpec) -> tuple[str, str] | None:
    """Why the weights of `spec` (a ModelSpec of kind external or download) cannot be used now, as (short label,
    full reason with the fix), or None. Cheap (no file is read): a missing `model_weights` path says what to
    fetch, from where, and the config line; a path that does not exist, or a folder or single file without the
    `source.expect` files, says which. Archives are checked when unpacked (`materialize`)."""
    src, model = spec.source, spec.id
    if src.kind == "download" and not src.path:
        return None
    if src.kind not in WEIGHT_KINDS:
        return None
    fetch = _fetch_text(src)
    expect = f"; the folder must hold {', '.join(src.expect)}" if src.expect else ""
    if not src.path:
        return (
            "weights outside the hub: fetch them, then set model_weights",
            f"its weights are not on the Hugging Face hub and GENEB cannot download them: {fetch}; then point GENEB "
            f"at the downloaded folder or archive (.zip, .tar, .tar.gz, .tgz) with the config line "
            f"{_config_line(model)}{expect} ({_DOCS})",
        )
    p = Path(src.path)
    if not p.exists():
        return (
            "model_weights path missing",
            f"{_CONFIG_KEY} gives {src.path}, which does not exist (relative paths resolve against the working "
            f"directory, {Path.cwd()}); {fetch}{expect}",
        )
    if p.is_dir() and src.kind == "download":
        return (
            "model_weights is a folder",
            f"{_CONFIG_KEY} gives the folder {src.path}, but a download's copy is the downloaded file itself "
            f"({download_name(src.url) if not src.filename else src.filename}, sha256 {src.sha256}); name that file",
        )
    if p.is_dir():
        missing = _missing_files(p, src.expect)
    elif is_archive(p):
        return None
    else:
        missing = [rel for rel in src.expect or () if rel != p.name]
    if missing:
        return (
            f"weights folder lacks {len(missing)} file(s)",
            f"{_CONFIG_KEY} gives {src.path}, which lacks {', '.join(missing)}"
            + (" (a single file)" if p.is_file() else "")
            + f"; {fetch}{expect}",
        )
    return None


def _expected_archive_sha(model: str, src: Source, got: str, where: str) -> None:
    if src.sha256 and got != src.sha256.lower():
        raise WeightsError(f"model {model}: {where} has sha256 {got}, expected {src.sha256} (source.sha256)")


def settings_source(spec: ModelSpec, weights_dir: str | os.PathLike[str] = DEFAULT_WEIGHTS_DIR) -> dict[str, Any]:
    """The `source` of the extraction settings of `spec` (kind external with `path`, or download): what the job
    needs to build the folder and what identifies the weights.

    * a folder: {kind, path, fingerprint, [expect], [file_sha256]}; its `_file_sha256` are checked here;
    * an archive or a single file: {kind, file, sha256, unpack, [filename], path: the cache folder,
      [expect], [file_sha256]} (sha256 read here and checked against `source.sha256`);
    * a download: {kind, url, sha256, unpack, filename, path: the cache folder, [file], [expect],
      [file_sha256]} (a `model_weights` copy is checked against `source.sha256` here).

    Raises WeightsError for a checksum mismatch, FileNotFoundError for a folder that vanished."""
    from geneb.registry.python_entry import folder_fingerprint

    src, model = spec.source, spec.id
    checks = {k: v for k, v in (("expect", src.expect), ("file_sha256", src.file_sha256)) if v}
    out: dict[str, Any] = {"kind": src.kind}
    if src.kind == "external":
        p = Path(str(src.path))
        if p.is_dir():
            _check_file_sha256(model, p, src.file_sha256)
            return {**out, "path": str(src.path), "fingerprint": folder_fingerprint(p), **checks}
        sha = _file_sha256(p)
        _expected_archive_sha(model, src, sha, str(p))
        unpack = is_archive(p)
        out.update(file=str(src.path), sha256=sha, unpack=unpack)
        if not unpack:
            out["filename"] = p.name
    else:
        sha = str(src.sha256).lower()
        if src.path:
            _expected_archive_sha(model, src, _file_sha256(src.path), str(src.path))
            out["file"] = str(src.path)
        filename = src.filename or download_name(src.url)
        unpack = src.unpack if src.unpack is not None else is_archive(filename)
        out.update(url=src.url, sha256=sha, unpack=bool(unpack), filename=filename)
    return {**out, "path": str(cache_folder(weights_dir, model, sha)), **checks}


def download_name(url: str | None) -> str:
    """The file name a download is saved under: the last part of the URL's path ("weights" when it has none)."""
    name = Path(urlparse(str(url or "")).path).name
    return name or "weights"


def _read_marker(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The marker of a complete cache folder (`_MARKER`), or None when there is none or it cannot be read."""
    try:
        data = json.loads((Path(folder) / _MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(source: Mapping[str, Any]) -> bool:
    """Whether the cache folder `source["path"]` is complete for these settings: its marker names the
    settings' sha256 (and the single file's name, when there is one)."""
    marker = _read_marker(source["path"])
    if marker is None or marker.get("sha256") != source.get("sha256"):
        return False
    name = source.get("filename") if not source.get("unpack") else None
    return name is None or (Path(source["path"]) / name).is_file()


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
    in a `.partial-*` folder beside it, checked against `expect` and `_file_sha256`, marked, renamed into place."""
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
        missing = _missing_files(root, source.get("expect"))
        if missing:
            raise WeightsError(
                f"model {model}: {origin} lacks {', '.join(missing)} (source.expect); the folder it gives holds "
                f"{', '.join(sorted(p.name for p in root.iterdir())[:10]) or 'nothing'}"
            )
        _check_file_sha256(model, root, source.get("file_sha256"))
        marker = {
            "model": model,
            "sha256": source["sha256"],
            "from": origin,
            "unpacked": bool(source.get("unpack")),
            "filename": source.get("filename"),
            "made_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        }
        (root / _MARKER).write_text(json.dumps(marker, indent=1) + "\n")
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
    actual = _file_sha256(got)
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
            raise WeightsError(f"model {model}: the weights folder {source['path']} ({_CONFIG_KEY}) is gone")
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
                raise WeightsError(f"model {model}: {file} ({_CONFIG_KEY}) does not exist")
            actual = _file_sha256(file)
            if actual != source["sha256"]:
                raise WeightsError(f"model {model}: {file} has sha256 {actual}, expected {source['sha256']}")
            if say:
                say(f"model {model}: {'unpacking' if source.get('unpack') else 'linking'} {file} into {source['path']}")
            return _build(model, source, file, move=False, origin=str(file))
        if kind != "download":
            raise WeightsError(f"model {model}: no weights to build {source['path']} from; set {_CONFIG_KEY}")
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
