"""Real finished files for the content-check tests (geneb.core.integrity): one small run of a real ../shared task
by the project's own writers (`geneb.evaluate` with the k-mer model: prepared splits and card, shot file, HDF5
embeddings, probe and prediction tables, score table; plus the task audit by `audit_prepared`), run from its own
config (root/config/config.yaml) so its files are found where the plan of that config puts them (the resources/
layout, geneb.run.layout: `finished_files`), and the damage the tests do to them: single-byte flips and truncations.

Flips: each byte is XORed with 0xFF, so its value always changes. `sampled_flip_offsets` (the reader test,
tests/core/test_integrity.py, and `geneb verify`'s, tests/cli/test_verify.py) is a seeded, stratified sample of at most 58 offsets of a file (58 for each file of
this run): the first and the last byte, FLIPS_PER_DECILE (4) offsets drawn from each tenth of the file, and
FLIPS_AT_END (8) offsets from each of its first and its last TAIL (4 KiB) bytes, drawn by
`numpy.random.default_rng([FLIP_SEED, crc32(kind)])` (FLIP_SEED 20240917): the same offsets on every run and
machine, other ones for each kind. Truncations: to 0, 1, 8 bytes, half, all but 4 KiB and all but 1 byte (`cut_sizes`).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from workflow_support import run_plan, shared_folder, write_run_config

TASK = "ienhancer2l_strong_vs_weak"
PROTOCOL = "geneb-paper"
MODEL = "kmer-3"
#: the head and tail regions of a file that flips and truncations reach specially (bytes)
TAIL = 4096


#: the seed of the sampled flips (`sampled_flip_offsets`), and how many offsets each region of a file gives
FLIP_SEED, FLIPS_PER_DECILE, FLIPS_AT_END = 20240917, 4, 8


def sampled_flip_offsets(size: int, kind: str) -> list[int]:
    """A seeded, stratified sample of the byte offsets of a file of `size` bytes (the module docstring): offsets 0
    and size-1, FLIPS_PER_DECILE offsets from each tenth of the file (a file's header, its middle, its data pages,
    its footer or attributes), FLIPS_AT_END offsets from its first and from its last TAIL bytes; distinct offsets
    of a region, drawn without replacement by `numpy.random.default_rng([FLIP_SEED, crc32(kind)])`, so a kind's
    sample is the same on every run. A region smaller than its count gives all its offsets."""
    rng = np.random.default_rng([FLIP_SEED, zlib.crc32(kind.encode())])
    bounds = [size * i // 10 for i in range(11)]
    regions = [(range(a, b), FLIPS_PER_DECILE) for a, b in zip(bounds, bounds[1:])]
    regions += [(range(min(size, TAIL)), FLIPS_AT_END), (range(max(0, size - TAIL), size), FLIPS_AT_END)]
    picked = {0, size - 1} if size else set()
    for region, count in regions:
        drawn = rng.choice(len(region), size=min(count, len(region)), replace=False) if len(region) else []
        picked.update(region.start + int(i) for i in drawn)
    return sorted(picked)


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
    """{kind: path} of the finished run under `root`: the paths the plan of its config (root/config/config.yaml,
    `workflow_support.run_plan`) gives them (the resources/ layout, geneb.run.layout)."""
    plan = run_plan(root)
    return {kind: root / path for kind, path in run_files(plan).items()}


def run_files(plan: Any) -> dict[str, str]:
    """{kind: path relative to the run folder} of the run `plan` (a `geneb.run.plan.RunPlan`) plans."""
    (probes,) = plan.probe_tables()
    (predictions,) = plan.probe_tables(kind="predictions")
    return {
        **plan.layout.task_inputs(TASK),  # train, test, card
        "audit": plan.layout.audit_file(TASK),
        "shots": plan.layout.shot_file(PROTOCOL, TASK),
        "embeddings": plan.layout.embedding_file(MODEL, TASK),
        "probes": probes,
        "predictions": predictions,
        "scores": plan.results_path("tables/scores.parquet"),
    }


def write_config(root: Path, shared: Path) -> None:
    """root/config/config.yaml of the finished run: the repository's config with ../shared's task mirror, TASK x
    MODEL, small caps (`workflow_support.write_run_config`)."""
    write_run_config(root, shared / "data" / "tasks", [TASK], [MODEL])
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    config["caps"] = {"seed": 0, "default": {"max_train": 200, "max_test": 100}, "per_task": {}}
    config["protocols"] = [PROTOCOL]
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(config))


def _build_digested_run(root: Path, shared: Path) -> None:
    """The finished small run of `digested_run` in `root`."""
    import geneb
    from geneb.tasks.audit import audit_prepared

    write_config(root, shared)
    cwd = Path.cwd()
    os.chdir(root)  # the config's relative paths (the task lock) read as the workflow reads them
    try:
        geneb.evaluate(MODEL, [TASK], protocol=PROTOCOL, config="config/config.yaml", workdir=root)
    finally:
        os.chdir(cwd)
    plan = run_plan(root)
    files = run_files(plan)
    assert all((root / path).is_file() for kind, path in files.items() if kind != "audit"), files
    audit_prepared(
        **{key: root / path for key, path in plan.layout.task_inputs(TASK).items()},
        output=root / files["audit"],
        task=TASK,
        settings=plan.config["task_audit"],
    )


@pytest.fixture(scope="session")
def digested_run(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Path:
    """A finished small run (module docstring) in its own folder, with its config (`write_config`), built once per
    session for every xdist worker (`workflow_support.shared_folder`); tests copy it before they damage it."""
    return shared_folder(tmp_path_factory, "digested-run", lambda root: _build_digested_run(root, shared))
