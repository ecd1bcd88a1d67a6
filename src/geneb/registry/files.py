"""Content hashes of local model folders (torch-free, so the registry can fingerprint a local checkpoint
while Snakemake builds the DAG without importing torch)."""

from __future__ import annotations

import hashlib
import os
import re
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


#: the files of a model folder that a model reads, by suffix: weights, configs and tokenizers, remote code
MODEL_FILE_SUFFIXES = WEIGHT_SUFFIXES | {
    ".h5",
    ".msgpack",
    ".npz",
    ".npy",
    ".onnx",
    ".gguf",
    ".json",
    ".yaml",
    ".yml",
    ".model",
    ".vocab",
    ".tiktoken",
    ".py",
}
#: plain-text files a tokenizer reads (`vocab.txt`, `merges.txt`, `dict.txt`, `tokens.txt`); other .txt files are
#: notes
TOKENIZER_TEXT = re.compile(r"(vocab|merges|dict|tokens?)", re.IGNORECASE)


def is_model_file(relative: Path) -> bool:
    """Whether a file of a model folder (`relative` to the folder) is one a model reads: weights, configs,
    tokenizer files or remote code (MODEL_FILE_SUFFIXES, and .txt files named like a vocabulary or merges list).
    Documentation, notes, images, logs and hidden files are not: adding a README.md or NOTES.txt to a checkpoint
    folder leaves its fingerprint, and so its embedding cache, as it was."""
    if any(part.startswith(".") for part in relative.parts):
        return False
    if relative.suffix.lower() == ".txt":
        return bool(TOKENIZER_TEXT.search(relative.stem))
    return relative.suffix.lower() in MODEL_FILE_SUFFIXES


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over the files below `folder` that a model reads (`is_model_file`: weights, configs, tokenizer,
    remote code), by relative path, memoised per process on (names, sizes, mtimes). Identifies a local checkpoint
    in the extraction settings, so new weights give a new cache path and a note beside them does not. Raises
    FileNotFoundError when the folder does not exist (a folder without model files is refused when its model
    loads, naming what is missing)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"local model folder {folder} does not exist")
    files = sorted(p for p in root.rglob("*") if p.is_file() and is_model_file(p.relative_to(root)))
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root.resolve()), stamp)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = _sha256_files(files, root)
    return _FINGERPRINTS[key]
