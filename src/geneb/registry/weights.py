"""Model weights from outside the Hugging Face hub, turned into the plain local folder an adapter reads at
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
  an extraction job does it when the cache lacks it and the network is there (`geneb.registry.weights_fetch`).

This module merges the config's paths into the registry (`apply_weights`), says why weights cannot be used
(`weights_refusal`), resolves the settings source that names them (`settings_source`) and tells a complete cache
folder (`is_complete`); `geneb.registry.weights_fetch` builds that folder (unpack, download, lock).

The cache is `<weights_dir>/<model>/<sha256[:12]>/` (config `execution.weights_dir`, default
resources/model_weights). Checksums: `source.sha256` is the archive's (or the single file's) sha256,
`source.file_sha256` maps relative paths in the folder to theirs; a mismatch is a WeightsError naming the model,
the file, the expected and the actual sha256.

The settings hash (`extraction.extraction_hash`) takes the content, never a location: a folder's `fingerprint`,
or the `sha256` of an archive, a file or a download, with the layout keys `unpack` and `filename`; `path`,
`file`, `url`, `expect` and `file_sha256` are left out. Torch-free.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from geneb.core.provenance import cached_file_sha256
from geneb.registry.spec import ModelSpec, Source

#: the source kinds whose weights this module resolves
WEIGHT_KINDS = ("external", "download")
#: the config key that points GENEB at the weights the user fetched: {model id: folder, archive or file}
CONFIG_KEY = "model_weights"
#: the default cache folder (config `execution.weights_dir`)
DEFAULT_WEIGHTS_DIR = "resources/model_weights"
#: the file that marks a cache folder complete (hidden: `folder_fingerprint` and adapters skip it)
MARKER = ".geneb-weights.json"
#: archive suffixes unpacked (tarfile's and zipfile's formats); any other file is taken as a single checkpoint file
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
#: settings-source keys that say where the weights are or how to check them, not what they are: left out of
#: the settings hash (`extraction.extraction_hash`) for kinds external and download
LOCATION_KEYS = ("path", "file", "url", "expect", "file_sha256")
#: docs section every message points at
DOCS = "docs/adding-a-model.md, 'Weights outside the hub'"


class WeightsError(ValueError):
    """Weights that cannot be used: missing, incomplete, a checksum mismatch, a failed download or unpack (the
    message names the model, the file or URL, and the fix)."""


def is_archive(path: str | os.PathLike[str]) -> bool:
    """Whether the file name ends in one of ARCHIVE_SUFFIXES (case-insensitive)."""
    return str(path).lower().endswith(ARCHIVE_SUFFIXES)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 (64 hex) of one file, memoised per process on (resolved path, size, mtime)
    (`geneb.core.provenance.cached_file_sha256`). Raises FileNotFoundError."""
    return cached_file_sha256(path)


def config_line(model: str) -> str:
    """The config line that points GENEB at a model's fetched weights, e.g. `model_weights: {m: /path/to/m}`."""
    return f"`{CONFIG_KEY}: {{{model}: /path/to/{model}}}`"


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
                f"{CONFIG_KEY}: model {model!r} is not in the registry" + (f"; did you mean {close}?" if close else "")
            )
        src = dict(models[model].get("source") or {})
        if src.get("kind") not in WEIGHT_KINDS:
            raise WeightsError(
                f"{CONFIG_KEY}: model {model} has source kind {src.get('kind')!r}; only models whose weights are "
                f"outside the hub (kind external or download) take a path here"
            )
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise WeightsError(f"{CONFIG_KEY}: model {model}: expected a path to a folder or an archive, got {path!r}")
        src["path"] = os.path.expanduser(str(path))
        models[model] = {**models[model], "source": src}
    return registry


def cache_folder(weights_dir: str | os.PathLike[str], model: str, sha256: str) -> Path:
    """`<weights_dir>/<model>/<sha256[:12]>`: the folder an archive, file or download with this sha256 becomes."""
    return Path(weights_dir) / model / sha256[:12]


def missing_files(folder: str | os.PathLike[str], expect: tuple[str, ...] | list[str] | None) -> list[str]:
    """The relative paths of `expect` that are not in `folder` (files or folders), in their given order."""
    return [rel for rel in expect or () if not (Path(folder) / rel).exists()]


