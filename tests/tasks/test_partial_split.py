"""Which tasks a partial run counts as completed (geneb.run.partial): a probe table left by an earlier run does not
make a task whose job failed in this run look completed, and a full successful run clears the old record."""

from __future__ import annotations

import os
import time

from geneb.core.logs import ERROR_MARK
from geneb.run.partial import tasks_failed_in_run


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
