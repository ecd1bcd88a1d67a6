"""The report's task-audit and failed-cell sections (geneb.report.audit)."""

from __future__ import annotations

import pandas as pd

from geneb.report.audit import audit_sections
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
