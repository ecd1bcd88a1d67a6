"""Two real small runs for the pooling tests: the same 2 real ../shared tasks, capped alike, one with the 3-mer model
and one with the GC shortcut (`snakemake leaderboard`: probes, scores, task audit, leaderboard), built once per test
session for every pytest-xdist worker. Both start from the site tests' run of the same tasks, caps and two models
(`workflow_support.site_run`): each is its config with one model, its prepared and audited tasks, embeddings and
probe tables of that model (copies; Snakemake's records kept), so only the score table and what reads it are made
again, as a run of that model alone makes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from workflow_support import run_snakemake, shared_folder, site_run

RUNS = {"cluster-a": ["kmer-3"], "cluster-b": ["shortcut-gc"]}


def one_model_run(source: Path, run: Path, models: list[str]) -> None:
    """run: the finished run `source` narrowed to `models` (config, caches, these models' probe tables and
    Snakemake's records, mtimes kept), then `snakemake leaderboard` in it."""
    for sub in ("config", "resources", ".snakemake/metadata", ".snakemake/incomplete"):
        shutil.copytree(source / sub, run / sub)
    for folder in (run / "resources/embeddings").iterdir():  # another model's embeddings: not this run's
        if folder.name not in models:
            shutil.rmtree(folder)
    for kind in ("probes", "predictions"):
        for folder in sorted((source / "results" / kind).glob("*/*")):  # <kind>/<protocol>/<model>
            if folder.name in models:
                shutil.copytree(folder, run / folder.relative_to(source))
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["models"] = list(models)
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    done = run_snakemake(run, "leaderboard", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:]


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory, shared) -> dict[str, Path]:
    """{name: run folder} of two finished real runs (results/tables with scores, task_audit, leaderboard)."""
    source = site_run(tmp_path_factory, shared)

    def build(root: Path) -> None:
        for name, models in RUNS.items():
            one_model_run(source, root / name, models)

    root = shared_folder(tmp_path_factory, "pool-runs", build)
    return {name: root / name for name in RUNS}
