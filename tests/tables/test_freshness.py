"""geneb.tables.freshness: a table is stale when it is older than its score table or probe tables, and when a
resources/ file its score table was computed from (the record beside it) was removed or written again since,
even with the same content."""

from __future__ import annotations

import os

from geneb.tables.freshness import INPUTS_NAME, _changed_inputs, stale_warning, write_input_record


def make_run(root):
    """results/tables/{scores,leaderboard}.parquet (older to newer) and two resources/ files they record."""
    files = ["resources/tasks/t/0123456789ab/card.json", "resources/embeddings/m/abcdefabcdef/t/0123456789ab.h5"]
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x")
        os.utime(root / f, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    tables = root / "results/tables"
    tables.mkdir(parents=True)
    (tables / "scores.parquet").write_text("s")
    (tables / "leaderboard.parquet").write_text("b")
    os.utime(tables / "scores.parquet", ns=(1_100_000_000_000_000_000, 1_100_000_000_000_000_000))
    os.utime(tables / "leaderboard.parquet", ns=(1_200_000_000_000_000_000, 1_200_000_000_000_000_000))
    return files, tables


def test_a_rewritten_or_removed_resource_makes_every_table_of_the_run_stale(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files, tables = make_run(tmp_path)
    record = write_input_record(tables / INPUTS_NAME, files)
    assert record["root"] == str(tmp_path) and set(record["files"]) == set(files)
    assert _changed_inputs(tables / "scores.parquet") == []
    assert stale_warning(tables / "leaderboard.parquet") is None and stale_warning(tables / "scores.parquet") is None

    # the same bytes written again (a task re-prepared with the same params, a file re-extracted)
    (tmp_path / files[1]).write_text("x")
    changed = _changed_inputs(tables / "scores.parquet")
    assert [name for name, _ in changed] == [files[1]] and changed[0][1].startswith("written again ")
    for table in ("leaderboard.parquet", "scores.parquet"):
        warning = stale_warning(tables / table)
        assert warning is not None and warning.startswith(f"{tables / table} was computed from {files[1]}, written")

    (tmp_path / files[0]).unlink()
    assert dict(_changed_inputs(tables / "scores.parquet"))[files[0]] == "removed"
    assert "and 1 more" in stale_warning(tables / "leaderboard.parquet")


def test_a_moved_run_folder_is_read_against_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "..")
    here = tmp_path / "first"
    here.mkdir()
    monkeypatch.chdir(here)
    files, tables = make_run(here)
    write_input_record(tables / INPUTS_NAME, files)
    moved = tmp_path / "moved"
    os.replace(here, moved)
    monkeypatch.chdir(moved)
    assert _changed_inputs(moved / "results/tables/scores.parquet") == []


def test_a_run_without_a_record_is_judged_by_modification_times_alone(tmp_path):
    files, tables = make_run(tmp_path)
    assert _changed_inputs(tables / "scores.parquet") == []
    os.utime(tables / "scores.parquet", ns=(1_300_000_000_000_000_000, 1_300_000_000_000_000_000))
    assert "is older than its input" in stale_warning(tables / "leaderboard.parquet")
