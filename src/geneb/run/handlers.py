"""The bodies of the workflow's `onstart`, `onerror` and `onsuccess` handlers (Snakefile), over a `RunPlan`.

workflow/rules/common.smk keeps one-line wrappers that hand over what only Snakemake knows (its targets, whether
the run keeps going, its command line).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from geneb.core.logs import failure_lines
from geneb.run import partial as partial_run
from geneb.run.plan import RunPlan
from geneb.run.preflight import PreflightError, format_problems
from geneb.tasks.catalogue import task_row


class ErrorLog(Protocol):
    """Where the `onerror` handler reports: Snakemake's logger in the workflow, any `logging.Logger`."""

    def error(self, msg: str) -> object: ...


#: seconds subtracted from the run's start when logs are matched to it: a shared file system's clock may lag
CLOCK_MARGIN_S = 2.0


def stop_on_preflight_here(plan: RunPlan) -> None:
    """The `onstart` handler (real runs only, before the first job). Raises PreflightError listing the problems of
    this interpreter, where the conda route without --sdm conda runs every job (geneb.run.preflight)."""
    if plan.preflight_here:
        raise PreflightError(format_problems(list(plan.preflight_here)))


def clear_failure_record(plan: RunPlan) -> None:
    """The `onsuccess` handler: a run that built everything from every task leaves no failure record of an earlier
    partial run behind (a partial run's own record stays: its tables list the failed tasks)."""
    if plan.partial is None:
        Path(plan.failures_file()).unlink(missing_ok=True)


def report_job_errors(
    plan: RunPlan,
    *,
    run_started: float,
    targets: Sequence[str],
    keep_going: bool,
    argv: list[str],
    run_dir: str | Path,
    log: ErrorLog,
) -> None:
    """The `onerror` handler: log (error level) the one-line GENEB error of every job of this run that failed in
    GENEB code (the last line of its log, geneb.core.logs), so it reaches the console also where job stderr does
    not (Slurm). Then, in a --keep-going run (`keep_going`) of the default target (`targets` == ["all"]) in which
    some tasks completed, start a partial run (geneb.run.partial) with Snakemake's own arguments `argv` in
    `run_dir`, which builds the tables, analyses and report from those.

    run_started: when the run was planned (epoch seconds); logs written since then belong to it."""
    since = run_started - CLOCK_MARGIN_S
    errors = failure_lines(Path("logs").rglob("*.log"), since)
    for line in errors:
        log.error(line)
    if plan.partial is not None or not keep_going or list(targets) != ["all"]:
        return
    tasks = plan.tasks
    failed_now = partial_run.tasks_failed_in_run(tasks, "logs", since)
    # the jobs that make a task's results per model (its shot draws run for every task, blocked or not)
    started_now = [
        t
        for root in ("logs/extract_embeddings", "logs/fit_probes")
        for t in partial_run.tasks_started_in_run(tasks, root, since)
    ]
    done, failed = partial_run.split_tasks(
        tasks, lambda task: plan.probe_tables([task]), failed_now, plan.task_embedding_files, started_now
    )
    if not done or not failed:
        return
    task_errors = partial_run.task_errors(failed, "logs", since)
    record = {t: {"category": task_row(plan.task_sheet, t)["category"], "error": task_errors[t]} for t in failed}
    failures = plan.failures_file()
    partial_run.write_failures(failures, done, record)
    log.error(
        f"{len(failed)} task(s) failed ({', '.join(failed)}); building the tables, analyses and report from the "
        f"{len(done)} that completed (failed tasks listed in {failures}, scores.parquet, the "
        "leaderboard and the report); this run still ends with an error"
    )
    subprocess.run(
        partial_run.partial_command(argv),
        cwd=run_dir,
        env=partial_run.partial_env(failures),
        check=False,
    )
    for line in errors:  # once more, after the partial run's output, where the user looks last
        log.error(line)
