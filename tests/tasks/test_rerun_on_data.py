"""prepare_task reruns when the task's data changes, and only then: an edited file in a mirror folder is
new data (refused by the task lock until `geneb tasks lock` accepts it); the same files in another folder (a moved
mirror, $GENEB_TASK_SOURCE) are not."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from workflow_support import run_plan, write_run_config

REPO = Path(__file__).resolve().parents[2]
TASK = "ienhancer2l_strong_vs_weak"


def run_snakemake(run: Path, *args: str, env: dict[str, str] | None = None, ok: bool = True) -> str:
    base = {k: v for k, v in os.environ.items() if k != "GENEB_TASK_SOURCE"}
    proc = subprocess.run(
        # every task's preparation, under the config's hashes (an edited source file is a new task folder)
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(REPO / "Snakefile"),
            "--cores",
            "1",
            *args,
            "--until",
            "prepare_task",
        ],
        cwd=run,
        env={**base, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert (proc.returncode == 0) == ok, proc.stdout[-4000:]
    return proc.stdout


def relock(run: Path) -> str:
    """`geneb tasks lock TASK --configfile config/config.yaml` in the run folder."""
    proc = subprocess.run(
        [sys.executable, "-m", "geneb.cli", "tasks", "lock", TASK, "--configfile", "config/config.yaml"],
        cwd=run,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def planned_prepare(run: Path, env: dict[str, str] | None = None) -> bool:
    return "rule prepare_task:" in run_snakemake(run, "-n", env=env)


def test_edited_mirror_file_reruns_the_task_and_a_moved_mirror_does_not(tmp_path, shared):
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    run = tmp_path / "run"
    write_run_config(run, mirror, [TASK], ["kmer-3"])
    run_snakemake(run)
    assert not planned_prepare(run)

    # the same files under another folder, named by the environment variable: nothing to do
    moved = tmp_path / "moved"
    shutil.copytree(mirror, moved)
    assert not planned_prepare(run, env={"GENEB_TASK_SOURCE": str(moved)})

    # a touched but unchanged file: nothing to do either (identity is content, not mtime)
    os.utime(mirror / TASK / "test.csv.gz")
    assert not planned_prepare(run)

    # files prepare_task never reads: a .DS_Store, a dev split (case B44)
    (mirror / TASK / ".DS_Store").write_bytes(b"")
    shutil.copy(mirror / TASK / "test.csv.gz", mirror / TASK / "dev.csv.gz")
    assert not planned_prepare(run)
    # an edited note in meta.json: the task lock names it, and once re-locked nothing reruns (notes are not data)
    meta = json.loads((mirror / TASK / "meta.json").read_text())
    (mirror / TASK / "meta.json").write_text(json.dumps({**meta, "caveats": ["edited note"]}))
    refused = run_snakemake(run, "-n", ok=False)
    assert "its files differ from the task lock config/tasks.lock (meta.json: expected sha256" in refused
    assert "re-locked" in relock(run)
    assert not planned_prepare(run)

    # an edited file (one label flipped) is new data: refused by the lock, naming the file; re-locked, the task is
    # prepared again
    path = mirror / TASK / "test.csv.gz"
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    seq, label = lines[1].split(",")
    lines[1] = f"{seq},{1 - int(label)}"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    refused = run_snakemake(run, "-n", ok=False)
    assert "test.csv.gz: expected sha256" in refused and f"geneb tasks lock {TASK}" in refused
    assert "test.csv.gz: " in relock(run)
    assert planned_prepare(run)
    run_snakemake(run)
    import pandas as pd

    plan = run_plan(run)
    test = pd.read_parquet(run / plan.task_file(TASK, "test.parquet"))
    assert int(test.loc[test["row"] == 0, "label"].iloc[0]) == 1 - int(label)
    assert json.loads((run / plan.task_file(TASK, "card.json")).read_text())["splits"]["test"]["n"] == len(lines) - 1


def test_a_note_in_the_task_sheet_reruns_nothing(tmp_path, shared):
    """Only the catalogue columns a prepared task uses are its rerun key: a caveat, licence or organism edit
    must not rerun preparation (and with it every model's extraction); a category change does."""
    import pandas as pd

    run = tmp_path / "run"
    (run / "config").mkdir(parents=True)
    sheet = pd.read_csv(REPO / "config/tasks.tsv", sep="\t", dtype=str, keep_default_na=False)
    sheet.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.update(
        task_source=str(shared / "data/tasks"),
        task_sheet=str(run / "config/tasks.tsv"),
        model_sheet=str(REPO / "config/models.yaml"),
        model_revisions=str(REPO / "config/model_revisions.yaml"),
        tasks=[TASK],
        models=["kmer-3"],
    )
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(run)
    edited = sheet.copy()
    row = edited["task"] == TASK
    edited.loc[row, "caveats"] = "a corrected note"
    edited.loc[row, "license"] = "CC-BY-4.0 (checked)"
    edited.loc[row, "organism"] = edited.loc[row, "organism"] + " "
    edited.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    assert not planned_prepare(run)
    other = "Enhancers" if edited.loc[row, "category"].item() != "Enhancers" else "Promoters"
    edited.loc[row, "category"] = other
    edited.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    assert planned_prepare(run)
