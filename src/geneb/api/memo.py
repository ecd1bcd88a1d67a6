"""What `geneb.evaluate` reads again on every call, kept between calls of one process while the files are unchanged.

A notebook calls `evaluate` many times with the same registry file and config; reading and validating them is
not part of the workflow's per-task jobs (the workflow plans once per run). Each entry here is keyed on the
*content* of every file it was built from (sha256 of the bytes, never a modification time) and on the working
directory (relative paths resolve against it), so an edited file is read again and checked again on the next call.
Callers treat what they get as read-only.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from geneb.core import paths
from geneb.core.envs import ENVS_DIR
from geneb.registry.registry import Registry

#: how many registries / probe sections are kept (a notebook switches between a few sheets at most)
MAX_ENTRIES = 4
_registries: dict[tuple[Any, ...], Registry] = {}
_probe_sections: dict[str, dict[str, Any]] = {}


def _digest(path: str | os.PathLike[str] | None) -> str:
    """sha256 of a file's bytes; "-" for no path, "absent" for a path with no file."""
    if path is None:
        return "-"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"


def _remember(store: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(store) >= MAX_ENTRIES:
        store.pop(next(iter(store)))
    store[key] = value
    return value


def registry(
    sheet: str | Path,
    *,
    pins: str | Path | None,
    weights: Mapping[str, Any] | None,
    weights_dir: str | Path | None,
    extra: Sequence[str | Path] = (),
) -> Registry:
    """`geneb.registry.load.load_registry(sheet, pins=..., weights=..., weights_dir=..., extra=...)`, validated in
    full, read again only when the sheet, a user registry file of `extra` (config `registry_extra`), the pins file, an
    env file of envs/ or an argument changed (or the working directory, against which relative paths resolve).
    Raises what `load_registry` raises."""
    from geneb.registry.load import load_registry

    envs = tuple(sorted((p.name, _digest(p)) for p in Path(ENVS_DIR).glob("*.yaml")))
    key = (
        os.getcwd(),
        os.path.abspath(sheet),
        _digest(sheet),
        None if pins is None else (os.path.abspath(pins), _digest(pins)),
        repr(sorted((weights or {}).items())),
        None if weights_dir is None else str(weights_dir),
        envs,
        tuple((os.path.abspath(e), _digest(e)) for e in extra),
    )
    if key not in _registries:
        loaded = load_registry(sheet, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
        return _remember(_registries, key, loaded)
    return _registries[key]


def shipped_probe_section() -> dict[str, Any]:
    """The `probe` section of the checkout's config/config.yaml (the schema has no probe defaults), read again when
    the file changed. A fresh copy each call: the caller's config owns it."""
    import copy

    path = paths.repo_root() / "config" / "config.yaml"
    data = path.read_bytes()
    key = hashlib.sha256(data).hexdigest()
    if key not in _probe_sections:
        _remember(_probe_sections, key, yaml.safe_load(data.decode("utf-8"))["probe"])
    return copy.deepcopy(_probe_sections[key])
