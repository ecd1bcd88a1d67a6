"""config/tasks.lock, as committed, is the lock of the 80 mirrored tasks of ../shared/data/tasks: recomputed here
from the files (sha256 and size of each task's train/test split and meta.json), entry for entry."""

from __future__ import annotations

import yaml

from geneb.tasks.catalogue import changes, read_catalogue, read_lock, records
from geneb.tasks.sources import open_source

#: the lockfile the config's `task_lock` names by default (workflow/schemas/config.schema.yaml)
DEFAULT_LOCK = "config/tasks.lock"


def test_the_committed_lock_matches_the_shared_mirror(repo, shared):
    lock = read_lock(repo / DEFAULT_LOCK)
    sheet = read_catalogue(repo / "config/tasks.tsv")
    mirrored = sorted(sheet.loc[sheet["task_set"] == "mirror", "task"].astype(str))
    assert len(mirrored) == 80 and sorted(lock) == mirrored
    source = open_source(str(shared / "data/tasks"))
    n_files = 0
    for task in mirrored:
        files = source.source_files(task)
        assert set(files) == {"train.csv.gz", "test.csv.gz", "meta.json"}, task
        assert changes(lock[task], records(files)) == [], task
        assert lock[task]["generation"] == 0
        n_files += len(files)
    assert n_files == 240


def test_the_shipped_configs_use_the_committed_lock(repo):
    schema = yaml.safe_load((repo / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["task_lock"]["default"] == DEFAULT_LOCK == "config/tasks.lock"
    for path in sorted((repo / "config").glob("*.yaml")):
        config = yaml.safe_load(path.read_text()) or {}
        assert config.get("task_lock", DEFAULT_LOCK) == DEFAULT_LOCK, path.name
