"""Small real workflow runs for the tests: a run folder's config (the repository's, with absolute sheet paths and
a task source of the test's own) and `python -m snakemake` in that folder, output captured."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The read-only shared folder (tasks, checkpoints, reference); `GENEB_SHARED` overrides `../shared`."""
    return Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared")).resolve()


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
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1", *args],
        cwd=run,
        env=_snakemake_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )


def run_plan(run: Path, *overlays: str | Path, log: Any = None) -> Any:
    """The `geneb.run.plan.RunPlan` a job process of `run` plans (run/config/config.yaml, then each overlay file
    composed with it as the workflow composes `--configfile`s, `geneb.run.overlays`; no pre-flight, nothing moved):
    the paths its rules read and write. log: gets the composition's lines (default: a logger of this module)."""
    import logging

    from geneb.run.overlays import compose_files
    from geneb.run.plan import plan_run

    cwd = Path.cwd()
    os.chdir(run)
    try:
        composition = compose_files(["config/config.yaml", *overlays])
        log = log or logging.getLogger("run_plan")
        composition.log(log)
        return plan_run(
            composition.config,
            composition=composition,
            main_process=False,
            conda_deploys=False,
            partial_file=None,
            log=log,
        )
    finally:
        os.chdir(cwd)


def reversed_mappings(obj: Any) -> Any:
    """`obj` with the key order of every mapping reversed (same content): a config written another way."""
    if isinstance(obj, dict):
        return {k: reversed_mappings(obj[k]) for k in reversed(list(obj))}
    if isinstance(obj, list):
        return [reversed_mappings(x) for x in obj]
    return obj


def _snakemake_env(env: dict[str, str] | None) -> dict[str, str]:
    """The process environment a test's workflow sees: without the task-source and partial-run variables, which
    would redirect the run, plus `env`."""
    drop = ("GENEB_TASK_SOURCE", "GENEB_PARTIAL_RUN")
    return {k: v for k, v in os.environ.items() if k not in drop} | (env or {})


def _workflow_profile_dag_settings() -> dict[str, Any]:
    """The DAG settings of the workflow profile (profiles/default, which the `snakemake` command loads on every
    run: its rerun triggers and rerun-incomplete), read from the profile file so the in-process plan follows it."""
    from snakemake.settings.enums import RerunTrigger

    (profile,) = (REPO / "profiles" / "default").glob("profile*.yaml")
    keys = yaml.safe_load(profile.read_text())
    settings: dict[str, Any] = {"force_incomplete": bool(keys.get("rerun-incomplete", False))}
    if "rerun-triggers" in keys:
        settings["rerun_triggers"] = frozenset(RerunTrigger.parse_choice(t) for t in keys["rerun-triggers"])
    return settings


@contextlib.contextmanager
def in_process_dag(
    run: Path,
    targets: tuple[str, ...] = (),
    configfiles: tuple[str | Path, ...] = (),
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    until: tuple[str, ...] = (),
    cores: int = 1,
) -> Iterator[Any]:
    """Snakemake's DAG of the repository's Snakefile in `run`, built in this process by Snakemake's own API (the
    code `snakemake -n --cores <cores>` runs, without a new interpreter: about 0.5 s instead of 5-8 s); the working
    directory and the environment are restored afterwards."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    saved_env, cwd = dict(os.environ), Path.cwd()
    os.environ.clear()
    os.environ.update(_snakemake_env(env))
    try:
        with SnakemakeApi(OutputSettings(dryrun=True, quiet={"all"})) as api:  # type: ignore[arg-type]
            workflow_api = api.workflow(
                resource_settings=ResourceSettings(cores=cores),
                config_settings=ConfigSettings(
                    configfiles=[run / f for f in configfiles], config=copy.deepcopy(config or {})
                ),
                snakefile=REPO / "Snakefile",
                workdir=run,
            )
            dag_api = workflow_api.dag(
                DAGSettings(targets=frozenset(targets), until=frozenset(until), **_workflow_profile_dag_settings())
            )
            workflow = dag_api.workflow_api._workflow
            workflow._prepare_dag(forceall=False, ignore_incomplete=False, lock_warn_only=True, nolock=True)
            workflow._build_dag()
            # what `Workflow.execute` does next, dry runs too: prunes the DAG to the `--until` rules and settles
            # which jobs need to run
            workflow.async_run(workflow.dag.postprocess(update_needrun=False, check_initial=True))
            yield workflow.dag
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def dry_run(
    run: Path,
    *targets: str,
    configfiles: tuple[str | Path, ...] = (),
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    until: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """The jobs `snakemake -n [--configfile F ...] [--config K=V] [--until R] <targets>` in `run` would run, planned
    in this process: dicts with rule, wildcards, reason, input and output, as `snakemake -n` prints them; [] when
    nothing is to be done. `configfiles` are relative to `run`; `config` is merged over them like `--config`; the
    workflow profile's rerun settings apply as on the command line. Tests of which jobs a config plans use this;
    `test_in_process_plan_agrees_with_snakemake_n` (tests/cases/test_workflow_cluster.py) proves it agrees with
    the command."""
    with in_process_dag(run, targets, configfiles, config, env, until) as dag:
        return [
            {
                "rule": job.rule.name,
                "wildcards": {k: str(v) for k, v in job.wildcards_dict.items()},
                "reason": str(dag.reason(job)),
                "input": [str(f) for f in job.input],
                "output": [str(f) for f in job.output],
            }
            for job in dag.needrun_jobs()
        ]


def detailed_summary(
    run: Path,
    *targets: str,
    configfiles: tuple[str | Path, ...] = (),
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Snakemake's `--detailed-summary` of `targets` in `run` (one row per output file: output_file, date, rule,
    ..., status, plan), built in process like `dry_run` (same options)."""
    from snakemake.common import async_run

    async def _lines(dag: Any) -> list[str]:
        return [line async for line in dag.summary(detailed=True)]

    with in_process_dag(run, targets, configfiles, config, env, until=()) as dag:
        lines = async_run(_lines(dag))
    rows = [line.split("\t") for line in lines]
    return pd.DataFrame(rows[1:], columns=rows[0])


