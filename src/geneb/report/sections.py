"""The sections of the run report: task audit, leaderboard marks, tied tiers, zero-shot, the pooled block,
and why a section is empty.

Why an analysis section of the run report has no rows for the report's protocol and regime: the one line the
report shows instead of an empty table (`geneb.report.render.not_applicable`). Read from the analysis summary
(analysis_summary.json) where it states the reason, else from what the section's table and filter are.

The report's task-audit sections: flagged tasks, single-feature AUROCs, the largest full-vs-clean MCC
differences, and the (model, task) cells that failed (docs/analyses.md, "Task audit").

The marks of the report's leaderboard: per model the audit flags, excluded tasks and why a row is not ranked, and
the notes under the table (categories no task of which completed, flagged tasks with their reasons, the tasks
the ranking leaves out; docs/analyses.md, "Flagged tasks on the leaderboards").

The report's "Statistically tied tiers" section: per regime how many models are a defensible #1 on macro and
in each category, and how many adjacent ranks the tasks separate (`rank_separability.parquet`,
`geneb.analysis.tiers`; docs/analyses.md, "Statistically tied tiers").

The report's zero-shot section: the zero-shot leaderboard (macro rows), the rank correlation with the probe
leaderboard, the scorers that did not apply and why, and the zero-shot figure (docs/zeroshot.md).

The report of a merged results folder (`geneb merge`, docs/pooling.md): the "Pooled from" block near the top
(the bundles from tables/pool.json: name, sha256, score rows; the rule for a cell two bundles held and the
--prefer bundle) and the one line of each section a merged folder cannot have (task cards, zero-shot scoring),
naming the folder.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.analysis.controls import NO_CLEAN_ROWS, clean_differences
from geneb.analysis.ranking import EXCLUDE_FLAGGED_ATTR, TASK_FLAGS_ATTR
from geneb.analysis.registry import Section
from geneb.core import integrity
from geneb.report.render import not_applicable, table_html
from geneb.tables.scores import MISSING_CELL_RULE, REGIMES, AnalysisInputError, failed_cells
from geneb.zeroshot.plan import ZEROSHOT_REPORT_INPUTS
from geneb.zeroshot.tables import MACRO


def _regime(summary: dict[str, Any], protocol: str, regime: str) -> dict[str, Any]:
    return ((summary.get("protocols") or {}).get(protocol) or {}).get("regimes", {}).get(regime) or {}


def empty_reason(section: Section, summary: dict[str, Any], protocol: str, regime: str) -> str:
    """The reason `section` shows no row in a run of `summary` (the analysis summary JSON) for (`protocol`,
    `regime`), as one sentence."""
    r = _regime(summary, protocol, regime)
    table = section.table
    if table in ("scale", "in_domain"):
        return "not run: " + str(
            r.get("scale_skipped") or "the scale analysis needs >= 3 models with different parameter counts"
        )
    if table == "reversals":
        ratio = ((summary.get("settings") or {}).get("scale") or {}).get("reversal_ratio")
        among = f"among the {r['n_in_domain']} in-domain models" if "n_in_domain" in r else "in this run"
        bigger = f"one at least {ratio:g}× its size" if isinstance(ratio, (int, float)) else "a larger one"
        return f"none: no model beats {bigger} {among}"
    if table == "matched_pairs":
        tested = r.get("matched_pairs_tested")
        if not tested:
            return "no matched pair could be tested (none declared in the registry or derivable, or too few tasks)"
        return f"none of the {tested} tested pairs differs significantly after Benjamini-Hochberg"
    if table.startswith("fewshot"):
        skipped = ((summary.get("protocols") or {}).get(protocol) or {}).get("fewshot_skipped")
        if skipped:
            return str(skipped)
        if table == "fewshot_inverse":
            return "Spearman ρ needs at least 3 models with a macro MCC in the full regime and in a k-shot regime"
        return f"no model has a macro MCC in the full regime and in a k-shot regime of {protocol}"
    if table == "recommendations":
        return "fewer than 2 complete models: nothing to choose between"
    for key in ("best_layer", "sensitivity", "pretraining_gain"):
        if table == key:
            note = (summary.get(key) or {}).get("note") if isinstance(summary.get(key), dict) else None
            if note:
                return str(note)
            if key == "pretraining_gain":
                return "no model of this run has its random-init twin beside it (twins: true)"
    if section.only is not None:
        return f"none: no row of {table} has {section.only.replace('_', ' ')} for {protocol} / {regime}"
    return f"the {table} table has no rows for {protocol} / {regime}"


#: rows of the full-vs-clean table
_TOP_DIFFERENCES = 15


def audit_sections(
    task_audit: str | Path | None, scores: str | Path | None, leaderboard: str | Path, table: Callable[..., str]
) -> list[str]:
    """HTML parts: "Task audit" (from `task_audit`, results/tables/task_audit.parquet) and "Failed cells" (from the
    leaderboard's metadata); `table(df, digits, max_rows)` renders a frame. Nothing for absent inputs."""
    parts: list[str] = []
    cells = failed_cells(str(leaderboard))
    if cells:
        rows = [
            {"model": m, "task": t, "category": r.get("category", ""), "error": r.get("error", "")}
            for m, tasks in sorted(cells.items())
            for t, r in sorted(tasks.items())
        ]
        parts += [
            "<h3 id='failed-cells'>Failed cells</h3>",
            f"<p class='note'>{len(rows)} (model, task) cell(s) failed while other models completed the task; the "
            f"other models' scores of those tasks are kept. {html.escape(MISSING_CELL_RULE)}.</p>",
            table(pd.DataFrame(rows), 3, 500),
        ]
    if task_audit is None or not Path(task_audit).exists():
        return parts
    audit = integrity.read_parquet(task_audit)
    flagged = audit[(audit["shortcut_flag"] == "fail") | (audit["leak_flag"] == "fail")]
    head = [
        "task",
        "category",
        "shortcut_flag",
        "shortcut_best_feature",
        "shortcut_best_auroc",
        "shortcut_best_model_full",
        "shortcut_best_mcc_full",
        "leak_flag",
        "overlap_exact",
        "overlap_reverse_complement",
        "overlap_case_only",
        "overlap_homolog",
        "leaked_fraction",
    ]
    parts += [
        "<h2 id='task-audit'>Task audit</h2>",
        "<p>Is the task measuring the model? Shortcut: the largest single-feature AUROC on the training split "
        "(length, GC, 4 bases, 16 dinucleotides; genomic-benchmarks-qc flags: fail above 0.7, unknown under 250 rows "
        "per class) and the best shortcut model's MCC. Leakage: test rows with a training homolog (MMseqs2, both "
        "strands, candidates re-scored by the identity of the whole test row, at or above the configured threshold); "
        "fail at the configured fraction. "
        f"{len(flagged)} of {len(audit)} task(s) flagged.</p>",
        *(
            ["<h3>Flagged tasks</h3>", table(flagged[[c for c in head if c in flagged.columns]], 3, 500)]
            if len(flagged)
            else [not_applicable("Flagged tasks", "none: no task fails the shortcut or leakage audit")]
        ),
        "<h3>Single-feature AUROCs per task (training split)</h3>",
        table(audit[["task", *[c for c in audit.columns if c.startswith("auroc_")]]], 3, 500),
    ]
    if scores is not None:
        diffs = clean_differences(integrity.read_parquet(scores))
        shown = diffs.dropna(subset=["difference"]).head(_TOP_DIFFERENCES)
        heading = f"Largest full-vs-clean MCC differences (top {_TOP_DIFFERENCES})"
        parts += (
            [
                f"<h3>{heading}</h3>",
                "<p class='note'>value: MCC on the whole test split; value_clean: the same fitted probe on the test "
                "rows without a training homolog (seed means).</p>",
                table(shown, 4, _TOP_DIFFERENCES),
            ]
            if len(shown)
            else [not_applicable(heading, "none: no cell has both a full-split and a clean-subset MCC")]
        )
        none = _no_clean_rows(diffs)
        if len(none):
            parts += [
                "<h3>Tasks without clean test rows</h3>",
                f"<p class='warn'>⚠ {len(none)} task(s): {html.escape(NO_CLEAN_ROWS)}. Their full-split MCC cannot be "
                "told apart from memorising the training split (no clean value, so no difference above); the clean "
                "leaderboard lists them as missing and does not rank their categories.</p>",
                table(none, 4, 500),
            ]
    return parts


def _no_clean_rows(diffs: pd.DataFrame) -> pd.DataFrame:
    """The tasks of `clean_differences(scores)` without a clean value in any cell (`value_clean` NaN: every test row
    has a training homolog or duplicate), one row per task: task, category, n_test, n_test_clean, models (how many
    scored it), best_value (the largest full-split MCC, what its leaderboard would show) and clean
    (NO_CLEAN_ROWS)."""
    if diffs.empty or "value_clean" not in diffs.columns:
        return pd.DataFrame(columns=["task", "category", "n_test", "n_test_clean", "models", "best_value", "clean"])
    has = diffs.groupby("task")["value_clean"].transform(lambda v: v.notna().any())
    d = diffs[~has.astype(bool)]
    out = (
        d.groupby("task", sort=True)
        .agg(
            category=("category", "first"),
            n_test=("n_test", "max"),
            n_test_clean=("n_test_clean", "max"),
            models=("model", "nunique"),
            best_value=("value", "max"),
        )
        .reset_index()
    )
    out["clean"] = NO_CLEAN_ROWS
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def board_marks(board: pd.DataFrame, attrs: dict[str, Any], protocol: str, regime: str) -> pd.DataFrame:
    """Per model of the leaderboard's (`protocol`, `regime`): its macro row's `flags` (the audit flags of the
    tasks it is made of), `excluded_tasks` and `not ranked because` (`incomplete_reason`), the columns the
    report's leaderboard adds to the wide view. Empty for a table written before those columns existed."""
    need = {"flags", "excluded_tasks", "incomplete_reason"}
    if not need <= set(board.columns):
        return pd.DataFrame()
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime) & (board["category"] == "macro")]
    out = b.set_index("model")[["flags", "excluded_tasks", "incomplete_reason"]].fillna("")
    return out.rename(columns={"incomplete_reason": "not ranked because"})


