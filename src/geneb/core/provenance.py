"""Provenance: stable hashes of settings, the rerun keys built on them, the versions of the packages that produce a
result, and the git commit of the running GENEB code.

Every output row carries a `config_hash` (what was asked for), package versions and the code revision
(`code_revision`: commit and dirty-tree flag; what computed it), so a number can be traced back and two numbers
are only compared when they were made the same way.

Rerun keys: params that stay equal from one Snakemake call to the next. Params are rerun triggers, compared by
`repr` (Snakemake's persistence): `stable_params` sorts every mapping so that key order in a YAML file, or a dict
built in a different order, never reruns a job; `params_hash` is the 12-hex cache key a path carries (the
resources/ layout, `geneb.run.layout`, and the zero-shot stage's paths, `geneb.zeroshot.plan`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, TypedDict

import geneb.core.paths as paths
from geneb import __version__

#: a pinned revision: a full 40-hex git commit (hub models, hub datasets, remote code); never a branch or tag
REVISION = re.compile(r"^[0-9a-f]{40}$")

#: packages whose versions are recorded next to every result
_TRACKED_PACKAGES = ("numpy", "scikit-learn", "scipy", "torch", "transformers", "tokenizers", "h5py", "pandas")


def canonical_json(obj: Any) -> str:
    """Serialise `obj` to JSON with sorted keys and no whitespace, so equal settings give equal strings.

    Sets are rendered sorted; tuples as lists. Raises TypeError for objects JSON cannot represent.
    """

    def default(o: Any) -> Any:
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        if hasattr(o, "item"):  # numpy scalars
            return o.item()
        raise TypeError(f"cannot hash a {type(o).__name__} into a provenance key: {o!r}")

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=default, ensure_ascii=True)


def stable_hash(obj: Any, length: int = 12) -> str:
    """First `length` hex digits of the sha256 of `canonical_json(obj)`; identical across processes/machines."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def stable_params(obj: Any) -> Any:
    """`obj` with every mapping's keys sorted (recursively), sets as sorted lists, tuples as lists, numpy
    scalars as Python numbers and integral floats as ints (`200.0` -> `200`, `C: 1` and `C: 1.0` alike): the
    same value however it was written or built, so `repr` (Snakemake's params key) is equal across processes,
    key orders and number spellings. Booleans stay booleans. Raises TypeError for objects JSON
    cannot hold."""
    return _integral_floats_as_ints(json.loads(canonical_json(obj)))


