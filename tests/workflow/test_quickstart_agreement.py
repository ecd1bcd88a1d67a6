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
from workflow_support import REPO, run_snakemake, write_run_config

REFERENCE = REPO / "tests" / "reference" / "quickstart_means.json"


@pytest.mark.slow
def test_a_fresh_quickstart_run_agrees_with_the_committed_reference(shared, tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    run = tmp_path / "quickstart"
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
