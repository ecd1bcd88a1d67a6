"""Two real small runs for the pooling tests: the same 2 real ../shared tasks, capped alike, one with the 3-mer model
and one with the GC shortcut (`snakemake leaderboard`: probes, scores, task audit, leaderboard)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workflow_support import run_snakemake, write_run_config

TASKS = ["ienhancer2l_strong_vs_weak", "gue_prom_core_all"]
RUNS = {"cluster-a": ["kmer-3"], "cluster-b": ["shortcut-gc"]}


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory, shared) -> dict[str, Path]:
    """{name: run folder} of two finished real runs (results/tables with scores, task_audit, leaderboard)."""
    root = tmp_path_factory.mktemp("pool-runs")
    out = {}
    for name, models in RUNS.items():
        run = root / name
        write_run_config(run, shared / "data" / "tasks", TASKS, models, n_resamples=100)
        config = yaml.safe_load((run / "config/config.yaml").read_text())
        config["caps"] = {"seed": 0, "default": {"max_train": 300, "max_test": 150}, "per_task": {}}
        (run / "config/config.yaml").write_text(yaml.safe_dump(config))
        done = run_snakemake(run, "leaderboard", timeout=1200)
        assert done.returncode == 0, done.stdout[-4000:]
        out[name] = run
    return out
