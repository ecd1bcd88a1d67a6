"""The run report leads with its answer and fits a 1280 px window: headline, then the leaderboard with the heatmap
first, then the analyses, then the diagnostics; a section or figure that does not apply is one line saying why;
no table reaches past the window's right edge and the page does not scroll sideways (measured in Debian's
headless chromium over the DevTools pipe, tests/cdp_support.py; a screenshot is kept, its path printed)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from cdp_support import Browser, chromium
from geneb.report.html import build_report
from geneb.report.render import _TABLE_BUDGET_PX, _column_groups, report_captions, table_html

WIDTH = 1280


def test_column_groups_fit_the_budget_and_repeat_the_key():
    widths = [150.0] + [90.0] * 30
    groups = _column_groups(widths)
    assert len(groups) == 3 and all(g[0] == 0 for g in groups)
    assert sorted({i for g in groups for i in g}) == list(range(31))
    assert all(sum(widths[i] for i in g) <= _TABLE_BUDGET_PX for g in groups)
    assert max(len(g) for g in groups) - min(len(g) for g in groups) <= 2  # even parts, not one full and one stub
    assert _column_groups([100.0, 200.0]) == [[0, 1]]


def test_a_wide_table_is_split_and_an_empty_one_is_a_line():
    wide = pd.DataFrame({"task": ["a_long_task_name_of_a_run"], **{f"auroc_di_{i:02d}": [0.5] for i in range(30)}})
    out = table_html(wide)
    assert out.count("<table>") >= 2 and "shown in" in out and out.count("<td>a_<wbr>long") == out.count("<table>")
    assert table_html(pd.DataFrame(), empty="none: nothing applies") == '<p class="note">none: nothing applies</p>'


FEATURES = ["length", "gc", *(f"mono_{b}" for b in "ACGT"), *(f"di_{a}{b}" for a in "ACGT" for b in "ACGT")]


def _audit(scores: Path, path: Path) -> Path:
    """A task-audit table of the columns the audit writes (results/tables/task_audit.parquet), one row per task
    of `scores`, every task flagged (so the flagged-task table has every column): the widest tables a run has."""
    tasks = pd.read_parquet(scores, columns=["task", "category"]).drop_duplicates("task")
    rows = []
    for i, (task, category) in enumerate(zip(tasks["task"], tasks["category"])):
        row = {"task": task, "category": category, "shortcut_flag": "fail", "leak_flag": "fail"}
        row |= {
            "shortcut_best_feature": "di_GC",
            "shortcut_best_auroc": 0.74,
            "shortcut_best_model_full": "shortcut-gc",
        }
        row |= {"shortcut_best_mcc_full": 0.31, "leaked_fraction": 0.12, "overlap_homolog": 40 + i}
        row |= {"overlap_exact": 3, "overlap_reverse_complement": 1, "overlap_case_only": 0}
        row |= {f"auroc_{f}": 0.5 + j / 100 for j, f in enumerate(FEATURES)}
        rows.append(row)
    pd.DataFrame(rows).to_parquet(path)
    return path


def _order(text: str, anchors: list[str]) -> list[int]:
    return [text.index(a) for a in anchors]


def check_report(report: Path, tmp_path: Path) -> dict:
    """Order and one-line sections in the HTML; in chromium at 1280 px: scroll width and every table's right
    edge. Returns the measurements (scroll width, table widths) and the screenshot path."""
    text = report.read_text()
    pos = _order(text, ["id='headline'", "id='leaderboard'", 'id="fig-heatmap"', "id='analyses'", "id='diagnostics'"])
    assert pos == sorted(pos), pos
    assert "(no rows)" not in text and "no rows</p>" not in text
    for placeholder in ("no scale analysis", "no matched pair could be tested", "random-init twin beside it"):
        for hit in re.finditer(re.escape(placeholder), text):  # a placeholder is a line of text, not a figure
            assert "<p class='na'" in text[max(0, hit.start() - 400) : hit.start()], placeholder
    exe = chromium()
    if exe is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the lead's CI installs it")
    b = Browser(exe, tmp_path / "profile", width=WIDTH)
    try:
        b.open(report.as_uri())
        assert b.errors == []
        scroll = b.eval("document.documentElement.scrollWidth")
        tables = b.eval(
            "[...document.querySelectorAll('table')].map(t=>[Math.round(t.getBoundingClientRect().width),"
            "Math.round(t.getBoundingClientRect().right)])"
        )
        shot = b.screenshot(tmp_path / "report.png")
    finally:
        b.close()
    assert scroll <= WIDTH, scroll
    assert tables and all(right <= WIDTH for _, right in tables), tables
    print(f"report screenshot: {shot}; scrollWidth {scroll}; table widths {[w for w, _ in tables]}")
    return {"scroll": scroll, "tables": tables, "shot": shot}


@pytest.mark.browser
def test_synthetic_run_report_fits_1280_px(synthetic_run, tmp_path, repo):
    root = synthetic_run["root"]
    out = tmp_path / "report.html"
    build_report(
        root / "results" / "tables",
        root / "results" / "figures",
        out,
        config=synthetic_run["config"],
        captions=report_captions(repo / "workflow" / "report"),
        scores=root / "results" / "tables" / "scores.parquet",
        task_audit=_audit(root / "results" / "tables" / "scores.parquet", tmp_path / "task_audit.parquet"),
    )
    m = check_report(out, tmp_path)
    text = out.read_text()
    assert text.count("a wide table, shown in") >= 2  # the audit's AUROCs and flagged tasks, at least
    assert text.index("id='leaderboard'") < text.index("id='task-audit'")
    assert m["shot"].read_bytes()[:4] == b"\x89PNG"
