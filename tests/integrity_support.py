"""Real finished files for the content-check tests (geneb.core.integrity): one small run of a real ../shared task
by the project's own writers (`geneb.evaluate` with the k-mer model: prepared splits and card, shot file, HDF5
embeddings, probe and prediction tables, score table; plus the task audit by `audit_prepared`), and the damage
the tests do to them: single-byte flips and truncations.

Flips: every 97th byte plus every byte of the last 4 KiB (`flip_offsets`); each byte is XORed with 0xFF, so its
value always changes. Truncations: to 0, 1, 8 bytes, half, all but 4 KiB and all but 1 byte (`cut_sizes`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

TASK = "ienhancer2l_strong_vs_weak"
PROTOCOL = "geneb-paper"
MODEL = "kmer-3"
#: the distance between flipped bytes, and the tail in which every byte is flipped
STEP, TAIL = 97, 4096


def flip_offsets(size: int) -> list[int]:
    """Every STEP-th byte offset of a file of `size` bytes, plus every offset of its last TAIL bytes."""
    return sorted(set(range(0, size, STEP)) | set(range(max(0, size - TAIL), size)))


def cut_sizes(size: int) -> list[int]:
    """The lengths a file of `size` bytes is truncated to."""
    return sorted({0, 1, 8, size // 2, max(0, size - TAIL), size - 1} - {size})


@contextlib.contextmanager
def flipped(path: Path, offset: int, original: bytes) -> Iterator[None]:
    """`path` with its byte at `offset` XORed with 0xFF (`original`: its content), restored afterwards."""
    data = bytearray(original)
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    try:
        yield
    finally:
        path.write_bytes(original)


@contextlib.contextmanager
def cut(path: Path, size: int, original: bytes) -> Iterator[None]:
    """`path` truncated to `size` bytes, restored afterwards."""
    path.write_bytes(original[:size])
    try:
        yield
    finally:
        path.write_bytes(original)


def finished_files(root: Path) -> dict[str, Path]:
    """{kind: path} of the finished run under `root` (the workflow's layout)."""
    res, out = root / "resources", root / "results"
    (h5,) = (res / "embeddings" / MODEL).glob(f"*/{TASK}.h5")
    return {
        "train": res / "tasks" / TASK / "train.parquet",
        "test": res / "tasks" / TASK / "test.parquet",
        "card": res / "tasks" / TASK / "card.json",
        "audit": res / "tasks" / TASK / "audit.json",
        "shots": res / "shots" / PROTOCOL / f"{TASK}.json",
        "embeddings": h5,
        "probes": out / "probes" / PROTOCOL / MODEL / f"{TASK}.parquet",
        "predictions": out / "predictions" / PROTOCOL / MODEL / f"{TASK}.parquet",
        "scores": out / "tables" / "scores.parquet",
    }


@pytest.fixture(scope="session")
def digested_run(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Path:
    """A finished small run (module docstring) in its own folder; tests copy it before they damage it."""
    import geneb
    from geneb.run.config_checks import check_config, default_schema_files, read_yaml
    from geneb.tasks.audit_step import audit_prepared

    root = tmp_path_factory.mktemp("finished-run")
    caps = {"seed": 0, "default": {"max_train": 200, "max_test": 100}, "per_task": {}}
    geneb.evaluate(MODEL, [TASK], task_source=str(shared / "data" / "tasks"), caps=caps, workdir=root)
    task_dir = root / "resources" / "tasks" / TASK
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    config = check_config(config, read_yaml(default_schema_files()["config"]))  # the schema's defaults filled
    audit_prepared(
        train=task_dir / "train.parquet",
        test=task_dir / "test.parquet",
        card=task_dir / "card.json",
        output=task_dir / "audit.json",
        task=TASK,
        settings=config["task_audit"],
    )
    return root
