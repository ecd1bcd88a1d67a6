"""Fixtures of the zero-shot tests: the real tasks of ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def real_tasks(shared: Path) -> Path:
    """The folder of the 80 real labelled tasks (`../shared/data/tasks`)."""
    return shared / "data" / "tasks"
