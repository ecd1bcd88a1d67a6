"""One bad task never blocks the rest: in a --keep-going run where a task fails preparation, the
score table, leaderboard, analyses and report are built from the tasks that completed, the failed task is
listed with its error (scores.parquet and leaderboard metadata, the report), its category is shown but not
ranked, and the run still exits non-zero. A copy of the shared small run (2 real tasks x 2 k-mer models, finished)
with a third, broken task added from a mirror of the test's own: only the broken task's jobs and the tables run."""

from __future__ import annotations

import gzip
import json
import shutil
from html import unescape
from pathlib import Path

import pandas as pd
import yaml

from geneb.tables.scores import FAILED_TASKS_ATTR
from workflow_support import SMALL_TASKS, copy_run, run_snakemake

REPO = Path(__file__).resolve().parents[2]
GOOD = SMALL_TASKS  # DNA Methyl., Enhancers: the shared run's tasks
BAD = "idna_ms_6ma_r_chinensis"  # DNA Methyl.


def test_a_failed_task_leaves_results_for_the_others(tmp_path, shared, finished_run):
    mirror = tmp_path / "mirror"  # the good tasks' files as they are (a moved mirror: nothing of them reruns)
    for task in [*GOOD, BAD]:
        shutil.copytree(shared / "data/tasks" / task, mirror / task)
    path = mirror / BAD / "test.csv.gz"
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    lines[3] = "ACGTXACGT," + lines[3].split(",")[1]  # data row 2: an 'X'
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    (mirror / BAD / "meta.json").unlink()
    run = copy_run(finished_run, tmp_path / "run")
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    assert config["tasks"] == GOOD and config["models"] == ["kmer-3", "kmer-4"]
    config.update(task_source=str(mirror), tasks=[GOOD[0], BAD, GOOD[1]])
    (run / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = run_snakemake(run, "-k")
    console = proc.stdout
    assert proc.returncode != 0, console[-3000:]  # the failure is never missed
    assert "1 task(s) failed (idna_ms_6ma_r_chinensis)" in console, console[-5000:]
    scores_path = run / "results/tables/scores.parquet"
    scores = pd.read_parquet(scores_path)
    assert sorted(scores["task"].unique()) == sorted(GOOD)
    failed = scores.attrs[FAILED_TASKS_ATTR]
    assert list(failed) == [BAD] and failed[BAD]["category"] == "DNA Methyl."
    assert f"task {BAD!r}, split 'test', row 2: character 'X'" in failed[BAD]["error"]
    board = pd.read_parquet(run / "results/tables/leaderboard.parquet")
    assert board.attrs[FAILED_TASKS_ATTR] == failed
    full = board[board["regime"] == "full"].set_index(["category", "model"])
    assert full.loc["DNA Methyl.", "rank"].isna().all() and not full.loc["DNA Methyl.", "complete"].any()
    assert full.loc["Enhancers", "rank"].notna().all()
    assert full.loc["macro", "value"].isna().all()  # a configured task is missing: no macro ranking
    for agg in ("macro", "micro"):  # and every board says why, the clean one too
        assert not full.loc[agg, "complete"].any() and full.loc[agg, "rank"].isna().all()
        assert full.loc[agg, "incomplete_reason"].str.contains(f"{BAD}: failed in this run").all()
        # the reason names the problem (split, row, value), not only the error's header and log
        assert full.loc[agg, "incomplete_reason"].str.contains("split 'test', row 2: character 'X'").all()
    clean = pd.read_parquet(run / "results/tables/leaderboard_clean.parquet")
    clean = clean[clean["regime"] == "full"].set_index(["category", "model"])
    assert clean.loc["macro", "rank"].isna().all() and clean.loc["DNA Methyl.", "rank"].isna().all()
    # the text a reader sees: the report's word-break hints (<wbr>) removed, its entities decoded
    html = unescape((run / "results/report/geneb_report.html").read_text().replace("<wbr>", ""))
    assert "<h2 id='failed'>Failed tasks</h2>" in html and BAD in html and "character 'X' at position 4" in html
    assert json.loads((run / "results/tables/failed_tasks.json").read_text())["tasks"] == GOOD
    assert (run / "results/tables/analysis_summary.json").exists()
    assert {"test_single_class", "test_rows_iupac", "n_unknown_tokens_test"} <= set(scores.columns)
    assert "Data hygiene" in html

    # the task fixed, the same command: every table is rebuilt from all three tasks, nothing listed as failed
    shutil.copy(shared / "data/tasks" / BAD / "test.csv.gz", path)
    proc = run_snakemake(run, "-k")
    assert proc.returncode == 0, proc.stdout[-3000:]
    scores = pd.read_parquet(scores_path)
    assert sorted(scores["task"].unique()) == sorted([*GOOD, BAD]) and not scores.attrs.get(FAILED_TASKS_ATTR)
    board = pd.read_parquet(run / "results/tables/leaderboard.parquet")
    assert board.loc[board["category"] == "DNA Methyl.", "rank"].notna().all()
    html = (run / "results/report/geneb_report.html").read_text()
    assert "<h2 id='failed'>" not in html and "<b>Failed tasks</b>: none: every configured task completed" in html
