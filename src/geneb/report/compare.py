"""The comparison report of `compare_published`: a self-contained HTML page that places the user's models beside the
paper's published models, in a form a paper can cite.

It says first what the comparison covers and under which rules (`_headline`): how many of the paper's tasks and
categories were compared, every task left out and why (for all models or for one), the contamination rule, and
the reference-extractor caveat (the published scores come from the paper's reference extractor, whose defects
GENEB's adapters correct for some models: `geneb.analysis.steps.reference_caveats`, docs/adapters/). Then each
user model's macro rank among the ranked models with its bootstrap rank interval (tasks resampled), its placement
per category with CIs, the figure (`geneb.figures.paper.rank_figure`, also written as PNG and PDF files), the
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

import geneb.report.runcard as runcard
from geneb import __version__
from geneb.analysis.inputs import load_model_meta
from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.core.integrity import write_text_atomic
from geneb.figures.paper import rank_figure
from geneb.figures.style import paper_style, save
from geneb.report.render import CSS, PROVENANCE_COLUMNS, facts_html, figure_html, plural, table_html
from geneb.tables.freshness import INPUTS_NAME, stale_warnings

#: the regimes the report shows, in order (each with its headline lines, figure, placement and board)
_REPORT_REGIMES = ("full", "10shot", "1shot")
#: where the published scores come from (../shared/reference/geneb_paper/README.md): what a citation names
_PUBLISHED_SOURCE = (
    'Ledneva, Nuridinov, Kuznetsov, "GENEB: Why Genomic Models Are Hard to Compare", ICML 2026, arXiv 2606.04525; '
    "published results: the official per-model submission files of the reference benchmark (GitHub darlednik/GENEB, "
    "also DeepPavlov/geneb; task data DeepPavlov/geneb-tasks on the Hugging Face hub)"
)


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "n/a" if value is None or pd.isna(value) else format(value, spec)


def _interval(lo: Any, hi: Any, spec: str = ".3f") -> str:
    return "no interval" if pd.isna(lo) or pd.isna(hi) else f"{format(lo, spec)}–{format(hi, spec)}"


def _coverage_line(summary: dict[str, Any]) -> str:
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


def _model_lines(board: pd.DataFrame, summary: dict[str, Any], protocol: str, regime: str) -> list[str]:
    macro = board[(board["protocol"] == protocol) & (board["regime"] == regime) & (board["category"] == "macro")]
    n_ranked = int(macro["rank"].notna().sum())
    conf = summary["confidence"]
    out = []
    for model in summary["user_models"]:
        row = macro[macro["model"] == model]
        if row.empty:
            out.append(f"<b>{html.escape(model)}</b> ({regime}): no {regime} result on the compared tasks")
            continue
        r = row.iloc[0]
        if pd.isna(r["rank"]):
            out.append(
                f"<b>{html.escape(model)}</b> ({regime}): not ranked: it lacks {int(r['n_tasks_expected'] - r['n_tasks'])} of the "
                f"{int(r['n_tasks_expected'])} compared tasks (see the tasks left out below); macro MCC over the tasks it "
                "has is not comparable"
            )
            continue
        # an interval the resamples could not give says why (`interval_reason`), not only "no interval"
        why = str(r.get("interval_reason") or "") if any(pd.isna(r[c]) for c in ("ci_low", "ci_high", "rank_low", "rank_high")) else ""  # fmt: skip
        out.append(
            f"<b>{html.escape(model)}</b> ({regime}): rank {int(r['rank'])} of {n_ranked} ranked models by macro MCC "
            f"({_fmt(r['value'])}; {conf:.0%} CI {_interval(r['ci_low'], r['ci_high'])} and rank interval "
            f"{_interval(r['rank_low'], r['rank_high'], 'd')} from {summary['n_resamples']} bootstrap resamples of the "
            f"compared tasks{'; ' + html.escape(why) if why else ''})"
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


def _regimes_of(board: pd.DataFrame, protocol: str) -> list[str]:
    """The regimes of REPORT_REGIMES the comparison board has rows of (then any other, sorted)."""
    have = set(board.loc[board["protocol"] == protocol, "regime"].astype(str))
    return [r for r in _REPORT_REGIMES if r in have] + sorted(have - set(_REPORT_REGIMES))


def _headline(board: pd.DataFrame, left: pd.DataFrame, summary: dict[str, Any]) -> str:
    """The headline as an HTML list: coverage, each user model's rank with its intervals, every task left out and
    why, the contamination rule applied, and the reference-extractor caveat."""
    protocol = summary["protocol"]
    caveats = summary["reference_caveats"]
    items = [
        f"<b>Coverage</b>: {html.escape(_coverage_line(summary))}; {plural(len(summary['user_models']), 'model')} of "
        f"yours beside the paper's {summary['n_published_models']} published models, protocol {protocol}, "
        f"regimes {', '.join(_regimes_of(board, protocol))}. Scores and ranks hold for these tasks only, not for the "
        "paper's whole benchmark.",
        *(line for regime in _regimes_of(board, protocol) for line in _model_lines(board, summary, protocol, regime)),
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


def _placement_table(board: pd.DataFrame, summary: dict[str, Any], regime: str = "full") -> pd.DataFrame:
    """Each user model per category (and macro) in `regime`: value, CI, rank of ranked, rank interval, role."""
    b = board[(board["protocol"] == summary["protocol"]) & (board["regime"] == regime)]
    mine = b[b["model"].isin(summary["user_models"])].copy()
    if "of" not in mine.columns:  # a comparison table written before `of`
        n_ranked = b[b["rank"].notna()].groupby("category")["model"].size()
        mine["of"] = mine["category"].map(n_ranked).astype("Int64")
    cols = ["model", "category", "value", "ci_low", "ci_high", "rank", "of", "rank_low", "rank_high", "role", "n_tasks"]
    order = {c: i for i, c in enumerate((*CATEGORIES, "macro", "micro"))}
    mine = mine.assign(_o=mine["category"].map(order)).sort_values(["model", "_o"])
    return mine[[c for c in cols if c in mine.columns]]


def _regime_sections(board: pd.DataFrame, summary: dict[str, Any], regime: str, png: Path, n_tasks: int) -> list[str]:
    """One regime's figure (drawn to `png`), its placement table and its macro board."""
    protocol = summary["protocol"]
    with paper_style():
        save(rank_figure(board, protocol=protocol, regime=regime), png)
    shown = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    shown = shown[shown["category"] == "macro"].sort_values(["rank", "model"], na_position="last")
    keep = ["model", "origin", "value", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "p_top1", "n_tasks"]
    keep += ["tier"] if "tier" in shown.columns else []
    return [
        f"<h2 id='regime-{regime}'>Regime {html.escape(regime)}</h2>",
        figure_html(
            png,
            f"compare_published_{regime}",
            f"{regime}: every ranked model's macro MCC on the {plural(n_tasks, 'compared task')} with its "
            f"{summary['confidence']:.0%} CI (left) and its macro rank with its bootstrap rank interval (right), "
            "tasks resampled within categories; your models in colour and bold, the published models in grey. "
            f"Files: {png.name}, {png.with_suffix('.pdf').name}.",
        ),
        f"<h3>Your models per category ({html.escape(regime)})</h3>",
        "<p class='note'>rank: among the models ranked in that category (of); role: best, or tied with the best by "
        f"the {html.escape(summary['tie_rule'])} rule (`geneb recommend --model ID --table` reads the same table).</p>",
        table_html(_placement_table(board, summary, regime), 3, 500),
        f"<h3>Macro leaderboard ({html.escape(regime)}), all compared models</h3>",
        table_html(shown[[c for c in keep if c in shown.columns]], 3, 500),
    ]