def board_notes(board: pd.DataFrame, attrs: dict[str, Any], protocol: str, regime: str) -> list[str]:
    """HTML notes under the report's leaderboard: the categories no task of which completed, each flagged task
    with its reason (the leaderboard's metadata, `leaderboard.TASK_FLAGS_ATTR`), and the tasks the ranking
    leaves out (`leaderboard.EXCLUDE_FLAGGED_ATTR`, config `leaderboard.exclude_flagged`)."""
    parts = []
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    if "incomplete_reason" in b.columns:
        empty = b[b["incomplete_reason"].fillna("").str.startswith("no task of this category completed")]
        for category, g in empty.groupby("category", observed=True, sort=True):
            parts.append(
                f"<p class='warn'>⚠ {html.escape(str(category))}: not ranked for any model, "
                f"{html.escape(str(g['incomplete_reason'].iloc[0]))}; the macro and micro rows are not ranked.</p>"
            )
    flags = attrs.get(TASK_FLAGS_ATTR) or {}
    if flags:
        items = "".join(
            f"<li><b>{html.escape(t)}</b>: "
            + "; ".join(f"{html.escape(k)}: {html.escape(str(why))}" for k, why in sorted(kinds.items()))
            + "</li>"
            for t, kinds in sorted(flags.items())
        )
        parts.append(
            f"<p class='warn'>⚑ {_plural(len(flags), 'task')} fail the task audit (config `leaderboard:` thresholds); "
            f"every row such a task feeds names it in the parquet's flagged_tasks and flags columns, here the "
            f"flags column:</p><ul>{items}</ul>"
        )
    excluded = attrs.get(EXCLUDE_FLAGGED_ATTR) or []
    if excluded:
        left = sorted(t for t, kinds in flags.items() if set(kinds) & set(excluded))
        parts.append(
            f"<p class='warn'>Ranked without the tasks flagged {html.escape(', '.join(excluded))} (config "
            f"leaderboard.exclude_flagged): {html.escape(', '.join(left) or 'none')}.</p>"
        )
    return parts


