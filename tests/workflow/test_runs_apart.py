"""Runs kept apart end to end: two configs that prepare one task differently (caps) in one
workdir never write each other's prepared files, shot draws, audits or embeddings; running A, then B, then A
again reruns nothing of A and leaves A's scores as they were; a workdir of the layout before task hashes is moved
into this one without re-extraction; and reading a run whose resources changed since it was made says so.

Config A of the first test is the shared small run (a copy of `finished_run`: 2 real tasks x 2 k-mer models,
capped 200/100), config B an overlay over it with other caps for one of its tasks and one model; the legacy-layout
test has a run of its own (one real task, the k-mer model, small caps, a light bootstrap). Dry runs are planned in
process (`dry_run`, their log captured)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr
from pathlib import Path

import yaml

from workflow_support import SMALL_TASKS, copy_run, dry_run, run_plan, run_snakemake, write_run_config

MODEL = "kmer-3"
#: the first test: A is the shared run as built, B the same checkout with other caps for one task and one model
SHARED_TASK = SMALL_TASKS[1]
APART = {
    "a": {"results_dir": "results"},
    "b": {
        "results_dir": "results/b",
        "tasks": [SHARED_TASK],
        "models": [MODEL],
        "caps": {"default": {"max_train": 300, "max_test": 150}},
    },
}
#: the legacy-layout test: one task, two caps
TASK = "ienhancer2l_strong_vs_weak"
CONFIGS = {
    "a": {"results_dir": "results/a", "caps": {"default": {"max_train": 300, "max_test": 150}}},
    "b": {"results_dir": "results/b", "caps": {"default": {"max_train": 400, "max_test": 150}}},
}


def make_run(tmp_path: Path, shared: Path) -> Path:
    run = tmp_path / "run"
    write_run_config(run, shared / "data/tasks", [TASK], [MODEL], n_resamples=100)
    write_overlays(run, CONFIGS)
    return run


def write_overlays(run: Path, configs: dict[str, dict]) -> None:
    for name, overlay in configs.items():
        (run / f"config/{name}.yaml").write_text(yaml.safe_dump(overlay))


def leaderboard(configs: dict[str, dict], name: str) -> str:
    return f"{configs[name]['results_dir']}/tables/leaderboard.parquet"


def snakemake(run: Path, name: str, *args: str, configs: dict[str, dict] = CONFIGS) -> str:
    """Snakemake with config `name` (its overlay over run/config/config.yaml) up to its leaderboard."""
    proc = run_snakemake(run, f"--configfile=config/{name}.yaml", *args, leaderboard(configs, name))
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def planned(run: Path, name: str, configs: dict[str, dict] = CONFIGS) -> list[dict]:
    """The jobs `snakemake -n` with config `name` up to its leaderboard would run, planned in process."""
    return dry_run(run, leaderboard(configs, name), configfiles=(f"config/{name}.yaml",))


def rules(jobs: list[dict]) -> set[str]:
    return {job["rule"] for job in jobs}


def cache_files(plan, task: str = TASK) -> list[str]:
    """Every resources/ file the plan's run makes of the task: splits, card, validation record, audit, shots,
    embeddings."""
    return [
        *(
            plan.layout.task_file(task, name)
            for name in ("train.parquet", "test.parquet", "card.json", "validation.json")
        ),
        plan.layout.audit_file(task),
        plan.layout.shot_file("geneb-paper", task),
        plan.layout.embedding_file(MODEL, task),
    ]


def mtimes(run: Path, files: list[str]) -> dict[str, int]:
    return {f: (run / f).stat().st_mtime_ns for f in files}


def leaderboard_warning(run: Path, results_dir: str, monkeypatch) -> str:
    """What `geneb leaderboard --results-dir` prints on stderr in `run`."""
    from geneb.cli import main

    monkeypatch.chdir(run)
    err = io.StringIO()
    with redirect_stderr(err):
        assert main(["leaderboard", "--results-dir", results_dir]) == 0
    return err.getvalue()


def test_two_configs_keep_their_files_apart_and_a_rerun_of_the_first_does_nothing(tmp_path, finished_run, monkeypatch):
    """A is the shared small run (copied: B runs beside it), so only B runs from scratch here."""
    run = copy_run(finished_run, tmp_path / "run")
    write_overlays(run, APART)
    plan_a, plan_b = run_plan(run, "config/a.yaml"), run_plan(run, "config/b.yaml")
    files_a, files_b = cache_files(plan_a, SHARED_TASK), cache_files(plan_b, SHARED_TASK)
    assert not set(files_a) & set(files_b), "two configs that cap a task differently share a cache file"

    assert planned(run, "a", APART) == []  # A is finished
    before = mtimes(run, files_a)
    scores_a = (run / "results/tables/scores.parquet").read_bytes()
    assert "warning" not in leaderboard_warning(run, "results", monkeypatch)

    snakemake(run, "b", configs=APART)
    assert all((run / f).is_file() for f in files_b)
    assert mtimes(run, files_a) == before, "config B rewrote a file of config A"
    # A again: nothing to be done, its scores untouched, and reading it warns of nothing
    assert planned(run, "a", APART) == []
    snakemake(run, "a", configs=APART)
    assert mtimes(run, files_a) == before
    assert (run / "results/tables/scores.parquet").read_bytes() == scores_a
    assert "warning" not in leaderboard_warning(run, "results", monkeypatch)

    # a re-extraction of A's embeddings with A's own settings (its tables not rebuilt) is named when A is read: the
    # embedding file of SHARED_TASK (the target, before the options that take several values)
    h5 = plan_a.layout.embedding_file(MODEL, SHARED_TASK)
    proc = run_snakemake(run, h5, "--configfile=config/a.yaml", "--forcerun", "extract_embeddings")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert (run / h5).stat().st_mtime_ns != before[h5]
    said = leaderboard_warning(run, "results", monkeypatch)
    assert f"was computed from {h5}" in said and "written again" in said, said
    assert "warning" not in leaderboard_warning(run, "results/b", monkeypatch)
