"""Shared pytest fixtures: where the read-only `../shared` folder lives, and small helpers."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from workflow_support import shared_dir

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long real runs first: with `--dist loadfile` pytest-xdist hands out test files in collection order, so
    the files of `slow` and `slurm` tests start at once and the short tests fill the other worker around them,
    instead of one long run ending the session alone (longest first: tests/workflow's end-to-end runs, the
    quickstart and the runtime envs, then the other slow and Slurm tests; the order of the rest is kept)."""

    def rank(item: pytest.Item) -> int:
        if not (item.get_closest_marker("slow") or item.get_closest_marker("slurm")):
            return 2
        return 0 if item.path.parent.name == "workflow" else 1

    items.sort(key=rank)


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    if not (path / "data" / "tasks.tsv").exists():
        pytest.fail(f"../shared not found at {path}; set GENEB_SHARED")
    return path


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def private_model_servers(monkeypatch):
    """Each test's extraction jobs start their own model servers (geneb.extract.server), in a folder of the
    test's own (short: a socket path holds at most 107 bytes), stopped when the test ends: no test is served a
    model another test loaded."""
    from extraction_support import stop_servers
    from geneb.core.ipc import _SERVER_DIR_ENV as SERVER_DIR_ENV

    folder = tempfile.mkdtemp(prefix="geneb-ms-", dir="/tmp")
    monkeypatch.setenv(SERVER_DIR_ENV, folder)
    yield Path(folder)
    stop_servers(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """The shared small run, finished (tests/workflow_support.py, `build_small_run`: 2 real tasks x kmer-3,
    kmer-4 up to the tables, figures and report), built once per session for every xdist worker. Read it as it
    is; a test that changes a run takes a copy first (`workflow_support.copy_run`)."""
    from workflow_support import build_small_run, shared_folder

    return shared_folder(tmp_path_factory, "small-run", build_small_run)


# The extraction fixtures (a zoo of tiny checkpoints, prepared task folders), shared by tests/cases,
# tests/encoders, tests/extract and tests/registry: imported here so that pytest finds them without per-module imports.
from extraction_support import make_task, zoo  # noqa: E402, F401

# A small finished run of a real task by the project's own writers, for the content-check tests.
from integrity_support import digested_run  # noqa: E402, F401

# The committed registry (schema, typed specs, the validated mapping), shared by the registry and adapter tests.
from registry_support import registry, schema, specs  # noqa: E402, F401

# The synthetic analysed run shared by the analysis, figure, report and CLI tests.
from synthetic_run import synthetic_run  # noqa: E402, F401
from synthetic_views import view_run  # noqa: E402, F401
