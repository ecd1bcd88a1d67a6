"""Bundles and merging on two real small runs: each run bundled, the bundles merged, the merged leaderboard equal
to the one the workflow's step computes from the union of the runs' scores, and the CLI's leaderboard and the site
built from the merged folder; a bundle with a changed byte, rows that are not comparable and a cell that differs
between bundles are refused, each naming what differs; --prefer settles the cell."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from pool_support import two_runs  # noqa: F401

from geneb.analysis.registry import LEADERBOARD_TABLES
from geneb.analysis.steps import leaderboard_step
from geneb.cli.app import main
from geneb.core import integrity
from geneb.pool.bundle import BundleError, read_bundle, write_bundle
from geneb.pool.merge import MergeError, _analysis_sections, build_tables, merge_bundles

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def bundles(runs: dict[str, Path], folder: Path) -> list[Path]:
    out = []
    for name, run in runs.items():
        path = folder / f"{name}.geneb.zip"
        write_bundle(run / "results", path, model_sheet=REPO / "config/models.yaml")
        out.append(path)
    return out


def test_merged_leaderboard_equals_the_one_of_the_union(two_runs, tmp_path, capsys):  # noqa: F811
    paths = bundles(two_runs, tmp_path)
    merged = tmp_path / "merged"
    config = two_runs["cluster-a"] / "config/config.yaml"
    assert main([*["merge", *map(str, paths)], "--out", str(merged), "--config", str(config)]) == 0
    assert "merged 2 bundles" in capsys.readouterr().out
    union = pd.concat(
        [integrity.read_parquet(r / "results/tables/scores.parquet") for r in two_runs.values()], ignore_index=True
    )
    (tmp_path / "union").mkdir()
    integrity.write_parquet(union, tmp_path / "union/scores.parquet")
    analysis, board = _analysis_sections(config)
    leaderboard_step(
        scores=str(tmp_path / "union/scores.parquet"),
        models_yaml=str(REPO / "config/models.yaml"),
        tasks_tsv=str(REPO / "config/tasks.tsv"),
        analysis_config=analysis,
        view="geneb",
        outputs={n: str(tmp_path / f"union/{n}.parquet") for n in LEADERBOARD_TABLES},
        leaderboard_config=board,
        task_audit=str(merged / "tables/task_audit.parquet"),
    )
    got = integrity.read_parquet(merged / "tables/leaderboard.parquet")
    want = integrity.read_parquet(tmp_path / "union/leaderboard.parquet")
    assert set(got["model"]) == {"kmer-3", "shortcut-gc"}
    key = ["protocol", "regime", "category", "model"]
    # input_sha256 digests the score file's bytes: the merged file orders its rows by cell, the union by run
    pd.testing.assert_frame_equal(
        got.sort_values(key).reset_index(drop=True).drop(columns="input_sha256"),
        want.sort_values(key).reset_index(drop=True).drop(columns="input_sha256"),
        rtol=1e-12,
    )
    assert (merged / "tables/models.parquet").is_file()  # the analyses built from the merged folder too
    assert main(["leaderboard", "--results-dir", str(merged)]) == 0
    assert "kmer-3" in capsys.readouterr().out
    assert main(["site", "--results-dir", str(merged), "--out", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site/index.html").is_file()


def test_a_changed_byte_is_refused_naming_the_member(two_runs, tmp_path):  # noqa: F811
    (path, _) = bundles(two_runs, tmp_path)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    data = bytearray(members["tables/scores.parquet"])
    data[len(data) // 2] ^= 1
    members["tables/scores.parquet"] = bytes(data)
    bad = tmp_path / "tampered.geneb.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    with pytest.raises(BundleError, match="bundle tampered.geneb.zip: member tables/scores.parquet was changed"):
        read_bundle(bad)
    assert main(["merge", str(bad), "--out", str(tmp_path / "m")]) == 2


def altered(run: Path, dest: Path, **changes: object) -> Path:
    """A copy of the results folder `run` with the score column(s) of `changes` set on every row of task 0."""
    shutil.copytree(run / "tables", dest / "tables")
    scores = integrity.read_parquet(dest / "tables/scores.parquet")
    first = scores["task"] == sorted(scores["task"].unique())[0]
    for col, value in changes.items():
        scores.loc[first, col] = value
    integrity.write_parquet(scores, dest / "tables/scores.parquet")
    return dest


def test_rows_that_are_not_comparable_are_refused_naming_the_field(two_runs, tmp_path):  # noqa: F811
    a = tmp_path / "a.geneb.zip"
    write_bundle(two_runs["cluster-a"] / "results", a, model_sheet=REPO / "config/models.yaml")
    for field in ("data_hash", "shots_hash", "config_hash", "schema_version"):
        b = tmp_path / f"b-{field}.geneb.zip"
        folder = altered(two_runs["cluster-b"] / "results", tmp_path / field, **{field: "0000other"})
        write_bundle(folder, b, model_sheet=REPO / "config/models.yaml")
        with pytest.raises(MergeError) as err:
            merge_bundles([a, b], tmp_path / f"m-{field}")
        lines = str(err.value).splitlines()
        task = "gue_prom_core_all"
        # one line per difference, naming the key, both bundles' values, the models, the cause and the fix
        assert lines[0].startswith("1 difference(s) make the bundles' rows not comparable") and len(lines) == 2
        where = {
            "data_hash": f"task {task}",
            "shots_hash": f"task {task} (regimes 10shot, 1shot, full)",
            "config_hash": "protocol geneb-",
        }
        assert lines[1].startswith(f"- {field} of {where.get(field, 'the rows')}"), lines[1]
        assert f"b-{field}.geneb.zip has 0000other" in lines[1] and "shortcut-gc" in lines[1]
        assert "Why: " in lines[1] and "Fix: " in lines[1]
        assert not (tmp_path / f"m-{field}").exists()
    # caps that differ are said to differ, with each bundle's row counts
    b = tmp_path / "b-caps.geneb.zip"
    caps = altered(two_runs["cluster-b"] / "results", tmp_path / "caps", data_hash="0000other", n_train=160, n_test=200)
    write_bundle(caps, b, model_sheet=REPO / "config/models.yaml")
    with pytest.raises(MergeError) as err:
        merge_bundles([a, b], tmp_path / "m-caps")
    (line,) = str(err.value).splitlines()[1:]
    assert "Why: caps differ: b-caps.geneb.zip has 160 training / 200 test rows of gue_prom_core_all" in line
    assert "Fix: rerun one run with the other's `caps`" in line


def test_a_cell_from_two_runs_is_kept_once_refused_or_preferred(two_runs, tmp_path):  # noqa: F811
    run = two_runs["cluster-a"] / "results"
    same = [tmp_path / "one.geneb.zip", tmp_path / "again.geneb.zip"]
    for p in same:
        write_bundle(run, p, model_sheet=REPO / "config/models.yaml")
    record = merge_bundles(same, tmp_path / "dedup")
    n = len(integrity.read_parquet(run / "tables/scores.parquet"))
    assert record["rows"] == n and len(record["deduplicated"]) > 0
    other = tmp_path / "other.geneb.zip"
    write_bundle(altered(run, tmp_path / "changed", value=0.123), other, model_sheet=REPO / "config/models.yaml")
    with pytest.raises(MergeError, match=r"cell geneb-paper\|kmer-3\|gue_prom_core_all\|.*other.geneb.zip has"):
        merge_bundles([same[0], other], tmp_path / "refused")
    record = merge_bundles([same[0], other], tmp_path / "preferred", prefer="other.geneb.zip")
    assert record["preferred"] and all(p["kept"] == "other.geneb.zip" for p in record["preferred"])
    pooled = integrity.read_parquet(tmp_path / "preferred/tables/scores.parquet")
    assert (pooled.loc[pooled["task"] == "gue_prom_core_all", "value"] == 0.123).all()
    assert json.loads((tmp_path / "preferred/tables/pool.json").read_text())["prefer"] == "other.geneb.zip"
    built = build_tables(
        tmp_path / "preferred",
        config_file=two_runs["cluster-a"] / "config/config.yaml",
        task_sheet=REPO / "config/tasks.tsv",
    )
    assert any(p.endswith("leaderboard.parquet") for p in built)
