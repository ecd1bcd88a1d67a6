"""The quickstart end to end (config/config.yaml: 13 tasks x 5 local models, geneb-paper) in a fresh run folder,
its model x regime means against the committed reference (tests/reference/quickstart_means.json) within the
tolerance of geneb.tables.agreement: the agreement a user on another machine should see (docs/performance.md,
"Agreement across machines"). About 5 minutes of a 2-core machine: marked slow (CI runs it)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml

from geneb.tables.agreement import check_against_reference
from geneb.tables.scores import probe_threads
from workflow_support import REPO, in_process_dag, run_plan, run_snakemake, write_run_config

REFERENCE = REPO / "tests" / "reference" / "quickstart_means.json"


@pytest.mark.slow
def test_a_fresh_quickstart_run_agrees_with_the_committed_reference(shared, tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    run = tmp_path / "quickstart"
    # the config's relative ../shared paths (local model folders, the published reference) resolve beside the run
    # folder, as beside a checkout
    (tmp_path / "shared").symlink_to(shared, target_is_directory=True)
    write_run_config(run, shared / "data" / "tasks", config["tasks"], config["models"])
    proc = run_snakemake(run, "--cores", "2", "results/tables/scores.parquet", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-6000:]
    scores = run / "results" / "tables" / "scores.parquet"
    assert check_against_reference(scores, REFERENCE) == []
    (record,) = probe_threads(str(scores))  # one machine: every probe table ran with the same thread pools
    assert record["files"] == len(config["tasks"]) * len(config["models"])
    assert all(pool["num_threads"] == 1 for pool in record["pools"])
    tool = subprocess.run(
        [sys.executable, str(REPO / "tools" / "quickstart_reference.py"), "check", "--scores", str(scores)],
        capture_output=True,
        text=True,
    )
    assert tool.returncode == 0, tool.stderr
    assert set(pd.read_parquet(scores)["model"]) == set(config["models"])


def _audit_threads(run, shared, threads: int | None) -> int:
    """The threads of the audit_task job of one task under `--cores 2`, planned in process (`in_process_dag`:
    Snakemake's own DAG, what `snakemake -n --cores 2` plans)."""
    write_run_config(run, shared / "data" / "tasks", ["gue_emp_h3__devtrain"], ["kmer-3"])
    if threads is not None:
        config = yaml.safe_load((run / "config/config.yaml").read_text())
        config["execution"]["threads"] = threads
        (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    audit = run_plan(run).layout.audit_file("gue_emp_h3__devtrain")  # resources/tasks/{task}/{thash}/audit-{ahash}.json
    with in_process_dag(run, (audit,), cores=2) as dag:
        (job,) = [job for job in dag.needrun_jobs() if job.rule.name == "audit_task"]
        return job.threads


def test_a_task_audit_takes_execution_threads_one_by_default(shared, tmp_path):
    """On the quickstart's `--cores 2` a 2-thread audit held the whole machine while MMseqs2 used one core
    (docs/performance.md, "Where the quickstart's time goes"); it takes execution.threads, 1 by default."""
    assert _audit_threads(tmp_path / "default", shared, None) == 1
    assert _audit_threads(tmp_path / "two", shared, 2) == 2
