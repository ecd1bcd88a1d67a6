"""One self-contained HTML page with the analysis tables and figures of a run, and the configuration and
package versions that made them.

Self-contained: the figures are inlined as base64 PNG data URIs, the style sheet is inline, and nothing is
fetched from the network, so the file can be mailed, archived or opened offline. Every table cell is HTML
escaped (pandas `to_html(escape=True)`).
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb import __version__
from geneb.analysis.published import capped_tasks
from geneb.analysis.ranking import wide_view
from geneb.analysis.registry import Section, report_sections
from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.core.integrity import write_text_atomic
from geneb.figures.registry import choose_protocol, figures
from geneb.report.render import (
    CSS,
    LEADERBOARD_CAPTION,
    PROVENANCE_COLUMNS,
    REPRODUCE_CAPTION,
    figure_html,
    figure_not_applicable,
    not_applicable,
    plural,
    table_html,
)
from geneb.report.sections import (
    ZEROSHOT_CAPTION,
    audit_sections,
    board_marks,
    board_notes,
    empty_reason,
    merged_parts,
    tiers_section,
    zeroshot_section,
)
from geneb.tables.freshness import stale_warnings
from geneb.tables.scores import REGIMES, AnalysisInputError, failed_tasks
from geneb.tasks.prepare import read_card


def _read(tables_dir: Path, name: str) -> pd.DataFrame:
    path = tables_dir / f"{name}.parquet"
    if not path.exists():
        raise AnalysisInputError(f"report: table {path} not found; run the analyses first")
    return integrity.read_parquet(path).drop(columns=["settings_hash", "input_sha256"], errors="ignore")


def _sel(df: pd.DataFrame, **kw: str) -> pd.DataFrame:
    """The rows of `df` whose columns in `kw` (those it has) equal the values, without protocol and regime."""
    for k, v in kw.items():
        if k in df.columns:
            df = df[df[k] == v]
    return df.drop(columns=[k for k in ("protocol", "regime") if k in df.columns])


def _section_rows(df: pd.DataFrame, section: Section, protocol: str, regime: str) -> pd.DataFrame:
    """The rows a report section shows: filtered to the report's protocol/regime (`section.by`) and to the
    true rows of `section.only`."""
    if section.by is not None:
        df = _sel(df, **{k: {"protocol": protocol, "regime": regime}[k] for k in section.by})
    if section.only is not None and len(df):
        df = df[df[section.only].fillna(False).astype(bool)]
    return df


def _num(value: Any, fmt: str) -> str:
    """A number formatted, or "n/a" for a missing one (None in the summary JSON, NaN)."""
    return "n/a" if value is None or (isinstance(value, float) and value != value) else format(value, fmt)


def _headline(summary: dict[str, Any], protocol: str) -> str:
    p = summary["protocols"].get(protocol, {})
    items = []
    regimes = p.get("regimes", {})
    for regime in sorted(regimes, key=lambda r: REGIMES.index(r) if r in REGIMES else len(REGIMES)):
        r = regimes[regime]
        parts = [
            f"<b>{html.escape(regime)}</b>: {plural(r.get('n_models') or 0, 'model')} × {plural(r.get('n_tasks') or 0, 'task')}"
        ]
        if r.get("top_model"):
            parts.append(f"top by macro MCC: {html.escape(r['top_model'])} ({r['top_macro']:.3f})")
        if r.get("mean_macro") is not None:
            parts.append(f"mean macro MCC over models: {r['mean_macro']:.3f}")
        for subset, s in (r.get("spearman") or {}).items():
            label = "all models" if subset == "all" else f"excluding {html.escape(s['excluded'])}"
            parts.append(
                f"Spearman ρ(params, macro MCC), {label}: {_num(s['rho'], '.3f')} [{_num(s['ci_low'], '.2f')}, "
                f"{_num(s['ci_high'], '.2f')}], n = {s['n']}"
            )
        if "n_reversals" in r:
            parts.append(
                f"{r['n_in_domain']} in-domain models; {r['n_reversals']} reversals (a ≥{summary['settings']['scale']['reversal_ratio']:g}× smaller model beats a larger one)"
            )
        if r.get("mean_kendall_tau_between_categories") is not None:
            parts.append(f"mean Kendall τ between category rankings: {r['mean_kendall_tau_between_categories']:.3f}")
        if "matched_pairs_significant" in r:
            parts.append(
                f"matched-pair tests significant after BH: {r['matched_pairs_significant']} of {r['matched_pairs_tested']}"
            )
        if r.get("scale_skipped"):
            parts.append(f"scale analysis skipped: {html.escape(r['scale_skipped'])}")
        parts.append(f"near-random tasks: {len(r.get('near_random_tasks', []))}")
        items.append("<li>" + "; ".join(parts) + "</li>")
    for change in p.get("top_model_changes", []):
        items.append(
            f"<li>categories whose top model changes from {html.escape(change['a'])} to {html.escape(change['b'])}: "
            f"{change['changed']} of {change['of']}</li>"
        )
    return '<ul class="headline">' + "".join(items) + "</ul>"


def _choices_headline(summary: dict[str, Any], regime: str) -> str:
    """One sentence per evaluation choice of the sensitivity analysis (its reference protocol, this regime), or
    the note saying why there is none."""
    s = summary.get("sensitivity") or {}
    lines = [h["sentence"] for h in s.get("headlines", []) if h.get("regime") == regime]
    head = "<h3>How much of a ranking is the protocol</h3>"
    if not lines:
        return head + f"<p class='note'>{html.escape(s['note'])}</p>" if s.get("note") else ""
    return head + '<ul class="headline">' + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"


def _pretraining_headline(summary: dict[str, Any], protocol: str, regime: str) -> str:
    """The count of (model, task) pairs where pretraining beats the random-init twin significantly (this protocol
    and regime; `analysis.pretraining`), or nothing for a run without twins."""
    s = summary.get("pretraining_gain") or {}
    lines = [h["sentence"] for h in s.get("headlines", []) if (h["protocol"], h["regime"]) == (protocol, regime)]
    if not lines:
        return ""
    return (
        "<h3>Does pretraining help</h3><ul class='headline'>"
        + "".join(f"<li>{html.escape(x)}</li>" for x in lines)
        + "</ul>"
    )


def _reproduce_section(path: str | Path | None, captions: dict[str, str]) -> list[str]:
    """The "Reproducing the paper" section: the paper's stated numbers beside GENEB's (none without a table)."""
    if path is None:
        return []
    table = integrity.read_parquet(path)
    n, ok = len(table), int(table["passed"].sum())
    return [
        "<h2 id='reproduce'>Reproducing the paper</h2>",
        f"<p>{html.escape(captions[REPRODUCE_CAPTION])} {ok} of {n} pass.</p>",
        table_html(table.drop(columns="claim"), 4, 100),
    ]


def _figure_or_line(png: Path, name: str, caption: str, heading: str) -> str:
    """The figure `png` with its caption, or, for a figure with nothing to plot (`render.figure_not_applicable`),
    the one line saying why."""
    if png.exists():
        why = figure_not_applicable(png)
        if why:
            return not_applicable(f"{heading} (figure)", why, f"fig-{name}")
    return figure_html(png, name, caption)


def _failed_section(tables_dir: Path) -> list[str]:
    """The tasks that failed in a partial run (leaderboard metadata, geneb.run.partial), with their errors."""
    failed = failed_tasks(str(tables_dir / "leaderboard.parquet"))
    if not failed:
        return []
    rows = pd.DataFrame(
        [{"task": t, "category": r["category"], "error": r["error"]} for t, r in sorted(failed.items())]
    )
    return [
        "<h2 id='failed'>Failed tasks</h2>",
        f"<p class='note'>{len(failed)} configured task(s) failed and are not in any table below; their categories "
        "(and the macro and micro means) are shown but not ranked. Fix them and run again.</p>",
        table_html(rows, 3, 500),
    ]


def _hygiene_table(scores: pd.DataFrame) -> pd.DataFrame:
    """The report's data-hygiene table: one row per task with its letter counts per split (score-table columns
    from the cards, geneb.tables.aggregate), whether its test split has one class, and the models whose
    embeddings saw unknown tokens (marked "⚠ model: train n / test m"). Empty when the columns are absent."""
    if "test_single_class" not in scores.columns:
        return pd.DataFrame()
    keys = ("rows_whitespace_stripped", "rows_u_mapped", "rows_iupac", "rows_lowercase", "rows_mostly_n")
    cols = [f"{split}_{k}" for k in keys for split in ("train", "test") if f"{split}_{k}" in scores.columns]
    per_task = scores.drop_duplicates("task").set_index("task")[["test_single_class", *cols]].sort_index()
    unk = scores.drop_duplicates(["model", "task"])
    marks = {}
    for task, g in unk.groupby("task"):
        seen = g[(g["n_unknown_tokens_train"].fillna(0) > 0) | (g["n_unknown_tokens_test"].fillna(0) > 0)]
        marks[task] = "; ".join(
            f"⚠ {m}: train {a} / test {b}"
            for m, a, b in zip(seen["model"], seen["n_unknown_tokens_train"], seen["n_unknown_tokens_test"])
        )
    per_task["unknown tokens"] = [marks.get(t, "") for t in per_task.index]
    return per_task.reset_index()


def _board_tasks(scores: str | Path | None) -> list[str]:
    """The task ids of the score table `scores` ([] without one)."""
    return [] if scores is None else sorted(integrity.read_parquet(scores, columns=["task"])["task"].unique())


def _capped_line(cards: list[str], *, n_tasks: int) -> str | None:
    """The headline's warning that the run's tasks are capped subsamples (config `caps`), or None when no card
    records a cap: how many of the `n_tasks` tasks, the largest kept train / test sizes, and what it means."""
    capped = capped_tasks(cards)
    if not capped:
        return None
    kept: dict[str, int] = {}
    for path in cards:
        for split, cap in read_card(path).capped_splits().items():
            kept[split] = max(kept.get(split, 0), cap.n_kept)
    sizes = " / ".join(f"{split} ≤ {n:,} rows" for split, n in sorted(kept.items(), key=lambda kv: kv[0] != "train"))
    return (
        f"⚠ {len(capped)} of {plural(n_tasks or len(capped), 'task')} are capped subsamples ({sizes}; a seeded, "
        "stratified subsample by the config's caps), not the tasks' full splits: the scores are not the paper's "
        "and not comparable with it (uncapped: config/compare_published.yaml, docs/analyses.md)."
    )


def build_report(
    tables_dir: str | Path,
    figures_dir: str | Path,
    out_path: str | Path,
    *,
    config: dict[str, Any],
    captions: dict[str, str],
    title: str = "GENEB report",
    protocol: str | None = None,
    regime: str = "full",
    reproduce: str | Path | None = None,
    scores: str | Path | None = None,
    task_audit: str | Path | None = None,
    cards: list[str] | None = None,
    zeroshot: Mapping[str, str | Path] | None = None,
    pooled: Mapping[str, Any] | None = None,
) -> Path:
    """Write the report for the tables in `tables_dir` and figures in `figures_dir` to `out_path`.

    config: the workflow configuration that made the run (shown verbatim); captions: {caption file: text}
    (`captions.report_captions`). The page holds: headline statistics, the leaderboard, each registered figure
    with its caption (`geneb.figures.registry`), the registered analysis sections (`geneb.analysis.registry`),
    the contamination list, the models, the configuration, the analysis settings and package versions.
    reproduce: the `reproduce_paper` table (the published report's "Reproducing the paper" section), if any; with
    it the "Statistically tied tiers" section (`geneb.report.sections`, from rank_separability) is marked as GENEB's
    own finding. scores: the score table, for the data-hygiene section (`_hygiene_table`), if any. task_audit: the
    task audit table for the "Task audit" section (`geneb.report.sections`), if any. zeroshot: the zero-shot tables
    and figure ({key of `ZEROSHOT_REPORT_INPUTS`: path}) for its section (`geneb.report.sections`), or None.
    cards: the run's task cards; the headline says which tasks the run's caps made subsamples (`_capped_line`).
    pooled: a merged folder's tables/pool.json, for its "Pooled from" block and one-liners (`report.pooled`). A table older than the score table it was computed from is named in a warning at the top (`geneb.tables.
    freshness`); the provenance columns (PROVENANCE_COLUMNS) are stated once. Raises AnalysisInputError when a
    table, figure or caption is missing.
    """
    tables_dir, figures_dir = Path(tables_dir), Path(figures_dir)
    summary = json.loads((tables_dir / "analysis_summary.json").read_text())
    board = _read(tables_dir, "leaderboard")
    protocol = choose_protocol(board, protocol)
    missing = [c for c in (LEADERBOARD_CAPTION, *(f.caption for f in figures())) if c not in captions]
    if missing:
        raise AnalysisInputError(f"report: no caption text for {missing}")
    sections = report_sections()
    t = {name: _read(tables_dir, name) for name in ("rank_intervals", "contamination", "models", "rank_separability")}
    t.update({name: _read(tables_dir, name) for name in dict.fromkeys(s.table for s in sections)})
    display = dict(zip(t["models"]["model"], t["models"]["display"]))
    board_attrs = {str(k): v for k, v in integrity.read_parquet(tables_dir / "leaderboard.parquet").attrs.items()}
    wide = wide_view(board, protocol, regime, complete_only=False)
    wide.columns.name = None
    wide.insert(0, "display", [display.get(m, m) for m in wide.index])
    marks = board_marks(board, board_attrs, protocol, regime)
    if len(marks):
        wide = wide.join(marks)
    wide = wide.reset_index()
    ri = _sel(t["rank_intervals"], protocol=protocol, regime=regime)
    if len(ri):
        ri_cols = [c for c in ("model", "value", "rank", "of", "rank_low", "rank_high", "p_top1") if c in ri.columns]
        ri = ri[ri["category"] == "macro"][ri_cols].sort_values("rank")  # rank, of and interval: one computation
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    read = [
        "leaderboard",
        "rank_intervals",
        "rank_separability",
        "contamination",
        "models",
        *(s.table for s in sections),
    ]
    stale = stale_warnings(tables_dir / f"{name}.parquet" for name in dict.fromkeys(read))
    categories = [c for c in wide.columns if c in CATEGORIES]
    wide = wide.drop(
        columns=[
            c for c in ("flags", "excluded_tasks", "not ranked because") if c in wide.columns and not wide[c].any()
        ]
    )
    counts = {"heatmap": f" Shown: {plural(len(wide), 'model')} × {len(categories)} of {len(CATEGORIES)} categories."}
    capped = _capped_line(cards, n_tasks=len(_board_tasks(scores))) if cards else None
    failed = _failed_section(tables_dir)
    figs = {f.name: (f, figures_dir / f"{f.name}.png") for f in figures()}
    heat = figs.pop("heatmap", None)
    merged, zs_caption = merged_parts(pooled, tables_dir.parent), captions.get(ZEROSHOT_CAPTION, "")
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        *(f"<p class='warn'>⚠ {html.escape(w)}</p>" for w in stale),
        f"<p class='note'>protocol {html.escape(protocol)}, regime {html.escape(regime)}; generated {now} by geneb "
        f"{__version__}; score table sha256 {summary['input_sha256']}, analysis settings hash {summary['settings_hash']}; "
        "methods: docs/analyses.md. Order: the answer (headline, leaderboard), the analyses, then the diagnostics "
        "(failed cells, task audit, data hygiene) and the provenance.</p>",
        *merged["top"],
        "<h2 id='headline'>Headline statistics</h2>",
        *([f"<p class='warn'>{html.escape(capped)}</p>"] if capped else merged["cards"]),
        *(["<p class='warn'>⚠ some tasks failed: see <a href='#failed'>Failed tasks</a></p>"] if failed else []),
        _headline(summary, protocol),
        _choices_headline(summary, regime),
        _pretraining_headline(summary, protocol, regime),
        "<h2 id='leaderboard'>Leaderboard</h2>",
        *(
            [_figure_or_line(heat[1], "heatmap", captions[heat[0].caption] + counts["heatmap"], "Heatmap")]
            if heat
            else []
        ),
        f"<p>{html.escape(captions[LEADERBOARD_CAPTION])}</p>",
        table_html(wide, 3, 200),
        *board_notes(board, board_attrs, protocol, regime),
        *tiers_section(t["rank_separability"], protocol, table_html, own_finding=reproduce is not None),
        f"<h3>Macro rank with {summary['settings']['confidence']:.0%} bootstrap interval</h3>",
        table_html(ri, 3, 200, empty=f"no rank intervals for {protocol} / {regime}"),
        *_reproduce_section(reproduce, captions),
        *(zeroshot_section(zeroshot, table_html, figure_html, zs_caption) or merged["zeroshot"]),
        "<h2 id='analyses'>Analyses</h2>",
        "<h3 id='figures'>Figures</h3>",
    ]
    parts += [
        _figure_or_line(png, name, captions[f.caption] + counts.get(name, ""), name.replace("_", " ").capitalize())
        for name, (f, png) in figs.items()
    ]
    parts.append("<h3 id='tables'>Analysis tables</h3>")
    for s in sections:
        df = _section_rows(t[s.table], s, protocol, regime)
        if df.empty:
            parts.append(not_applicable(s.heading, empty_reason(s, summary, protocol, regime)))
        else:
            parts += [f"<h3>{html.escape(s.heading)}</h3>", table_html(df)]
    parts += ["<h2 id='diagnostics'>Diagnostics</h2>"]
    parts += failed or [not_applicable("Failed tasks", "none: every configured task completed", "failed")]
    audit = audit_sections(task_audit, scores, tables_dir / "leaderboard.parquet", table_html)
    parts += audit
    if not any("id='failed-cells'" in x for x in audit):
        parts.append(not_applicable("Failed cells", "none: every (model, task) cell of a completed task has a score"))
    if task_audit is None or not Path(task_audit).exists():
        parts.append(not_applicable("Task audit", "not in this run (no task_audit table given to the report)"))
    shown: list[tuple[str, pd.DataFrame, str]] = []
    if scores is not None:
        shown.append(
            (
                "Data hygiene (letters per split from the task cards; ⚠ marks embeddings that saw unknown tokens; "
                "one-class test splits are left out of category means)",
                _hygiene_table(integrity.read_parquet(scores)),
                "the score table carries no letter counts (written before the task cards had them)",
            )
        )
    shown += [
        (
            "Contaminated cells (left out of rankings by default)",
            t["contamination"],
            "none: no model's registry entry lists a task of this run in trained_on_tasks",
        ),
        ("Models", t["models"], "no models table"),
    ]
    for heading, df, why in shown:
        parts += [not_applicable(heading, why)] if df.empty else [f"<h3>{html.escape(heading)}</h3>", table_html(df)]
    versions = dict(summary.get("package_versions", {}), python=platform.python_version())
    parts += [
        "<h2 id='provenance'>Configuration and versions</h2>",
        "<h3>Workflow configuration</h3>",
        f"<pre>{html.escape(yaml.safe_dump(config, sort_keys=False))}</pre>",
        "<h3>Analysis settings (effective)</h3>",
        f"<pre>{html.escape(yaml.safe_dump(summary['settings'], sort_keys=False))}</pre>",
        "<h3>Package versions</h3>",
        f"<pre>{html.escape(yaml.safe_dump(versions, sort_keys=True))}</pre>",
        f"<p class='note'>Every table above was written by GENEB commit {html.escape(str(summary.get('geneb_commit')))} "
        f"(uncommitted changes: {html.escape(str(summary.get('geneb_dirty')))}); the parquet files carry it per row "
        f"({', '.join(PROVENANCE_COLUMNS)}).</p>",
        "<p class='note'>The versions that computed the embeddings (torch, transformers, the model's revision and "
        "weights hash) are in each HDF5 file's extraction key; the probe tables carry its hash (`embedding_key_hash`) "
        "and the versions of the probe (docs/data-dictionary.md).</p>",
        "</body></html>",
    ]
    write_text_atomic(out_path, "\n".join(parts))
    return Path(out_path)