#: the columns of rank_separability the section's table shows
_SHOWN = (
    "regime",
    "category",
    "n_models",
    "n_tasks",
    "tier_blocks",
    "tier_n_blocks",
    "n_defensible_top",
    "n_separable_adjacent",
    "n_adjacent_pairs",
    "n_tiers",
    "friedman_p",
    "n_tier_notes",
    "tier_reason",
)
#: the banner of the published report's section: the counts are GENEB's analysis of the published per-task
#: results, not numbers the paper states (they are not among config/paper_claims.yaml's claims)
_OWN_FINDING = (
    "GENEB's own finding, not a number the paper states: computed by GENEB from the paper's published per-task "
    "results (the same code as a run's leaderboard); the paper reports no significance tiers."
)


def _headline(sep: pd.DataFrame, regime: str) -> str:
    """One sentence for `regime`'s macro row of `sep` (rank_separability rows of one protocol): how many
    defensible #1 models of how many, which, and how many adjacent pairs are separable; the tier_reason when
    the regime has no tiers; "" without a macro row."""
    row = sep[(sep["regime"] == regime) & (sep["category"] == "macro")]
    if row.empty:
        return ""
    r = row.iloc[0]
    if pd.isna(r["n_defensible_top"]):
        return f"{regime}: no tiers ({r['tier_reason']})."
    conf = float(r["tier_confidence"])
    cats = sep[(sep["regime"] == regime) & ~sep["category"].isin(("macro", "micro"))]
    tiered = cats[cats["n_defensible_top"].notna()]
    single = int((tiered["n_defensible_top"] == 1).sum())
    return (
        f"{regime}: {int(r['n_defensible_top'])} of {int(r['n_models'])} models are a defensible #1 on macro "
        f"(tier 1 at {conf:.0%}: {str(r['defensible_top_models']).replace(',', ', ')}); "
        f"{int(r['n_separable_adjacent'])} of {int(r['n_adjacent_pairs'])} adjacent macro ranks are separable; "
        f"{single} of {len(tiered)} tiered categories have a single defensible #1, "
        f"{len(cats) - len(tiered)} have no tiers (too few blocks or ranked models)."
    )


