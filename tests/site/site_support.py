"""Runs for the site tests: a real small workflow run (`snakemake site`: 2 real ../shared tasks x the 3-mer
model and the GC shortcut, capped small; tables, audit, figures and the site: `workflow_support.site_run`, built
once per test session for every pytest-xdist worker; tests/pool's two runs start from it too), and copies of a
results folder with one table changed (its content digest written again, as the workflow's writers do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from geneb.core import integrity
from workflow_support import site_run


@pytest.fixture(scope="session")
def real_run(tmp_path_factory, shared) -> Path:
    """The run folder of a finished `snakemake site` (results/tables, results/figures, results/site)."""
    return site_run(tmp_path_factory, shared)


def copy_results(results: Path, dest: Path) -> Path:
    """A copy of the results folder `results` at `dest` (tables and figures; sidecar digests kept)."""
    for sub in ("tables", "figures"):
        if (results / sub).is_dir():
            shutil.copytree(results / sub, dest / sub)
    return dest


def rewrite_table(path: Path, table: pd.DataFrame) -> None:
    """Write `table` to the parquet `path` with its metadata and a fresh content digest."""
    old = integrity.read_parquet(path)
    table.attrs = dict(old.attrs)
    integrity.write_parquet(table, path)
