"""A GENEB error raised inside a job reaches the Snakemake console as its one-line message (task, split, row,
value), not only `CalledProcessError ... message: None` and a log pointer."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from geneb.core.logs import ERROR_MARK, failure_lines
from workflow_support import run_plan, run_snakemake, write_run_config

REPO = Path(__file__).resolve().parents[2]
TASK = "ienhancer2l_strong_vs_weak"


def bad_mirror(tmp_path: Path, shared: Path) -> Path:
    """A copy of TASK whose test row 5 has an empty sequence."""
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    path = mirror / TASK / "test.csv.gz"
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    lines[6] = "," + lines[6].split(",")[1]  # data row 5 (0-based): empty sequence
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    (mirror / TASK / "meta.json").unlink()
    return mirror


def test_prepare_error_is_on_the_console_with_task_split_row(tmp_path, shared):
    """Its own run (one broken task, its card the only target): the error is raised in a prepare_task job, and
    what Snakemake's console shows of it is the point, so the job runs for real."""
    run = tmp_path / "run"
    write_run_config(run, bad_mirror(tmp_path, shared), [TASK], ["kmer-3"])
    plan = run_plan(run)
    proc = run_snakemake(run, plan.layout.task_file(TASK, "card.json"))
    assert proc.returncode != 0
    wanted = f"task {TASK!r}, split 'test', row 5: empty sequence"
    console = proc.stdout
    # the marked error, above Snakemake's "Error in rule" block ...
    assert ERROR_MARK in console and console.index(ERROR_MARK) < console.index(wanted)
    assert console.index(wanted) < console.index("Error in rule prepare_task"), console[-4000:]
    # ... and again from the onerror handler (what a Slurm run shows, where job stderr is not the console)
    assert console.count(wanted) >= 2, console[-4000:]
    # the machine-readable report survives the failed job; no card does
    report = json.loads((run / plan.layout.task_file(TASK, "validation.json")).read_text())
    assert report["kinds"]["empty sequence"]["problems"][0]["row"] == 5
    assert not (run / plan.layout.task_file(TASK, "card.json")).exists()
    log = (run / f"logs/prepare_task/{plan.layout.task_hash(TASK)}/{TASK}.log").read_text()
    assert "Traceback (most recent call last)" in log and log.rstrip().endswith(wanted)


def test_every_shim_installs_the_error_hook_first():
    """Every workflow script (prepare, extract, probe, analyses, ...) calls log_to_file before its work."""
    for script in sorted((REPO / "workflow/scripts").glob("*.py")):
        text = script.read_text()
        assert "log_to_file(snakemake.log[0])" in text, script.name


def test_hook_prints_one_line_and_keeps_the_traceback(tmp_path):
    log = tmp_path / "job.log"
    code = (
        "from geneb.core.logs import log_to_file\n"
        f"log_to_file({str(log)!r})\n"
        "raise ValueError(\"task 'x', split 'train', row 3: label '1.0' is a number\")\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == f"{ERROR_MARK} ({log}): ValueError: task 'x', split 'train', row 3: label '1.0' is a number"
    )
    text = log.read_text()
    assert "Traceback" in text
    assert failure_lines([log], since=time.time() - 60) == [proc.stderr.strip()]
    assert failure_lines([log], since=time.time() + 60) == []  # an older run's log is not reported


def test_a_boards_failure_reason_names_the_problem_not_the_header():
    """A grouped validation error as a board quotes it: its type, counts and each kind with its first problem
    (split, row, value) and the log path, on one line; several jobs' errors each so; a long problem is cut, the log
    path never."""
    from geneb.core.logs import failure_reason

    header = (
        "task 't': 3 problem(s) of 1 kind(s) in 3 row(s); every row was checked (full list: validation.json beside "
        "the card); rows are 0-based data rows of the file: row 0 is file line 2, the header being line 1"
    )
    rows = "".join(f"\n    task 't', split 'train', row {r}: label 'x{r}' is not an integer" for r in (5, 7, 9))
    error = f"{ERROR_MARK} (logs/prepare_task/t.log): TaskValidationError: {header}\n  label not an integer (3):{rows}"
    reason = failure_reason(error)
    assert reason == (
        "TaskValidationError: task 't': 3 problem(s) of 1 kind(s) in 3 row(s): label not an integer (3): task 't', "
        "split 'train', row 5: label 'x5' is not an integer (log: logs/prepare_task/t.log)"
    )
    two = failure_reason(f"{error} | {ERROR_MARK} (logs/audit_task/t.log): ValueError: {'y' * 500}", limit=400)
    first, second = two.split(" | ")
    assert first.startswith("TaskValidationError: task 't'") and first.endswith("(log: logs/prepare_task/t.log)")
    assert second.startswith("ValueError: yyy") and second.endswith("… (log: logs/audit_task/t.log)")
    assert len(second) <= 200
    assert failure_reason(None) == "" and failure_reason("did not complete") == "did not complete"