def _units(sep: pd.DataFrame) -> str:
    """ "macro: categories, micro: tasks, category rows: tasks": the blocks of each kind of row of `sep` (a table
    written before `tier_blocks`: every task)."""
    if "tier_blocks" not in sep.columns:
        return "every task of the regime"
    kind = sep["category"].map(lambda c: c if c in ("macro", "micro") else "category rows")
    units = sep.assign(_k=kind).groupby("_k", sort=False)["tier_blocks"].agg(lambda v: "/".join(sorted(set(v))))
    return ", ".join(f"{k}: {units[k]}" for k in ("macro", "micro", "category rows") if k in units.index)


def tiers_section(
    sep: pd.DataFrame, protocol: str, table_html: Callable[[pd.DataFrame, int, int], str], *, own_finding: bool
) -> list[str]:
    """HTML of the section for `protocol`: a headline per regime (`_headline`) and the rank_separability rows;
    `own_finding` (the published report) adds the OWN_FINDING banner. [] for a table without the protocol's rows."""
    s = sep[sep["protocol"] == protocol] if len(sep) else sep
    if s.empty:
        return []
    order = {r: i for i, r in enumerate(REGIMES)}
    s = s.assign(_o=s["regime"].map(order)).sort_values("_o", kind="stable").drop(columns="_o")
    lines = [h for h in (_headline(s, r) for r in REGIMES) if h]
    method = html.escape(str(s["tier_method"].iloc[0]))
    return [
        "<h2 id='tiers'>Statistically tied tiers</h2>",
        *([f"<p class='warn'>{html.escape(_OWN_FINDING)}</p>"] if own_finding else []),
        f"<p>{method}: per regime and category the models are compared over blocks in the unit the row's score "
        f"weights equally ({_units(s)}); tier 1 = the models the post-hoc test does not separate from the first "
        "(each a defensible #1). A group whose blocks are too few for the test to separate any pair has no tiers. "
        "The tier of every row is in leaderboard.parquet (tier, tier_reason, tier_blocks, tier_note, "
        "friedman_p).</p>",
        '<ul class="headline">' + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>",
        table_html(s[[c for c in _SHOWN if c in s.columns]].reset_index(drop=True), 3, 200),
    ]


#: the caption file of the section and figure (workflow/report/)
ZEROSHOT_CAPTION = "zeroshot.rst"


def zeroshot_section(
    files: Mapping[str, str | Path] | None,
    table: Callable[..., str],
    figure: Callable[[Path, str, str], str],
    caption: str,
) -> list[str]:
    """HTML parts of the "Zero-shot scoring" section, or [] when the run has no zero-shot stage (`files` None).

    files: {key of ZEROSHOT_REPORT_INPUTS: path}; table(df, digits, max_rows) renders a frame; figure(png, name,
    caption) a figure. Raises KeyError naming a missing key (the report rule passes all or none).
    """
    if not files:
        return []
    missing = [k for k in ZEROSHOT_REPORT_INPUTS if k not in files]
    if missing:
        raise KeyError(f"zero-shot report section: inputs {missing} not given")
    board = integrity.read_parquet(files["zeroshot_leaderboard"])
    macro = board[board["task"] == MACRO].sort_values(["rank", "value"], ascending=[True, False], na_position="last")
    per_task = board[board["task"] != MACRO].pivot_table(index=["model", "scorer"], columns="task", values="value")
    # reference rows (Markov baselines, random-init twins) named, and what each model gains over its twin
    shown = ["value", "rank", "reference", "gain_over_twin", "shortcut_flag", "complete", "incomplete_reason"]
    wide = macro.set_index(["model", "scorer"])[[c for c in shown if c in macro.columns]].join(per_task)
    vs = integrity.read_parquet(files["zeroshot_vs_probe"])
    na = integrity.read_parquet(files["zeroshot_not_applicable"])
    return [
        "<h2 id='zeroshot'>Zero-shot scoring</h2>",
        f"<p>{html.escape(caption)}</p>",
        table(wide.reset_index().rename(columns={"value": "macro"}), 3, 200),
        *_zeroshot_shortcut_parts(files, table),
        "<h3>Zero-shot ranking against the probe ranking (Kendall τ-b, bootstrap CI over models)</h3>",
        table(vs.drop(columns=["models"]), 3, 200),
        *(
            [
                "<h3>Not applicable (never scored by a made-up rule)</h3>",
                table(pd.DataFrame(na), 3, 200),
            ]
            if len(na)
            else []
        ),
        figure(Path(files["zeroshot_figure"]), "zeroshot", caption),
    ]


