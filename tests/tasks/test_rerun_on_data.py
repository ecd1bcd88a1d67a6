"""prepare_task reruns when the task's data changes, and only then: an edited file in a mirror folder is
new data (refused by the task lock until `geneb tasks lock` accepts it); the same files in another folder (a moved
mirror, $GENEB_TASK_SOURCE) are not.

Which jobs a change plans is planned in process (`dry_run`), `geneb tasks lock` is its CLI's `main`; only the
preparation of a task runs for real."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from snakemake.exceptions import WorkflowError

from workflow_support import SMALL_TASKS, copy_run, dry_run, run_plan, run_snakemake, write_run_config

REPO = Path(__file__).resolve().parents[2]
TASK = "ienhancer2l_strong_vs_weak"  # 400 test rows: kept whole under the config's default caps


def prepare(run: Path) -> str:
    """Every task's preparation, under the config's hashes (an edited source file is a new task folder): a real
    `snakemake --until prepare_task`."""
    proc = run_snakemake(run, "--until", "prepare_task", timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def relock(run: Path, monkeypatch, capsys) -> str:
    """`geneb tasks lock TASK --configfile config/config.yaml` in the run folder (the CLI's `main`)."""
    from geneb.cli.app import main

    monkeypatch.chdir(run)
    capsys.readouterr()
    code = main(["tasks", "lock", TASK, "--configfile", "config/config.yaml"])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    return out.out


def planned_prepare(run: Path, env: dict[str, str] | None = None) -> bool:
    """Whether `snakemake -n --until prepare_task` plans a prepare_task job (planned in process)."""
    return "prepare_task" in {job["rule"] for job in dry_run(run, env=env, until=("prepare_task",))}


def refused(run: Path) -> str:
    """The message of the task lock's refusal of `snakemake -n --until prepare_task` (the workflow's WorkflowError,
    what the console shows)."""
    with pytest.raises(WorkflowError) as err:
        dry_run(run, until=("prepare_task",))
    return str(err.value)


def edit_config(run: Path, **changes: str) -> None:
    """Change top-level keys of run/config/config.yaml."""
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config.update(changes)
    (run / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_edited_mirror_file_reruns_the_task_and_a_moved_mirror_does_not(tmp_path, shared, monkeypatch, capsys):
    """Its own run (one task, prepared only): the last check reads the whole test split back (the flipped row, the
    card's row count), which the shared run's caps would subsample."""
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    run = tmp_path / "run"
    write_run_config(run, mirror, [TASK], ["kmer-3"])
    prepare(run)
    assert not planned_prepare(run)

    # the same files under another folder, named by the environment variable: nothing to do
    moved = tmp_path / "moved"
    shutil.copytree(mirror, moved)
    assert not planned_prepare(run, env={"GENEB_TASK_SOURCE": str(moved)})

    # a touched but unchanged file: nothing to do either (identity is content, not mtime)
    os.utime(mirror / TASK / "test.csv.gz")
    assert not planned_prepare(run)

    # files prepare_task never reads: a .DS_Store, a dev split: not part of the rerun key
    (mirror / TASK / ".DS_Store").write_bytes(b"")
    shutil.copy(mirror / TASK / "test.csv.gz", mirror / TASK / "dev.csv.gz")
    assert not planned_prepare(run)
    # an edited note in meta.json: the task lock names it, and once re-locked nothing reruns (notes are not data)
    meta = json.loads((mirror / TASK / "meta.json").read_text())
    (mirror / TASK / "meta.json").write_text(json.dumps({**meta, "caveats": ["edited note"]}))
    assert "its files differ from the task lock config/tasks.lock (meta.json: expected sha256" in refused(run)
    assert "re-locked" in relock(run, monkeypatch, capsys)
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
    message = refused(run)
    assert "test.csv.gz: expected sha256" in message and f"geneb tasks lock {TASK}" in message
    assert "test.csv.gz: " in relock(run, monkeypatch, capsys)
    assert planned_prepare(run)
    prepare(run)
    plan = run_plan(run)
    test = pd.read_parquet(run / plan.layout.task_file(TASK, "test.parquet"))
    assert int(test.loc[test["row"] == 0, "label"].iloc[0]) == 1 - int(label)
    assert (
        json.loads((run / plan.layout.task_file(TASK, "card.json")).read_text())["splits"]["test"]["n"]
        == len(lines) - 1
    )


def test_a_note_in_the_task_sheet_reruns_nothing(tmp_path, finished_run):
    """Only the catalogue columns a prepared task uses are its rerun key: a caveat, licence or organism edit
    must not rerun preparation (and with it every model's extraction); a category change does. A copy of the
    shared small run, reading a copy of the task sheet of its own."""
    task = SMALL_TASKS[1]
    run = copy_run(finished_run, tmp_path / "run")
    sheet = pd.read_csv(REPO / "config/tasks.tsv", sep="\t", dtype=str, keep_default_na=False)
    sheet.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    edit_config(run, task_sheet=str(run / "config/tasks.tsv"))  # the committed sheet, copied to the run
    assert not planned_prepare(run)
    edited = sheet.copy()
    row = edited["task"] == task
    edited.loc[row, "caveats"] = "a corrected note"
    edited.loc[row, "license"] = "CC-BY-4.0 (checked)"
    edited.loc[row, "organism"] = edited.loc[row, "organism"] + " "
    edited.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    assert not planned_prepare(run)
    other = "Enhancers" if edited.loc[row, "category"].item() != "Enhancers" else "Promoters"
    edited.loc[row, "category"] = other
    edited.to_csv(run / "config/tasks.tsv", sep="\t", index=False)
    assert planned_prepare(run)
