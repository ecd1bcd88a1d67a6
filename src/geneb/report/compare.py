"""The comparison report of `compare_published`: a self-contained HTML page that places the user's models beside the
paper's published models, in a form a paper can cite.

It says first what the comparison covers and under which rules (`headline`): how many of the paper's tasks and
categories were compared, every task left out and why (for all models or for one), the contamination rule, and
the reference-extractor caveat (the published scores come from the paper's reference extractor, whose defects
GENEB's adapters correct for some models: `geneb.analysis.steps.reference_caveats`, docs/adapters/). Then each
user model's macro rank among the ranked models with its bootstrap rank interval (tasks resampled), its placement
per category with CIs, the figure (`geneb.figures.compare.rank_figure`, also written as PNG and PDF files), the
full board and the per-task table beside the published models. Provenance (version, commit, input hashes) is
stated once, not repeated in every table.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from geneb import __version__
from geneb.core import integrity
from geneb.core.atomic import write_text_atomic
from geneb.core.categories import CATEGORIES
from geneb.figures.compare import rank_figure
from geneb.figures.style import paper_style, save
from geneb.report.render import CSS, PROVENANCE_COLUMNS, figure_html, plural, table_html
from geneb.tables.freshness import stale_warnings

#: the regime the headline and figure use (the others are in the tables)
REGIME = "full"


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "n/a" if value is None or pd.isna(value) else format(value, spec)


def _interval(lo: Any, hi: Any, spec: str = ".3f") -> str:
    return "no interval" if pd.isna(lo) or pd.isna(hi) else f"{format(lo, spec)}–{format(hi, spec)}"


def coverage_line(summary: dict[str, Any]) -> str:
    """ "N of 100 paper tasks, k of 13 categories (Promoters 4 of 10, ...)": what the comparison covers."""
    compared = pd.Series(summary["compared_tasks"], dtype=object)
    per_cat = compared.value_counts()
    cats = [c for c in CATEGORIES if c in per_cat.index]
    paper = summary["paper_tasks_per_category"]
    detail = ", ".join(f"{c} {per_cat[c]} of {paper.get(c, '?')}" for c in cats)
    return (
        f"{len(compared)} of {summary['n_paper_tasks']} paper tasks, {len(cats)} of {len(CATEGORIES)} categories "
        f"({detail})"
    )


def _model_lines(board: pd.DataFrame, summary: dict[str, Any], protocol: str) -> list[str]:
    macro = board[(board["protocol"] == protocol) & (board["regime"] == REGIME) & (board["category"] == "macro")]
    n_ranked = int(macro["rank"].notna().sum())
    conf = summary["confidence"]
    out = []
    for model in summary["user_models"]:
        row = macro[macro["model"] == model]
        if row.empty:
            out.append(f"<b>{html.escape(model)}</b>: no {REGIME} result on the compared tasks")
            continue
        r = row.iloc[0]
        if pd.isna(r["rank"]):
            out.append(
                f"<b>{html.escape(model)}</b>: not ranked: it lacks {int(r['n_tasks_expected'] - r['n_tasks'])} of the "
                f"{int(r['n_tasks_expected'])} compared tasks (see the tasks left out below); macro MCC over the tasks it "
                "has is not comparable"
            )
            continue
        out.append(
            f"<b>{html.escape(model)}</b>: rank {int(r['rank'])} of {n_ranked} ranked models by macro MCC "
            f"({_fmt(r['value'])}, {conf:.0%} CI {_interval(r['ci_low'], r['ci_high'])}); rank interval "
            f"{_interval(r['rank_low'], r['rank_high'], 'd')} over {summary['n_resamples']} task resamples"
        )
    return out


def _left_out_lines(left: pd.DataFrame) -> list[str]:
    """The left-out tasks, grouped by reason and scope: "all models" (model "*") or the one model."""
    if left.empty:
        return ["no task left out"]
    out = []
    for (model, reason), g in left.groupby(["model", "reason"], sort=False):
        scope, reason = ("for all models" if model == "*" else f"for {model}"), str(reason)
        tasks = sorted(set(g["task"]))
        shown = ", ".join(tasks) if len(tasks) <= 12 else ", ".join(tasks[:12]) + f", … (all {len(tasks)} in the table)"
        out.append(f"{plural(len(tasks), 'task')} {html.escape(scope)}: {html.escape(reason)}: {html.escape(shown)}")
    return out


def headline(board: pd.DataFrame, left: pd.DataFrame, summary: dict[str, Any]) -> str:
    """The headline as an HTML list: coverage, each user model's rank with its intervals, every task left out and
    why, the contamination rule applied, and the reference-extractor caveat."""
    protocol = summary["protocol"]
    caveats = summary["reference_caveats"]
    items = [
        f"<b>Coverage</b>: {html.escape(coverage_line(summary))}; {plural(len(summary['user_models']), 'model')} of "
        f"yours beside the paper's {summary['n_published_models']} published models, protocol {protocol}, "
        f"{REGIME} training data. Scores and ranks hold for these tasks only, not for the paper's whole benchmark.",
        *_model_lines(board, summary, protocol),
        "<b>Left out</b>: " + "; ".join(_left_out_lines(left)),
        (
            f"<b>Contamination rule</b> (analysis.contamination: {summary['contamination']}): a (model, task) cell is "
            + (
                "left out where the model's registry entry lists the task, or the paper task with the same data, in "
                "`trained_on_tasks`; such a model is then incomplete and shown unranked."
                if summary["contamination"] == "exclude"
                else "kept (policy flag) even where the model was trained on the task; such cells measure "
                "memorisation, not transfer."
            )
        ),
        (
            f"<b>Reference extractor</b>: the {summary['n_published_models']} published scores come from the paper's "
            f"reference extractor, yours from GENEB's. GENEB's adapters differ from that extractor, correcting known defects, for "
            f"{plural(len(caveats), 'published model')} ({', '.join(html.escape(c['model']) for c in caveats)}; "
            "table below, docs/adapters/): their published scores are what the defect gave, so a GENEB rerun of "
            "them may differ."
        ),
        f"<b>Uncertainty</b>: {summary['confidence']:.0%} percentile intervals over {summary['n_resamples']} "
        f"resamples of the compared tasks within each category (seed {summary['seed']}); test rows are not "
        "resampled (the published models have no per-row predictions). A single-task category has no interval.",
    ]
    return '<ul class="headline">' + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def placement_table(board: pd.DataFrame, summary: dict[str, Any]) -> pd.DataFrame:
    """Each user model per category (and macro), full regime: value, CI, rank of ranked, rank interval, role."""
    b = board[(board["protocol"] == summary["protocol"]) & (board["regime"] == REGIME)]
    n_ranked = b[b["rank"].notna()].groupby("category")["model"].size()
    mine = b[b["model"].isin(summary["user_models"])].copy()
    mine["of"] = mine["category"].map(n_ranked).astype("Int64")
    cols = ["model", "category", "value", "ci_low", "ci_high", "rank", "of", "rank_low", "rank_high", "role", "n_tasks"]
    order = {c: i for i, c in enumerate((*CATEGORIES, "macro", "micro"))}
    mine = mine.assign(_o=mine["category"].map(order)).sort_values(["model", "_o"])
    return mine[[c for c in cols if c in mine.columns]]


def build_compare_report(
    board_path: str | Path,
    left_path: str | Path,
    tasks_path: str | Path,
    summary_path: str | Path,
    out_path: str | Path,
    figure_png: str | Path,
    *,
    title: str = "Your models beside the GENEB paper's published models",
) -> Path:
    """Write the comparison report to `out_path` and its figure to `figure_png` (and the same name with .pdf).

    Inputs are the comparison's outputs (`geneb.analysis.steps.compare_step`): the board with intervals, the
    left-out list, the per-task table and the summary JSON. A table older than the score table it was computed
    from (`geneb.tables.freshness`) is named in a warning at the top. Returns the report path. Raises OSError /
    ValueError for a missing or unreadable input."""
    board = integrity.read_parquet(board_path)
    left = integrity.read_parquet(left_path)
    per_task = integrity.read_parquet(tasks_path)
    summary = json.loads(Path(summary_path).read_text())
    protocol = summary["protocol"]
    with paper_style():
        fig = rank_figure(board, protocol=protocol, regime=REGIME)
        save(fig, figure_png)
    warnings = stale_warnings([board_path, left_path, tasks_path])
    shown_board = board[(board["protocol"] == protocol) & (board["regime"] == REGIME)]
    shown_board = shown_board[shown_board["category"] == "macro"].sort_values(["rank", "model"], na_position="last")
    keep = ["model", "origin", "value", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "p_top1", "n_tasks"]
    caveats = pd.DataFrame(summary["reference_caveats"], columns=["model", "change", "page"])
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_tasks = len(summary["compared_tasks"])
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        *(f"<p class='warn'>⚠ {html.escape(w)}</p>" for w in warnings),
        "<h2 id='headline'>Headline</h2>",
        headline(board, left, summary),
        "<h2 id='figure'>Macro rank with bootstrap intervals</h2>",
        figure_html(
            Path(figure_png),
            "compare_published",
            f"Every ranked model's macro MCC on the {plural(n_tasks, 'compared task')} with its "
            f"{summary['confidence']:.0%} CI (left) and its macro rank with its bootstrap rank interval (right), "
            "tasks resampled within categories; your models in colour and bold, the published models in grey. "
            f"Files: {Path(figure_png).name}, {Path(figure_png).with_suffix('.pdf').name}.",
        ),
        "<h2 id='placement'>Your models per category</h2>",
        "<p class='note'>rank: among the models ranked in that category (of); role: best, or tied with the best by "
        f"the {html.escape(summary['tie_rule'])} rule (`geneb recommend --table` reads the same table).</p>",
        table_html(placement_table(board, summary), 3, 500),
        f"<h2 id='board'>Macro leaderboard ({REGIME}), all compared models</h2>",
        table_html(shown_board[[c for c in keep if c in shown_board.columns]], 3, 500),
        "<h2 id='tasks'>Per task, beside the published models</h2>",
        table_html(
            per_task[(per_task["protocol"] == protocol) & (per_task["regime"] == REGIME)].drop(
                columns=["protocol", "regime"]
            ),
            3,
            2000,
        ),
        "<h2 id='left-out'>Tasks left out</h2>",
        table_html(left, 3, 500),
        "<h2 id='caveats'>Published models whose reference extraction GENEB corrects</h2>",
        table_html(caveats, 3, 100),
        "<h2 id='provenance'>Provenance</h2>",
        f"<p class='note'>generated {now} by geneb {html.escape(str(summary.get('geneb_version', __version__)))}, "
        f"commit {html.escape(str(summary.get('geneb_commit')))} (dirty: {html.escape(str(summary.get('geneb_dirty')))}); "
        f"score table sha256 {html.escape(summary['input_sha256']['scores'])}, published scores sha256 "
        f"{html.escape(summary['input_sha256']['published'])}. Tables: {html.escape(str(board_path))}, "
        f"{html.escape(str(tasks_path))}, {html.escape(str(left_path))} (columns: docs/data-dictionary.md; the "
        f"provenance columns {', '.join(PROVENANCE_COLUMNS)} are stated here once).</p>",
        "</body></html>",
    ]
    write_text_atomic(out_path, "\n".join(parts))
    return Path(out_path)
