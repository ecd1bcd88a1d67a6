"""Content hashes of local model folders (torch-free, so the registry can fingerprint a local checkpoint
while Snakemake builds the DAG without importing torch)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".ckpt", ".pth"}


def _sha256_files(files: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(root)).encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def weights_hash(folder: str | os.PathLike[str]) -> str:
    """sha256 over the weight files (*.safetensors, *.bin, *.pt, *.ckpt, *.pth) of a model folder, in name
    order. Raises FileNotFoundError when there are none."""
    root = Path(folder)
    files = sorted(p for p in root.iterdir() if p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"no weight files in {folder}")
    return _sha256_files(files, root)


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over every regular file below `folder` (weights, configs, tokenizer, remote code; hidden files
    skipped), by relative path, memoised per process on (names, sizes, mtimes). Identifies a local
    checkpoint in the extraction settings, so new weights give a new cache path. Raises FileNotFoundError."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"local model folder {folder} does not exist")
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root.resolve()), stamp)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = _sha256_files(files, root)
    return _FINGERPRINTS[key]