def _integral_floats_as_ints(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _integral_floats_as_ints(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_integral_floats_as_ints(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


def params_hash(params: Mapping[str, Any]) -> str:
    """The 12-hex cache key of a path: `stable_hash` of `stable_params(params)` (sorted mappings, so the key order
    of a YAML file never gives a new path), the primitive of the extraction settings hash too."""
    return stable_hash(stable_params(dict(params)))


def check_hash(what: str, wildcard: str, current: str) -> None:
    """Raises ValueError when the hash `wildcard` of a path asking for `what` is not this config's `current`."""
    if wildcard != current:
        raise ValueError(f"{what}: the path has hash {wildcard}, this config's is {current}")


def file_sha256(path: str | os.PathLike[str], length: int = 12) -> str:
    """First `length` hex digits (64: all of them) of the sha256 of a file's bytes, read in 1 MiB blocks.
    Raises OSError when the file cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:length]


#: `cached_file_sha256`'s digests by (resolved path, size, mtime_ns)
_FILE_SHA256: dict[tuple[str, int, int], str] = {}


def cached_file_sha256(path: str | os.PathLike[str]) -> str:
    """The full sha256 (64 hex) of a file (`file_sha256`), memoised per process on (resolved path, size, mtime), so
    a plan that fingerprints the same weights again reads them once. Raises OSError (FileNotFoundError)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _FILE_SHA256:
        _FILE_SHA256[key] = file_sha256(p, length=64)
    return _FILE_SHA256[key]


def package_versions(packages: tuple[str, ...] = _TRACKED_PACKAGES) -> dict[str, str]:
    """Installed versions of `packages` (and geneb itself); a package that is not installed maps to ''.

    Read once per process (a fresh dict each call): the versions of the code this process has loaded, which an
    upgrade on disk while a long-lived probe worker or model server runs does not change (reading the
    distribution metadata again would then record the new version beside the old code), and the metadata scan
    is a noticeable part of a small probe job."""
    return dict(_versions(tuple(packages)))


@cache
def _versions(packages: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    versions = {"geneb": __version__}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return tuple(versions.items())


#: what `code_revision` records when the running code is not a git checkout (an installed copy, a tarball)
_UNKNOWN = "unknown"
#: the paths of a checkout, besides the package itself, whose changes make the running code dirty: the workflow
#: (rules, scripts, schemas) and its entry point. Configuration is not code: configs, sheets and the pins
#: lockfile are recorded by their own hashes (config_hash, the extraction settings hash, data_hash).
_CODE_PATHS = ("workflow", "Snakefile")
#: the provenance columns of `code_revision`, in this order, on every output row
CODE_REVISION_KEYS = ("geneb_commit", "geneb_dirty")


class CodeRevision(TypedDict):
    """The revision of the running code (`code_revision`): the keys are CODE_REVISION_KEYS, in that order."""

    geneb_commit: str  # the 40-hex commit of the checkout, or UNKNOWN
    geneb_dirty: bool | None  # uncommitted changes under the package or CODE_PATHS; None: unknown


def _git(folder: Path, *args: str) -> str | None:
    """stdout of `git -C folder args...`, stripped; None when git is missing, fails or takes over 20 s."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _code_revision(package_dir: Path) -> CodeRevision:
    """`code_revision` for the package at `package_dir` (uncached)."""
    unknown = CodeRevision(geneb_commit=_UNKNOWN, geneb_dirty=None)
    top = _git(package_dir, "rev-parse", "--show-toplevel")
    # the package's own files must be tracked by that repository: an installed copy inside a venv that itself
    # sits in some git checkout (e.g. ./.venv, ignored) would otherwise report that checkout's commit
    if top is None or _git(package_dir, "ls-files", "--error-unmatch", "--", "__init__.py") is None:
        return unknown
    commit = _git(package_dir, "rev-parse", "HEAD")
    if commit is None or not REVISION.match(commit):
        return unknown
    paths = [str(package_dir)] + [str(Path(top) / p) for p in _CODE_PATHS if (Path(top) / p).exists()]
    status = _git(Path(top), "status", "--porcelain", "--untracked-files=normal", "--", *paths)
    if status is None:
        return CodeRevision(geneb_commit=commit, geneb_dirty=None)
    return CodeRevision(geneb_commit=commit, geneb_dirty=bool(status))


@cache
def _cached(package_dir: str) -> tuple[str, bool | None]:
    """(commit, dirty) of `_code_revision`, kept per process as an immutable pair."""
    rev = _code_revision(Path(package_dir))
    return rev["geneb_commit"], rev["geneb_dirty"]


def code_revision(package_dir: str | os.PathLike[str] | None = None) -> CodeRevision:
    """The git revision of the running GENEB code, computed once per process: {"geneb_commit": the 40-hex
    commit of the checkout the package is imported from, "geneb_dirty": True when the package or the
    workflow (CODE_PATHS) has uncommitted changes or untracked files, False when clean}.

    For a copy that is not a git checkout (an installed wheel, a tarball, a package git does not track) it is
    {"geneb_commit": "unknown", "geneb_dirty": None}: unknown, recorded as such, never guessed from a
    version number. package_dir: the package folder (default: this package's); tests pass another.
    """
    folder = Path(package_dir) if package_dir is not None else paths.PACKAGE_DIR
    commit, dirty = _cached(str(folder.resolve()))
    return CodeRevision(geneb_commit=commit, geneb_dirty=dirty)


def dirty_label(dirty: bool | None) -> str:
    """`geneb_dirty` as text for places that hold no null (HDF5 attributes, JSON summaries read by people):
    "true", "false" or "unknown"."""
    return _UNKNOWN if dirty is None else str(bool(dirty)).lower()