def _zeroshot_shortcut_parts(files: Mapping[str, str | Path], table: Callable[..., str]) -> list[str]:
    """The model-free baselines of the zero-shot tasks (`zeroshot_shortcuts.parquet`, geneb.zeroshot.shortcuts):
    a warning naming each flagged task with its reason, then every baseline's value and interval."""
    shortcuts = integrity.read_parquet(files["zeroshot_shortcuts"])
    flagged = shortcuts[shortcuts["shortcut_flag"] == "fail"].drop_duplicates("task")
    shown = ["task", "baseline", "metric", "value", "ci_low", "ci_high", "n_groups", "resample_unit", "shortcut_flag"]
    return [
        "<h3>Model-free baselines (no model: substitution, codon and window position, CpG, local GC; member "
        "composition of a pair; grouped cross-validated logistic regression)</h3>",
        *(
            f"<p class='warn'>{html.escape(str(r.task))}: {html.escape(str(r.shortcut_reason))}</p>"
            for r in flagged.itertuples()
        ),
        table(shortcuts[shown].reset_index(drop=True), 3, 200),
    ]


#: the keys of the pool record (tables/pool.json) the block reads
_RECORD_KEYS = ("bundles", "rule", "prefer", "rows", "deduplicated", "preferred")


def merged_parts(record: Mapping[str, Any] | None, folder: str | Path) -> dict[str, list[str]]:
    """HTML parts of the report of the merged folder `folder` from its pool record `record` (tables/pool.json):
    {"top": the "Pooled from" block, "cards": the task cards' line, "zeroshot": the zero-shot section's line};
    every list empty when `record` is None (a run's own report). Raises AnalysisInputError naming a key the
    record lacks."""
    if record is None:
        return {"top": [], "cards": [], "zeroshot": []}
    missing = [k for k in _RECORD_KEYS if k not in record]
    if missing:
        raise AnalysisInputError(f"report: the pool record of {folder} has no {missing} (tables/pool.json)")
    name = Path(folder).name or str(folder)
    bundles = pd.DataFrame(
        [{"bundle": b["name"], "sha256": b["sha256"], "score rows": b["rows"]} for b in record["bundles"]]
    )
    prefer = record["prefer"]
    top = [
        "<h2 id='pooled'>Pooled from</h2>",
        f"<p class='warn'>This is the merged results folder {html.escape(name)} (geneb merge, docs/pooling.md): "
        f"{len(bundles)} bundles pooled into {record['rows']} score rows. Rule: {html.escape(str(record['rule']))}; "
        f"{len(record['deduplicated'])} cell(s) held twice with identical rows kept once, "
        f"{len(record['preferred'])} settled by --prefer "
        f"({html.escape(str(prefer)) if prefer else 'none given'}).</p>",
        table_html(bundles, 3, 200),
        "<p class='note'>The workflow configuration below is the config given to geneb merge: its analysis and "
        "leaderboard settings built these tables; its task and model lists are not the bundles' (those are the "
        "score table's).</p>",
    ]
    why = f"not in the merged folder {name}: bundles carry no {{}}; see each run's own report"
    return {
        "top": top,
        "cards": [
            not_applicable(
                "Task cards",
                why.format("task cards, so which tasks were capped subsamples is not stated here"),
                "task-cards",
            )
        ],
        "zeroshot": [not_applicable("Zero-shot scoring", why.format("zero-shot tables"), "zeroshot")],
    }
