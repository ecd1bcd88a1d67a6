"""One model failing on a task removes that (model, task) cell only (geneb.run.partial.split_cells,
cell_excluded); a task-level failure removes the task for every model."""

from __future__ import annotations

from geneb.run.partial import _cell_excluded, cell_logs, split_cells


def test_a_failed_cell_keeps_the_other_models_of_its_task():
    done, failed, cells = split_cells(
        ["t1", "t2", "t3"],
        ["a", "b"],
        task_failed={"t3"},
        cell_ready=lambda m, t: True,
        cell_failed=lambda m, t: (m, t) == ("b", "t1"),
    )
    assert done == ["t1", "t2"] and failed == ["t3"] and cells == {"b": ["t1"]}
    partial = {"tasks": done, "failed": {"t3": {}}, "failed_cells": {"b": {"t1": {"error": "x"}}}}
    assert _cell_excluded(partial, "b", "t1") and not _cell_excluded(partial, "a", "t1")
    assert not _cell_excluded(None, "b", "t1")


def test_a_task_every_model_failed_is_a_failed_task():
    done, failed, cells = split_cells(
        ["t1"], ["a", "b"], task_failed=set(), cell_ready=lambda m, t: False, cell_failed=lambda m, t: False
    )
    assert done == [] and failed == ["t1"] and cells == {}


def test_cell_logs_are_those_of_the_model(tmp_path):
    for rel in (
        "extract_embeddings/a/0123456789ab/fedcba987654/t1.log",
        "extract_embeddings/ab/0123456789ab/fedcba987654/t1.log",
        "fit_probes/geneb-paper/a/t1.log",
        "fit_probes/geneb-paper/a/t2.log",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    found = sorted(str(p.relative_to(tmp_path)) for p in cell_logs(tmp_path, "a", "t1"))
    assert found == ["extract_embeddings/a/0123456789ab/fedcba987654/t1.log", "fit_probes/geneb-paper/a/t1.log"]
