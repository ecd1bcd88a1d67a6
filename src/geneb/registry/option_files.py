"""The files and folders a `python` entry's options name (torch-free, import-free): which option strings name a
path, their content's sha256 (`path_sha256`, memoised per process), the options with those paths masked for the
settings hash, and the options that end like a model file but name nothing (`geneb.registry.python_entry` says
how the settings hash uses them)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from geneb.core.provenance import cached_file_sha256
from geneb.registry.files import MODEL_FILE_SUFFIXES


def absolute_options(value: Any, base_dir: Path) -> Any:
    """`value` (an options mapping, list or leaf) with every relative string that names an existing file or folder
    under `base_dir` made absolute there; everything else as it is."""
    if isinstance(value, dict):
        return {k: absolute_options(v, base_dir) for k, v in value.items()}
    if isinstance(value, list):
        return [absolute_options(v, base_dir) for v in value]
    if isinstance(value, str) and could_be_path(value):
        path = Path(os.path.expanduser(value))
        if not path.is_absolute() and (base_dir / path).exists():
            return os.path.normpath(base_dir / path)
    return value


def could_be_path(value: str) -> bool:
    """Whether an option string may name a file: not empty, not only dots (`.`, `..`: a folder of everything),
    not a URL."""
    return bool(value.strip(".")) and "://" not in value and "\n" not in value


#: what `hash_view` puts in place of an option's path (its content is in `load.options_sha256`)
PATH_PLACEHOLDER = "<path: load.options_sha256>"


def option_strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(option key, string) of every string leaf of an options mapping: `weights`, `a.b`, `paths[0]`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from option_strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from option_strings(v, f"{key}[{i}]")
    elif isinstance(value, str):
        yield key, value


def masked_options(value: Any, paths: Mapping[str, str], key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {k: masked_options(v, paths, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked_options(v, paths, f"{key}[{i}]") for i, v in enumerate(value)]
    return PATH_PLACEHOLDER if isinstance(value, str) and key in paths else value


def path_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of what a path holds: a file's bytes; a folder's files (below it, hidden ones and
    `__pycache__` left out), each as its relative POSIX path and its bytes' sha256, in path order. Memoised per
    process on (resolved path, size, mtime) of each file. Raises FileNotFoundError when nothing is there."""
    root = Path(path)
    if root.is_file():
        return cached_file_sha256(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{path} does not exist")
    h = hashlib.sha256(b"folder")
    files = sorted(
        (p.relative_to(root).as_posix(), p)
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(root).parts)
    )
    for rel, p in files:
        h.update(f"\0{rel}\0{cached_file_sha256(p)}".encode())
    return h.hexdigest()


def missing_option_files(options: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """[(option key, value)] of the string options that end like a model file (`MODEL_FILE_SUFFIXES`) and name
    nothing (module docstring)."""
    return [
        (key, value)
        for key, value in option_strings(options or {})
        if could_be_path(value)
        and Path(os.path.expanduser(value)).suffix.lower() in MODEL_FILE_SUFFIXES
        and not Path(os.path.expanduser(value)).exists()
    ]


def missing_option_message(model: str, missing: list[tuple[str, str]]) -> str:
    """The reason naming the model and each option and path of `missing_option_files`."""
    named = "; ".join(f"load.options.{key} names {value!r}" for key, value in missing)
    return (
        f"model {model}: {named}, and there is no such file (a relative path is looked for in the folder of the "
        f"registry file, then in the working directory {os.getcwd()})"
    )
