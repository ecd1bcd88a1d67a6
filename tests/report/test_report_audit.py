"""The report's task-audit and failed-cell sections (geneb.report.sections)."""

from __future__ import annotations

import pandas as pd

from geneb.report.sections import audit_sections
from geneb.tables.scores import FAILED_CELLS_ATTR


def _table(df, digits=3, max_rows=60):
    return df.to_html(index=False)


def test_flagged_tasks_failed_cells_and_clean_differences_are_shown(tmp_path):
    board = pd.DataFrame({"model": ["a"], "value": [0.5]})
    board.attrs[FAILED_CELLS_ATTR] = {"bpe": {"t2": {"category": "Promoters", "error": "rows 3, 9: every token UNK"}}}
    board.to_parquet(tmp_path / "leaderboard.parquet")
    audit = pd.DataFrame(
        {
            "task": ["t1", "t2"],
            "category": ["Promoters", "Promoters"],
            "shortcut_flag": ["fail", "pass"],
            "leak_flag": ["pass", "pass"],
            "auroc_gc": [0.8, 0.55],
        }
    )
    audit.to_parquet(tmp_path / "task_audit.parquet")
    base = {"protocol": "p", "category": "Promoters", "regime": "full", "metric": "MCC", "seed": 0, "n_test": 10}
    scores = pd.DataFrame(
        [
            {**base, "model": "a", "task": "t1", "value": 0.5, "value_clean": 0.2, "n_test_clean": 6},
            {**base, "model": "a", "task": "t2", "value": 0.5, "value_clean": 0.5, "n_test_clean": 10},
        ]
    )
    scores.to_parquet(tmp_path / "scores.parquet")
    page = "\n".join(
        audit_sections(
            tmp_path / "task_audit.parquet", tmp_path / "scores.parquet", tmp_path / "leaderboard.parquet", _table
        )
    )
    assert "Failed cells" in page and "every token UNK" in page and "not ranked" in page
    assert "1 of 2 task(s) flagged" in page and "<td>t1</td>" in page.split("Single-feature")[0]
    assert "Largest full-vs-clean" in page and "0.3" in page
    # no audit table and no failed cell: no section
    pd.DataFrame({"model": ["a"]}).to_parquet(tmp_path / "clean_board.parquet")
    assert audit_sections(None, None, tmp_path / "clean_board.parquet", _table) == []


def test_a_task_without_clean_rows_is_shown_as_such_not_left_out(tmp_path):
    """Every test row of l1 has a training copy: value_clean is NaN, so it has no difference to rank by; the
    section lists it under its own heading with the reason (before: left out of the page)."""
    from geneb.analysis.controls import NO_CLEAN_ROWS
    from synth import flagged_board_run

    t = flagged_board_run(tmp_path)
    page = "\n".join(audit_sections(t / "task_audit.parquet", t / "scores.parquet", t / "leaderboard.parquet", _table))
    assert "Tasks without clean test rows" in page and NO_CLEAN_ROWS in page
    rows = page.split("Tasks without clean test rows")[1]
    assert "<td>l1</td>" in rows and "<td>p1</td>" not in rows and "0.99" in rows
    # the top differences still list the tasks that have clean rows
    assert "<td>p1</td>" in page.split("Largest full-vs-clean")[1].split("Tasks without clean")[0]


def test_the_report_leaderboard_marks_flagged_tasks_failed_categories_and_exclusions(tmp_path):
    from geneb.report.sections import board_marks, board_notes
    from synth import flagged_board_run

    for sub, cfg in (("flagged", None), ("excluded", {"exclude_flagged": ["leakage"]})):
        board_path = flagged_board_run(tmp_path / sub, cfg) / "leaderboard.parquet"
        board, attrs = pd.read_parquet(board_path), pd.read_parquet(board_path).attrs
        marks = board_marks(board, attrs, "geneb-paper", "full")
        assert list(marks.index) == ["a", "b", "c"] and set(marks["flags"]) == {"leakage"}
        n = 4 if sub == "excluded" else 5  # l1 left out of what is expected
        assert all(r.startswith(f"missing 1 of {n} task(s): v1") for r in marks["not ranked because"])
        notes = "\n".join(board_notes(board, attrs, "geneb-paper", "full"))
        assert "Coding/NC: not ranked for any model, no task of this category completed: v1" in notes
        assert "1 task fail the task audit" in notes and "<b>l1</b>: leakage: 100.0% of test rows" in notes
        assert ("Ranked without the tasks flagged leakage" in notes) == (sub == "excluded")
        if sub == "excluded":
            assert set(marks["excluded_tasks"]) == {"l1"} and "leaderboard.exclude_flagged): l1." in notes