def _run_cards(
    models: list[str], registry: pd.DataFrame, scores: pd.DataFrame | None, inputs: dict[str, Any]
) -> list[str]:
    """Per user model its run card (`geneb.report.runcard`, as on the site's model page): the registry facts
    (parameter count, declared pretraining data, ...), per settings hash the source / factory and weights
    fingerprint with the environment, and the probe provenance (protocol config hash, versions)."""
    out = []
    for model in models:
        out.append(f"<h3>{html.escape(model)}</h3>")
        facts = runcard.registry_facts(registry, model)
        out.append(facts_html(facts) if facts else "<p class='note'>not in the model registry given</p>")
        records = runcard.extraction_records(runcard.embedding_files(inputs, model))
        out += [facts_html(runcard.extraction_facts(r)) for r in records] or [
            "<p class='note'>no embedding file of this model is recorded on disk (scores_inputs.json, resources/)</p>"
        ]
        probe = runcard.probe_provenance(scores, model)
        out.append(
            facts_html({f"probe {k}": v for k, v in probe.items()})
            if probe
            else "<p class='note'>the score table records no probe provenance for this model</p>"
        )
    return out


def _cite_block(summary: dict[str, Any], scores: pd.DataFrame | None, summary_path: Path) -> str:
    """The "How to cite" block: GENEB version and commit, the protocol's config hash (the score table's
    `config_hash`), the comparison's input digests and the published results' source (PUBLISHED_SOURCE)."""
    protocol = summary["protocol"]
    config_hash = "not recorded (no score table given)"
    if scores is not None and "config_hash" in scores.columns:
        rows = scores[scores["protocol"] == protocol] if "protocol" in scores.columns else scores
        config_hash = ", ".join(sorted({str(v) for v in rows["config_hash"].dropna()})) or "not recorded"
    version = str(summary.get("geneb_version", __version__))
    commit = str(summary.get("geneb_commit"))
    facts = {
        "GENEB version": version,
        "GENEB commit": f"{commit} (uncommitted changes: {summary.get('geneb_dirty')})",
        f"protocol {protocol}, config hash": config_hash,
        "your score table sha256": summary["input_sha256"]["scores"],
        "published scores sha256": summary["input_sha256"]["published"],
        "published results": _PUBLISHED_SOURCE,
        "comparison summary": str(summary_path),
    }
    text = (
        f"Scores computed with GENEB {version} (commit {commit[:12]}), protocol {protocol} (config hash "
        f"{config_hash}), compared with the published results of {_PUBLISHED_SOURCE}."
    )
    return facts_html(facts) + f"<p>Suggested wording:</p><pre>{html.escape(text)}</pre>"