def check_file_sha256(model: str, folder: str | os.PathLike[str], expected: Mapping[str, str] | None) -> None:
    """Check each {relative path: sha256} of `expected` against the file in `folder`. Raises WeightsError naming
    the model, the file, the expected and the actual sha256 (or that the file is missing)."""
    for rel, want in (expected or {}).items():
        p = Path(folder) / rel
        if not p.is_file():
            raise WeightsError(f"model {model}: {p} is missing; source.file_sha256 expects it with sha256 {want}")
        got = file_sha256(p)
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
            f"{config_line(model)}{expect} ({DOCS})",
        )
    p = Path(src.path)
    if not p.exists():
        return (
            "model_weights path missing",
            f"{CONFIG_KEY} gives {src.path}, which does not exist (relative paths resolve against the working "
            f"directory, {Path.cwd()}); {fetch}{expect}",
        )
    if p.is_dir() and src.kind == "download":
        return (
            "model_weights is a folder",
            f"{CONFIG_KEY} gives the folder {src.path}, but a download's copy is the downloaded file itself "
            f"({download_name(src.url) if not src.filename else src.filename}, sha256 {src.sha256}); name that file",
        )
    if p.is_dir():
        missing = missing_files(p, src.expect)
    elif is_archive(p):
        return None
    else:
        missing = [rel for rel in src.expect or () if rel != p.name]
    if missing:
        return (
            f"weights folder lacks {len(missing)} file(s)",
            f"{CONFIG_KEY} gives {src.path}, which lacks {', '.join(missing)}"
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

    * a folder: {kind, path, fingerprint, [expect], [file_sha256]}; its `file_sha256` are checked here;
    * an archive or a single file: {kind, file, sha256, unpack, [filename], path: the cache folder,
      [expect], [file_sha256]} (sha256 read here and checked against `source.sha256`);
    * a download: {kind, url, sha256, unpack, filename, path: the cache folder, [file], [expect],
      [file_sha256]} (a `model_weights` copy is checked against `source.sha256` here).

    Raises WeightsError for a checksum mismatch, FileNotFoundError for a folder that vanished."""
    from geneb.registry.files import folder_fingerprint

    src, model = spec.source, spec.id
    checks = {k: v for k, v in (("expect", src.expect), ("file_sha256", src.file_sha256)) if v}
    out: dict[str, Any] = {"kind": src.kind}
    if src.kind == "external":
        p = Path(str(src.path))
        if p.is_dir():
            check_file_sha256(model, p, src.file_sha256)
            return {**out, "path": str(src.path), "fingerprint": folder_fingerprint(p), **checks}
        sha = file_sha256(p)
        _expected_archive_sha(model, src, sha, str(p))
        unpack = is_archive(p)
        out.update(file=str(src.path), sha256=sha, unpack=unpack)
        if not unpack:
            out["filename"] = p.name
    else:
        sha = str(src.sha256).lower()
        if src.path:
            _expected_archive_sha(model, src, file_sha256(src.path), str(src.path))
            out["file"] = str(src.path)
        filename = src.filename or download_name(src.url)
        unpack = src.unpack if src.unpack is not None else is_archive(filename)
        out.update(url=src.url, sha256=sha, unpack=bool(unpack), filename=filename)
    return {**out, "path": str(cache_folder(weights_dir, model, sha)), **checks}


def download_name(url: str | None) -> str:
    """The file name a download is saved under: the last part of the URL's path ("weights" when it has none)."""
    name = Path(urlparse(str(url or "")).path).name
    return name or "weights"


def read_marker(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The marker of a complete cache folder (`MARKER`), or None when there is none or it cannot be read."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(source: Mapping[str, Any]) -> bool:
    """Whether the cache folder `source["path"]` is complete for these settings: its marker names the
    settings' sha256 (and the single file's name, when there is one)."""
    marker = read_marker(source["path"])
    if marker is None or marker.get("sha256") != source.get("sha256"):
        return False
    name = source.get("filename") if not source.get("unpack") else None
    return name is None or (Path(source["path"]) / name).is_file()
