"""Runs for the site tests: a real small workflow run (`snakemake site`: 2 real ../shared tasks x the 3-mer
model and the GC shortcut, capped small; tables, audit, figures and the site), built once per test session for
every pytest-xdist worker (tests/pool's two runs start from it too), and copies of a results folder with one table
changed (its content digest written again, as the workflow's writers do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geneb.core import integrity
from workflow_support import run_snakemake, shared_folder, write_run_config

TASKS = ["ienhancer2l_strong_vs_weak", "gue_prom_core_all"]
MODELS = ["kmer-3", "shortcut-gc"]
#: caps.default of the run (the pool's runs of one model each are this run's config with `models` narrowed)
CAPS = {"seed": 0, "default": {"max_train": 300, "max_test": 150}, "per_task": {}}


def build_real_run(folder: Path, shared: Path) -> None:
    """folder/run: TASKS x MODELS run by the real workflow (`snakemake site`, a subprocess)."""
    run = folder / "run"
    write_run_config(run, shared / "data" / "tasks", TASKS, MODELS, n_resamples=100)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["caps"] = CAPS
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    done = run_snakemake(run, "site", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:]


def site_run(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Path:
    """The run folder of `build_real_run`, built once per session (`shared_folder`): read it, never change it."""
    return shared_folder(tmp_path_factory, "site-run", lambda folder: build_real_run(folder, shared)) / "run"


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
