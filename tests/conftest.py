"""Shared pytest fixtures: where the read-only `../shared` folder lives, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The read-only shared folder (tasks, checkpoints, reference); `GENEB_SHARED` overrides `../shared`."""
    return Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    if not (path / "data" / "tasks.tsv").exists():
        pytest.fail(f"../shared not found at {path}; set GENEB_SHARED")
    return path


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# The extraction fixtures (a zoo of tiny checkpoints, prepared task folders), shared by tests/cases,
# tests/embeddings and tests/models: imported here so that pytest finds them without per-module imports.
from extraction_support import make_task, zoo  # noqa: E402, F401
