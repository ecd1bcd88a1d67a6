"""Which tasks a partial run counts as completed (geneb.run.partial): a probe table left by an earlier run does not
make a task whose job failed in this run look completed, and a full successful run clears the old record."""

from __future__ import annotations

import os
import time

from geneb.core.logs import ERROR_MARK
from geneb.run.partial import split_tasks, tasks_failed_in_run, tasks_started_in_run


def test_a_stale_probe_table_of_a_task_that_failed_now_is_not_a_result(tmp_path):
    tables = {t: tmp_path / f"{t}.parquet" for t in ("good", "bad", "missing")}
    tables["good"].write_text("x")
    tables["bad"].write_text("x")  # from an earlier run, when the task still prepared
    logs = tmp_path / "logs" / "prepare_task"
    logs.mkdir(parents=True)
    started = time.time()
    (logs / "bad.log").write_text(f"traceback ...\n{ERROR_MARK} (logs/prepare_task/bad.log): TaskDataError: row 5\n")
    old = logs / "good.log"
    old.write_text(f"{ERROR_MARK} (logs/prepare_task/good.log): TaskDataError: fixed since\n")
    os.utime(old, (started - 3600, started - 3600))  # an error of an earlier run
    failed_now = tasks_failed_in_run(list(tables), tmp_path / "logs", started - 2)
    assert failed_now == ["bad"]
    assert split_tasks(list(tables), lambda t: [str(tables[t])], failed_now) == (["good"], ["bad", "missing"])
    assert split_tasks(list(tables), lambda t: [str(tables[t])]) == (["good", "bad"], ["missing"])  # the old rule


def test_a_task_whose_jobs_never_started_is_completed_by_the_partial_run(tmp_path):
    """In a group job whose first job fails, Snakemake may never start the others: such a task (no log of
    this run) goes to the partial run; one whose job started and left nothing (killed) is failed."""
    import time

    started = time.time()
    logs = tmp_path / "logs" / "extract_embeddings" / "m"
    logs.mkdir(parents=True)
    (logs / "bad.log").write_text("GENEB ERROR (x): SequenceError: row 3\n")
    (logs / "killed.log").write_text("loading\n")
    tasks = ["bad", "killed", "blocked"]
    since = started - 2
    assert tasks_started_in_run(tasks, tmp_path / "logs", since) == ["bad", "killed"]
    none = lambda t: [str(tmp_path / f"{t}.parquet")]  # noqa: E731 - no task has results
    failed_now = tasks_failed_in_run(tasks, tmp_path / "logs", since)
    started_now = tasks_started_in_run(tasks, tmp_path / "logs", since)
    assert split_tasks(tasks, none, failed_now, none, started_now) == (["blocked"], ["bad", "killed"])
