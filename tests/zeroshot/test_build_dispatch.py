"""The dispatcher builds catalogued tasks into valid folders with their provenance, deterministic by seed."""

from __future__ import annotations

import hashlib
import json

import pytest

from geneb.cli.app import main
from geneb.core.paths import repo_root
from geneb.zeroshot.build import BUILDERS, build_task, build_tasks
from geneb.zeroshot.task import CatalogueEntry, ZeroShotCatalogueError, read_zeroshot_catalogue, read_zeroshot_task

CATALOGUE = repo_root() / "config" / "zeroshot_tasks.tsv"
SMALL = {
    "zs_real_vs_shuffled": {"n_per_source": 10},
    "zs_promoter_motif_disruption": {"n_effects": 10},
    "zs_stop_gain_vs_synonymous": {"n_transcripts": 5},
    "zs_copy_recall": {"n_rows": 20},
}


def test_the_catalogue_names_known_builders_of_its_kinds_and_real_tasks(real_tasks):
    entries = read_zeroshot_catalogue(CATALOGUE)
    assert {e.task for e in entries} == set(SMALL)
    for e in entries:
        assert BUILDERS[e.builder].kind == e.kind
        assert all((real_tasks / t / "train.csv.gz").is_file() for t in e.source_tasks)


def test_every_catalogued_task_builds_valid_with_provenance(real_tasks, tmp_path):
    built = build_tasks(tmp_path, real_tasks, seed=3, catalogue=CATALOGUE, params=SMALL)
    assert [t.name for t in built] == [e.task for e in read_zeroshot_catalogue(CATALOGUE)]
    for task in built:
        again = read_zeroshot_task(tmp_path / task.name)
        assert again.data_sha256 == task.data_sha256
        prov = task.meta["provenance"]
        assert prov["seed"] == 3 and prov["builder"] in BUILDERS
        for key, value in SMALL[task.name].items():
            assert prov["parameters"][key] == value
        for source in prov["source_tasks"]:
            path = real_tasks / source["task"] / source["file"]
            assert source["split"] == "train"
            assert source["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert task.source_tasks == tuple(s["task"] for s in prov["source_tasks"])


@pytest.mark.parametrize("task", sorted(SMALL))
def test_builds_are_deterministic_by_seed(task, real_tasks, tmp_path):
    entry = next(e for e in read_zeroshot_catalogue(CATALOGUE) if e.task == task)
    a = build_task(entry, real_tasks, tmp_path / "a", 11, SMALL[task])
    b = build_task(entry, real_tasks, tmp_path / "b", 11, SMALL[task])
    c = build_task(entry, real_tasks, tmp_path / "c", 12, SMALL[task])
    assert a.data_sha256 == b.data_sha256
    assert (tmp_path / "a" / task / "meta.json").read_text() == (tmp_path / "b" / task / "meta.json").read_text()
    assert c.data_sha256 != a.data_sha256


def test_bad_builder_kind_and_parameter_are_refused(real_tasks, tmp_path):
    entry = CatalogueEntry("x", "paired", "stop_gain", ("prelnc_ath_lncrna_vs_mrna__resplit",), "d")
    with pytest.raises(ValueError, match="makes 'variant' tasks, the catalogue says 'paired'"):
        build_task(entry, real_tasks, tmp_path)
    with pytest.raises(ValueError, match="unknown builder 'nope'"):
        build_task(CatalogueEntry("x", "paired", "nope", ("t",), "d"), real_tasks, tmp_path)
    entry = CatalogueEntry("x", "variant", "stop_gain", ("prelnc_ath_lncrna_vs_mrna__resplit",), "d")
    with pytest.raises(ValueError, match="no parameter\\(s\\) n_rows"):
        build_task(entry, real_tasks, tmp_path, params={"n_rows": 3})


def test_catalogue_problems_are_listed_together(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("task\tkind\tbuilder\tsource_tasks\tdescription\na\tpairs\tb\tt\td\na\tpaired\tb\t\td\n")
    with pytest.raises(ZeroShotCatalogueError) as err:
        read_zeroshot_catalogue(path)
    text = str(err.value)
    assert "row 0: kind 'pairs'" in text and "row 1: empty source_tasks" in text
    assert "row 1: task 'a' is listed already in row 0" in text


def test_cli_builds_the_named_tasks(real_tasks, tmp_path, capsys):
    argv = ["zeroshot", "build", "--out", str(tmp_path), "--seed", "5", "--task-source", str(real_tasks)]
    argv += ["--catalogue", str(CATALOGUE), "--tasks", "zs_copy_recall"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "zs_copy_recall\tpaired\t240 rows" in out
    meta = json.loads((tmp_path / "zs_copy_recall" / "meta.json").read_text())
    assert meta["provenance"]["seed"] == 5 and meta["data_sha256"] in out
    assert main([*argv[:-1], "nope"]) == 2
    assert "not in" in capsys.readouterr().err