def build_compare_report(
    board_path: str | Path,
    left_path: str | Path,
    tasks_path: str | Path,
    summary_path: str | Path,
    out_path: str | Path,
    figure_png: str | Path,
    *,
    scores_path: str | Path | None = None,
    models_yaml: str | Path | None = None,
    title: str = "Your models beside the GENEB paper's published models",
) -> Path:
    """Write the comparison report to `out_path` and its full-regime figure to `figure_png` (and the same name with
    .pdf; the other regimes' figures beside it as `{stem}_{regime}.png` / .pdf).

    Inputs are the comparison's outputs (`geneb.analysis.steps.compare_step`): the board with intervals, the
    left-out list, the per-task table and the summary JSON; `scores_path` (the run's score table, with
    scores_inputs.json beside it) and `models_yaml` (the registry) give the run cards and the config hash. A
    table older than the score table it was computed from (`geneb.tables.freshness`) is named in a warning at
    the top. Returns the report path. Raises OSError / ValueError for a missing or unreadable input."""
    board = integrity.read_parquet(board_path)
    left = integrity.read_parquet(left_path)
    per_task = integrity.read_parquet(tasks_path)
    summary = json.loads(Path(summary_path).read_text())
    scores = integrity.read_parquet(scores_path) if scores_path else None
    inputs_file = Path(scores_path).with_name(INPUTS_NAME) if scores_path else None
    inputs = json.loads(inputs_file.read_text()) if inputs_file and inputs_file.exists() else {}
    registry = load_model_meta(models_yaml).reset_index() if models_yaml else pd.DataFrame()
    protocol = summary["protocol"]
    warnings = stale_warnings([board_path, left_path, tasks_path])
    caveats = pd.DataFrame(summary["reference_caveats"], columns=["model", "change", "page"])
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_tasks = len(summary["compared_tasks"])
    png = Path(figure_png)
    regimes = _regimes_of(board, protocol)
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        *(f"<p class='warn'>⚠ {html.escape(w)}</p>" for w in warnings),
        "<h2 id='headline'>Headline</h2>",
        _headline(board, left, summary),
    ]
    for regime in regimes:
        target = png if regime == "full" else png.with_name(f"{png.stem}_{regime}.png")
        parts += _regime_sections(board, summary, regime, target, n_tasks)
    parts += [
        "<h2 id='tasks'>Per task, beside the published models (every regime)</h2>",
        table_html(per_task[per_task["protocol"] == protocol].drop(columns=["protocol"]), 3, 2000),
        "<h2 id='run-cards'>How your models were run</h2>",
        *_run_cards(summary["user_models"], registry, scores, inputs),
        "<h2 id='left-out'>Tasks left out</h2>",
        table_html(left, 3, 500, empty="none: every compared task has a score of every model"),
        "<h2 id='caveats'>Published models whose reference extraction GENEB corrects</h2>",
        table_html(caveats, 3, 100, empty="none"),
        "<h2 id='cite'>How to cite</h2>",
        _cite_block(summary, scores, Path(summary_path)),
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
