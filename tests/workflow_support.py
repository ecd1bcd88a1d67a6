"""Small real workflow runs for the tests: a run folder's config (the repository's, with absolute sheet paths and
a task source of the test's own) and `python -m snakemake` in that folder, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]


def write_run_config(
    run: Path, mirror: Path, tasks: list[str], models: list[str], n_resamples: int | None = None
) -> None:
    """run/config/config.yaml: config/config.yaml with `mirror` as the task source, `tasks` x `models`, and
    (when given) a lighter analysis bootstrap."""
    (run / "config").mkdir(parents=True)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.update(
        task_source=str(mirror),
        task_sheet=str(REPO / "config/tasks.tsv"),
        model_sheet=str(REPO / "config/models.yaml"),
        model_revisions=str(REPO / "config/model_revisions.yaml"),
        tasks=list(tasks),
        models=list(models),
    )
    if n_resamples is not None:
        config["analysis"]["bootstrap"]["n_resamples"] = n_resamples
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))


def run_snakemake(
    run: Path, *args: str, timeout: int = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m snakemake -s <repo>/Snakefile --cores 1 <args>` in `run`, stdout and stderr together; the
    environment without the task-source and partial-run variables, which would redirect the run, plus `env`."""
    env = {k: v for k, v in os.environ.items() if k not in ("GENEB_TASK_SOURCE", "GENEB_PARTIAL_RUN")} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1", *args],
        cwd=run,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def run_plan(run: Path, *overlays: str | Path) -> Any:
    """The `geneb.run.plan.RunPlan` a job process of `run` plans (run/config/config.yaml, then each overlay file
    merged over it as `--configfile` does; no pre-flight, nothing moved): the paths its rules read and write."""
    import logging

    from snakemake.utils import update_config

    from geneb.run.plan import plan_run

    config = yaml.safe_load((run / "config/config.yaml").read_text())
    for overlay in overlays:
        update_config(config, yaml.safe_load((run / overlay).read_text()))
    cwd = Path.cwd()
    os.chdir(run)
    try:
        return plan_run(
            config, main_process=False, conda_deploys=False, partial_file=None, log=logging.getLogger("run_plan")
        )
    finally:
        os.chdir(cwd)