def shared_folder(factory: Any, name: str, build: Callable[[Path], None]) -> Path:
    """A folder built once per test session by `build(folder)`, shared by every pytest-xdist worker: the first
    worker to ask builds it under a file lock in the session's common temporary folder (the pattern of
    pytest-xdist's docs, "Making session-scoped fixtures execute only once"); the others wait and read it. A
    build that fails leaves no folder marked done, so each asking test fails with the build's error."""
    from filelock import FileLock

    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # one folder above each worker's own: the session's, common to all workers
    folder = base / f"shared-{name}"
    done = folder / ".built"
    with FileLock(str(folder) + ".lock"):
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            build(folder)
            done.touch()
    return folder


def copy_run(src: Path, dst: Path) -> Path:
    """A private copy of the finished run `src` at `dst` (outputs, logs and Snakemake's metadata; mtimes kept), for
    a test that changes the run: the shared one stays as built. Each score table's input record
    (`geneb.tables.freshness`, scores_inputs.json) names the run folder it was written in; the copy's names the
    copy, as a run made there would, so its freshness checks read the copy's files, not the original's."""
    from geneb.tables.freshness import INPUTS_NAME

    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".built"))
    for record_file in dst.rglob(INPUTS_NAME):
        record = json.loads(record_file.read_text())
        if Path(record.get("root", "")).resolve() == src.resolve():
            stat = record_file.stat()
            record_file.write_text(json.dumps({**record, "root": str(dst)}, indent=1, sort_keys=True))
            os.utime(record_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # Snakemake's mtime check sees no change
    return dst


#: the shared finished run's tasks and models: two short real tasks x two k-mer models (CPU, seconds)
SMALL_TASKS = ["idna_ms_5hmc_h_sapiens", "ienhancer2l_enhancer_vs_non"]
SMALL_MODELS = ["kmer-3", "kmer-4"]


def write_small_config(
    run: Path,
    *,
    tasks: list[str] = SMALL_TASKS,
    models: list[str] = SMALL_MODELS,
    caps: tuple[int | None, int | None] = (200, 100),
    registry: dict[str, Any] | None = None,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Write run/config/config.yaml of the shared small run: the repository's config with absolute sheet paths,
    ../shared's task mirror, `tasks` x `models`, `caps` (max_train, max_test), a light geneb-paper protocol (2
    seeds, 100 bootstrap resamples); `registry` replaces the model sheet (written beside it); `edit(config)`
    changes anything else. Returns the config."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(
        task_source=str(shared_dir() / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(REPO / "config" / "models.yaml"),
        tasks=list(tasks),
        models=list(models),
        protocols=["geneb-paper"],
        default_protocol="geneb-paper",
    )
    config["caps"]["default"] = {"max_train": caps[0], "max_test": caps[1]}
    paper = config["probe"]["geneb-paper"]
    paper["seeds"] = [13, 17]
    paper["bootstrap"]["n_resamples"] = 100
    (run / "config").mkdir(parents=True, exist_ok=True)
    if registry is not None:
        (run / "config" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
        config["model_sheet"] = str(run / "config" / "models.yaml")
    if edit is not None:
        edit(config)
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def build_small_run(run: Path) -> None:
    """The shared small run (`write_small_config`) run by the real workflow (`snakemake --cores 2`, a subprocess)
    to its default target: prepared and audited tasks, embeddings, probes, scores, tables, figures, report."""
    write_small_config(run)
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2"],
        cwd=run,
        env=_snakemake_env(None),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        raise AssertionError(f"the shared small run failed ({proc.returncode}):\n{proc.stdout[-6000:]}")


# ---- the site run: 2 other real tasks x kmer-3 and the GC shortcut, to the leaderboard site (tests/site, tests/pool)

SITE_TASKS = ["ienhancer2l_strong_vs_weak", "gue_prom_core_all"]
SITE_MODELS = ["kmer-3", "shortcut-gc"]
#: caps of the site run (the pool's runs of one model each are this run's config with `models` narrowed)
SITE_CAPS = {"seed": 0, "default": {"max_train": 300, "max_test": 150}, "per_task": {}}


def build_site_run(folder: Path, shared: Path) -> None:
    """folder/run: SITE_TASKS x SITE_MODELS run by the real workflow (`snakemake site`, a subprocess)."""
    run = folder / "run"
    write_run_config(run, shared / "data" / "tasks", SITE_TASKS, SITE_MODELS, n_resamples=100)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["caps"] = SITE_CAPS
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    done = run_snakemake(run, "site", timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:]


def site_run(tmp_path_factory: Any, shared: Path) -> Path:
    """The run folder of `build_site_run`, built once per session (`shared_folder`): read it, never change it."""
    return shared_folder(tmp_path_factory, "site-run", lambda folder: build_site_run(folder, shared)) / "run"
