"""Planning and the task lock: a run whose local task files differ from the lock is refused before anything is
planned (task, file, both digests, the fix); the prepare_task key (RunPlan.task_params) does not change when a task
is first locked, and a remote task re-locked to new data gets a new key."""

from __future__ import annotations

import gzip
import shutil

import pytest
from test_plan import plan, small_config  # noqa: F401 - the fixture

from geneb.run.checks import PreflightError
from geneb.tasks.catalogue import read_lock, record_files, relock
from geneb.tasks.sources import file_record, open_source

TASK = "idna_ms_5hmc_h_sapiens"
OTHER = "ienhancer2l_enhancer_vs_non"


@pytest.fixture
def local_run(small_config, shared, tmp_path, monkeypatch):  # noqa: F811 - the fixture, imported
    """small_config on a copy of the two tasks in tmp_path/mirror, with its own lock, run from tmp_path."""
    monkeypatch.chdir(tmp_path)
    mirror = tmp_path / "mirror"
    for task in (TASK, OTHER):
        shutil.copytree(shared / "data/tasks" / task, mirror / task)
    small_config.update(task_source=str(mirror), task_lock=str(tmp_path / "my" / "tasks.lock"))
    return small_config, mirror


def _edit_one_row(path):
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    seq, label = lines[1].rsplit(",", 1)
    lines[1] = f"{seq},{1 - int(label)}"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")


def test_a_changed_local_file_stops_the_plan_naming_task_file_digests_and_fix(local_run):
    config, mirror = local_run
    lock = config["task_lock"]
    for task in (TASK, OTHER):
        record_files(lock, task, str(mirror), open_source(str(mirror)).source_files(task))
    plan(config, main_process=True)  # the locked files: planned
    expected = read_lock(lock)[TASK]["files"]["train.csv.gz"]
    _edit_one_row(mirror / TASK / "train.csv.gz")
    found = file_record(mirror / TASK / "train.csv.gz")
    with pytest.raises(PreflightError) as err:
        plan(config, main_process=True)
    msg = str(err.value)
    assert msg.splitlines()[0] == "1 selected task(s) cannot be read from their source, so nothing was planned:"
    assert f"its files differ from the task lock {lock}" in msg
    assert f"train.csv.gz: expected sha256 {expected['sha256']} ({expected['size']:,} bytes)" in msg
    assert f"found sha256 {found['sha256']}" in msg and msg.rstrip().splitlines()[1].endswith(f": {TASK}")
    assert f"geneb tasks lock {TASK} --configfile" in msg and OTHER not in msg
    plan(config)  # a job process does not look (the main process did)
    # re-locked on purpose: planned again
    relock(lock, TASK, str(mirror), open_source(str(mirror)).source_files(TASK))
    plan(config, main_process=True)


def test_a_task_not_locked_yet_is_planned_and_the_first_lock_changes_no_key(local_run):
    config, mirror = local_run
    before = plan(config, main_process=True).task_params(TASK)
    record_files(config["task_lock"], TASK, str(mirror), open_source(str(mirror)).source_files(TASK))
    assert plan(config, main_process=True).task_params(TASK) == before


def test_a_remote_task_relocked_to_new_data_gets_a_new_key_and_only_then(small_config, shared, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    lock = tmp_path / "tasks.lock"
    small_config.update(task_source="http://127.0.0.1:9/mirror", task_lock=str(lock))
    first = plan(small_config).task_params(TASK)
    copy = tmp_path / "copy"
    shutil.copytree(shared / "data/tasks" / TASK, copy / TASK)
    files = open_source(str(copy)).source_files(TASK)
    record_files(lock, TASK, "http://127.0.0.1:9/mirror", files)  # what the first preparation writes
    assert plan(small_config).task_params(TASK) == first
    assert relock(lock, TASK, "http://127.0.0.1:9/mirror", files) == []  # the same files: nothing changes
    assert plan(small_config).task_params(TASK) == first
    _edit_one_row(copy / TASK / "test.csv.gz")
    relock(lock, TASK, "http://127.0.0.1:9/mirror", open_source(str(copy)).source_files(TASK))
    relocked = plan(small_config).task_params(TASK)
    assert relocked != first and relocked["source_identity"]["lock_generation"] == 1


def test_the_lock_path_and_download_limits_are_not_in_the_report_config(small_config):  # noqa: F811
    """Neither changes a result (the files' content is in the task's key), so neither may rerun the report."""
    made = plan(small_config)
    assert made.config["task_lock"] == "config/tasks.lock"
    assert made.config["task_download"] == {"deadline_s": 1800, "read_timeout_s": 30}
    shown = made.report_config()
    assert "task_lock" not in shown and "task_download" not in shown and "task_source" in shown
