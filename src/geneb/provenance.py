"""Provenance: stable hashes of settings and the versions of the packages that produce a result.

Every output row carries a `config_hash` (what was asked for) and package versions (what computed it), so a
number can be traced back and two numbers are only compared when they were made the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import metadata
from typing import Any

from geneb import __version__

#: a pinned revision: a full 40-hex git commit (hub models, hub datasets, remote code); never a branch or tag
REVISION = re.compile(r"^[0-9a-f]{40}$")

#: packages whose versions are recorded next to every result
TRACKED_PACKAGES = ("numpy", "scikit-learn", "scipy", "torch", "transformers", "tokenizers", "h5py", "pandas")


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


def file_sha256(path: str | os.PathLike[str], length: int = 12) -> str:
    """First `length` hex digits (64: all of them) of the sha256 of a file's bytes, read in 1 MiB blocks.
    Raises OSError when the file cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:length]


def package_versions(packages: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    """Installed versions of `packages` (and geneb itself); a package that is not installed maps to ''."""
    versions = {"geneb": __version__}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions
