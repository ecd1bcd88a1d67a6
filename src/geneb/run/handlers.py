"""The bodies of the workflow's `onstart`, `onerror` and `onsuccess` handlers (Snakefile), over a `RunPlan`.

workflow/rules/common.smk keeps one-line wrappers that hand over what only Snakemake knows (its targets, whether
the run keeps going, its command line).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import geneb.run.partial as partial_run
from geneb.core.logs import failure_lines
from geneb.run.checks import PreflightError, format_problems
from geneb.run.plan import RunPlan
from geneb.tasks.catalogue import task_row


class ErrorLog(Protocol):
    """Where the `onerror` handler reports: Snakemake's logger in the workflow, any `logging.Logger`."""

    def error(self, msg: str) -> object: ...


#: Snakemake's options (argparse dests) that make a call build or run nothing: a plan under them moves nothing
_NOT_A_RUN = (
    "dryrun", "touch", "lint", "report", "summary", "detailed_summary", "list_rules", "list_target_rules",
    "list_changes", "list_input_changes", "list_params_changes", "list_untracked", "list_conda_envs", "dag",
    "d3dag", "rulegraph", "filegraph", "unlock", "cleanup_metadata", "cleanup_shadow", "delete_all_output",
    "delete_temp_output", "print_compilation", "containerize", "export_cwl", "generate_unit_tests",
)  # fmt: skip


def dry_run_requested(argv: Sequence[str]) -> bool:
    """Whether Snakemake's command line `argv` (`sys.argv[1:]`) runs no job: a dry run (-n, --dry-run, also in a
    cluster such as -np) or any of NOT_A_RUN (--touch, --lint, --report, --summary, --dag, --unlock, ...), read by
    Snakemake's own argument parser. The workflow's plan then moves and records nothing (geneb.run.integrity).
    Snakemake decides its executor only after the workflow is parsed, so the command line is the one place a plan
    can learn it from (a command line the parser refuses counts as no run)."""
    from snakemake.cli import get_argument_parser

    try:
        args, _ = get_argument_parser().parse_known_args(list(argv))
    except SystemExit:
        return True
    return any(getattr(args, name, None) for name in _NOT_A_RUN)


#: seconds subtracted from the run's start when logs are matched to it: a shared file system's clock may lag
_CLOCK_MARGIN_S = 2.0


def stop_on_preflight_here(plan: RunPlan) -> None:
    """The `onstart` handler (real runs only, before the first job). Raises PreflightError listing the problems of
    this interpreter, where the conda route without --sdm conda runs every job (geneb.run.checks)."""
    if plan.preflight_here:
        raise PreflightError(format_problems(list(plan.preflight_here)))


def clear_failure_record(plan: RunPlan) -> None:
    """The `onsuccess` handler: a run that built everything from every task leaves no failure record of an earlier
    partial run behind (a partial run's own record stays: its tables list the failed tasks)."""
    if plan.partial is None:
        Path(plan.failures_file()).unlink(missing_ok=True)


def _report_job_errors(
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
    since = run_started - _CLOCK_MARGIN_S
    errors = failure_lines(Path("logs").rglob("*.log"), since)
    for line in errors:
        log.error(line)
    if plan.partial is not None or not keep_going or list(targets) != ["all"]:
        return
    tasks, models = plan.tasks, plan.models
    # a task-level job (preparation, audit, shot draws) failing fails the task for every model
    task_failed = {
        t for rule in partial_run.TASK_RULES for t in partial_run.tasks_failed_in_run(tasks, f"logs/{rule}", since)
    }

    def cell_started(model: str, task: str) -> bool:
        return any(
            p.stat().st_mtime >= since and p.stat().st_size > 0 for p in partial_run.cell_logs("logs", model, task)
        )

    def cell_ready(model: str, task: str) -> bool:
        # its probe tables, or else its embedding file, exist; or none of its jobs started in this run (a group job
        # that stopped on another task's failure): the partial run completes it
        probes = [p for p in plan.probe_tables([task]) if f"/{model}/" in p]
        return (
            all(Path(p).exists() for p in probes)
            or Path(plan.layout.embedding_file(model, task)).exists()
            or not cell_started(model, task)
        )

    def cell_failed(model: str, task: str) -> bool:
        return bool(failure_lines(partial_run.cell_logs("logs", model, task), since))

    done, failed, cells = partial_run.split_cells(
        tasks, models, task_failed=task_failed, cell_ready=cell_ready, cell_failed=cell_failed
    )
    if not done or not (failed or cells):
        return
    task_errors = partial_run.task_errors(failed, "logs", since)
    record = {t: {"category": task_row(plan.task_sheet, t)["category"], "error": task_errors[t]} for t in failed}
    failures = plan.failures_file()
    cell_record = {
        m: {
            t: {
                "category": task_row(plan.task_sheet, t)["category"],
                "error": " | ".join(failure_lines(partial_run.cell_logs("logs", m, t), since))
                or "did not complete (no GENEB error in its job logs; see Snakemake's log)",
            }
            for t in ts
        }
        for m, ts in cells.items()
    }
    partial_run.write_failures(failures, done, record, cell_record)
    n_cells = sum(len(ts) for ts in cells.values())
    if n_cells:
        listed = "; ".join(m + ": " + ", ".join(ts) for m, ts in cells.items())
        log.error(
            f"{n_cells} (model, task) cell(s) failed ({listed}); the other models' scores of those tasks are kept"
        )
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


def on_error(plan: RunPlan, workflow: Any, *, run_started: float, log: ErrorLog) -> None:
    """The Snakefile's `onerror`: `_report_job_errors` with the targets, --keep-going, command line and run folder
    of the Snakemake `workflow` that failed."""
    _report_job_errors(
        plan,
        run_started=run_started,
        targets=[job.rule.name for job in workflow.dag.targetjobs],
        keep_going=workflow.execution_settings.keep_going,
        argv=sys.argv[1:],
        run_dir=workflow.workdir_init,
        log=log,
    )
