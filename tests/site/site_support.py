"""Runs for the site tests: a real small workflow run (`snakemake site`: 2 real ../shared tasks x the 3-mer
model and the GC shortcut, capped small; tables, audit, figures and the site), and copies of a results folder
with one table changed (its content digest written again, as the workflow's writers do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geneb.core import integrity
from workflow_support import run_snakemake, write_run_config

TASKS = ["ienhancer2l_strong_vs_weak", "gue_prom_core_all"]
MODELS = ["kmer-3", "shortcut-gc"]


@pytest.fixture(scope="session")
def real_run(tmp_path_factory, shared) -> Path:
    """The run folder of a finished `snakemake site` (results/tables, results/figures, results/site)."""
    run = tmp_path_factory.mktemp("site-run") / "run"
    write_run_config(run, shared / "data" / "tasks", TASKS, MODELS, n_resamples=100)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["caps"] = {"seed": 0, "default": {"max_train": 300, "max_test": 150}, "per_task": {}}
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    done = run_snakemake(run, "site", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:]
    return run


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
