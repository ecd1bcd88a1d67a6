"""`geneb leaderboard` and `geneb recommend`: read the finished tables of a run."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from geneb.analysis.ranking.leaderboard import EXCLUDE_FLAGGED_ATTR, TASK_FLAGS_ATTR
from geneb.cli.common import CliError, category_name, existing_file, protocol_rows, short_error
from geneb.cli.standing import (
    beside_tables,
    check_model,
    format_board,
    format_standing,
    model_board,
    single_model_answer,
    standing,
)
from geneb.core import integrity
from geneb.tables.freshness import stale_warning
from geneb.tables.scores import COVERAGE_NOTES_ATTR, FAILED_CELLS_ATTR, MISSING_CELL_RULE_ATTR

#: the columns each table-reading command needs, and the table it expects
TABLES = {
    "leaderboard": (
        ("protocol", "regime", "category", "model", "value", "rank", "n_tasks", "borda_rank", "complete"),
        "<results_dir>/tables/leaderboard.parquet (or compare_published.parquet)",
    ),
    "recommendation": (
        ("protocol", "regime", "category", "model", "role", "value", "ci_low", "ci_high", "tie_rule"),
        "<results_dir>/tables/recommendations.parquet (or compare_published.parquet)",
    ),
}
#: the table each command reads by default, under --results-dir (a config's `results_dir`, default results)
DEFAULT_TABLES = {"leaderboard": "tables/leaderboard.parquet", "recommendation": "tables/recommendations.parquet"}


def table_path(args: argparse.Namespace, what: str) -> str:
    """The table a command reads: --table, else DEFAULT_TABLES[what] under --results-dir."""
    return args.table or f"{(args.results_dir or 'results').rstrip('/')}/{DEFAULT_TABLES[what]}"


def _read(path: str, what: str, *, allow_empty: bool = False) -> pd.DataFrame:
    """The `what` table ("leaderboard" or "recommendation") at `path`; CliError when it is missing, not
    parquet, empty (unless `allow_empty`), or lacks the columns the command needs."""
    cols, expected = TABLES[what]
    p = existing_file(path, f"{what} table", "; run `snakemake leaderboard` (or the analyses) first, or pass --table")
    try:
        df = integrity.read_parquet(p)
    except (OSError, ValueError, pa.ArrowException) as err:
        why = "not a parquet file, or a corrupt one" if isinstance(err, pa.ArrowInvalid) else short_error(err)
        raise CliError(f"{p} cannot be read as a table ({why}); expected {expected}") from err
    if df.empty and allow_empty:
        return df
    if df.empty:
        raise CliError(f"{what} table {p} has no rows")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise CliError(f"{p} is not a {what} table (it lacks the columns {', '.join(missing)}); expected {expected}")
    warning = stale_warning(p)
    if warning:
        print(f"geneb: warning: {warning}", file=sys.stderr)
    return df


def _ci_label(path: str, table: pd.DataFrame) -> str | None:
    """ "95% CI" etc.: the confidence level of the analysis that wrote the table, from the
    analysis_summary.json beside it when its settings_hash is the table's; None when not known."""
    if "confidence" in table.columns and table["confidence"].notna().any():  # the comparison table states its own
        conf = float(table["confidence"].dropna().iloc[0])
        return f"{conf * 100:g}% CI" if 0 < conf < 1 else None
    try:
        summary = json.loads(Path(path).with_name("analysis_summary.json").read_text())
        hashes = set(table["settings_hash"].dropna().astype(str))
        conf = float(summary["settings"]["confidence"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if hashes != {summary.get("settings_hash")} or not 0 < conf < 1:
        return None
    return f"{conf * 100:g}% CI"


def _rows(args: argparse.Namespace, what: str) -> tuple[pd.DataFrame, str]:
    """The rows of `args.table` for args.protocol/regime/category, and the category's official spelling."""
    args.table = table_path(args, what)
    table = protocol_rows(_read(args.table, what), args.protocol)
    cat = category_name(args.category)
    rows = table[(table["regime"] == args.regime) & (table["category"] == cat)]
    if rows.empty:
        have = sorted(table.loc[table["regime"] == args.regime, "category"].dropna().astype(str).unique())
        raise CliError(
            f"no {what} rows for category {cat!r}, regime {args.regime!r}"
            + (f" (the table has: {', '.join(have)})" if have else "")
        )
    return rows, cat


def cmd_leaderboard(args: argparse.Namespace) -> str:
    """The leaderboard rows of one category and regime, with the margin over the best shortcut model where the
    table has it, the audit flags of the tasks each row is made of (`flags`; each flagged task with its reason
    below the table), the tasks left out of the ranking (config `leaderboard.exclude_flagged`), every unranked
    row with why (`incomplete_reason`: a failed or missing task), the failed (model, task) cells and the rule for
    a missing cell. --clean: the table of the same run on the test rows without a training homolog
    (`leaderboard_clean.parquet` beside `--table`)."""
    if getattr(args, "clean", False):
        args.table = str(Path(table_path(args, "leaderboard")).with_name("leaderboard_clean.parquet"))
    if args.model:
        args.table = table_path(args, "leaderboard")
        board = protocol_rows(_read(args.table, "leaderboard"), args.protocol)
        check_model(board, args.model, args.table)
        rows = model_board(board, args.model, args.regime, beside_tables(args.table)[2])
        if args.category:  # ranks stay out of every ranked model of that category, not of the rows shown
            rows = rows[rows["category"] == category_name(args.category)]
            if rows.empty:
                raise CliError(f"model {args.model!r} has no row for category {args.category!r} in {args.table}")
        return format_board(rows, args.model, board["protocol"].iloc[0])
    args.regime = args.regime or "full"
    args.category = args.category or "macro"
    b, cat = _rows(args, "leaderboard")
    attrs: dict[str, Any] = {str(k): v for k, v in integrity.read_parquet(args.table).attrs.items()}
    every = b
    b = b.sort_values(["rank", "model"], na_position="last").head(args.top)
    cols = ["rank", "model", "value", "n_tasks", "borda_rank", "complete"]
    cols += ["shortcut_margin"] if "shortcut_margin" in b.columns and b["shortcut_margin"].notna().any() else []
    cols += ["flags"] if "flags" in b.columns and (b["flags"].fillna("") != "").any() else []
    # the comparison table (compare_published.parquet) carries CIs and rank intervals: show them
    cols += [c for c in ("ci_low", "ci_high", "rank_low", "rank_high", "origin") if c in b.columns]
    # statistically tied tiers (Friedman + Nemenyi over tasks) where the table has them
    tiered = "tier" in b.columns and b["tier"].notna().any()
    cols += ["tier"] if tiered else []
    subset = " on the test rows without a training homolog" if getattr(args, "clean", False) else ""
    out = f"{cat}, {args.regime} ({b['protocol'].iloc[0]}): MCC{subset}\n" + b[cols].to_string(
        index=False, float_format=lambda v: f"{v:.4f}", na_rep="-"
    )
    if tiered:
        t = b[b["tier"].notna()].iloc[0]
        out += (
            f"\ntier 1 = not distinguishable from the best (Friedman p {t['friedman_p']:.3g}, {t['tier_method']}, "
            f"confidence {t['tier_confidence']:g}, critical difference {t['tier_cd']:.2f} mean ranks over "
            f"{int(t['tier_n_tasks'])} tasks)"
        )
    elif "tier_reason" in b.columns and (b["tier_reason"].fillna("") != "").any():
        out += f"\nno tiers: {b['tier_reason'].dropna().iloc[0]}"
    out += _marks(every, attrs)
    failed = attrs.get(FAILED_CELLS_ATTR) or {}
    for model, tasks in sorted(failed.items()):
        for task, rec in sorted(tasks.items()):
            out += f"\nfailed cell: {model} on {task}: {rec.get('error', '')}"
    if attrs.get(MISSING_CELL_RULE_ATTR):
        out += f"\nmissing cells: {attrs[MISSING_CELL_RULE_ATTR]}"
    notes = attrs.get(COVERAGE_NOTES_ATTR) or {}
    skipped = notes.get(str(b["protocol"].iloc[0]), {}) if isinstance(notes, dict) else {}
    out += "".join(f"\nnot covered: {m}: {r}" for m, r in sorted(skipped.items()))
    return out


def _marks(rows: pd.DataFrame, attrs: dict[str, Any]) -> str:
    """The lines under a leaderboard: each unranked row and why, each flagged task feeding the rows with its
    reason, and the tasks the ranking leaves out (none of these for a table written before they existed)."""
    out = ""
    if "incomplete_reason" in rows.columns:
        unranked = rows[rows["rank"].isna()].sort_values("model")
        for r in unranked.itertuples():
            why = str(r.incomplete_reason or "") or "incomplete"
            out += f"\nnot ranked: {r.model}: {why}"
    flags = attrs.get(TASK_FLAGS_ATTR) or {}
    if "flagged_tasks" in rows.columns and isinstance(flags, dict):
        shown = sorted({t for v in rows["flagged_tasks"].fillna("") for t in str(v).split(",") if t})
        for task in shown:
            kinds = flags.get(task) or {}
            out += f"\nflagged task: {task}: " + "; ".join(f"{k}: {why}" for k, why in sorted(kinds.items()))
    excluded = sorted(
        {t for v in rows.get("excluded_tasks", pd.Series(dtype=str)).fillna("") for t in str(v).split(",") if t}
    )
    if excluded or attrs.get(EXCLUDE_FLAGGED_ATTR):
        kinds = ", ".join(map(str, attrs.get(EXCLUDE_FLAGGED_ATTR) or [])) or "?"
        out += f"\nranked without the tasks flagged {kinds} (config leaderboard.exclude_flagged): " + (
            ", ".join(excluded) or "none of this category's tasks"
        )
    return out


def _recommend_model(args: argparse.Namespace) -> str:
    """`geneb recommend --model`: the model's standing per regime and category (`standing`)."""
    path = table_path(args, "recommendation")
    table = _read(path, "recommendation", allow_empty=True)
    board, recs, intervals = beside_tables(path)
    if "rank" in table.columns and len(table):  # the comparison table: ranks, CIs and roles in one
        board, recs = table, table
    elif len(table):
        recs = table
    if board is None:
        raise CliError(f"no leaderboard.parquet beside {path}: `recommend --model` needs the run's leaderboard")
    board = protocol_rows(board, args.protocol)
    check_model(board, args.model, str(Path(path).with_name("leaderboard.parquet")))
    protocol = board["protocol"].iloc[0]
    recs = None if recs is None else recs[recs["protocol"] == protocol]
    intervals = None if intervals is None else intervals[intervals["protocol"] == protocol]
    st = standing(board, recs, intervals, args.model)
    if args.regime:
        st = st[st["regime"] == args.regime]
    if args.category:
        st = st[st["category"] == category_name(args.category)]
    if st.empty:
        raise CliError(f"model {args.model!r} has no row for the regime / category asked in {path}")
    return format_standing(st, args.model, protocol, _ci_label(path, table) if len(table) else None)


def cmd_recommend(args: argparse.Namespace) -> str:
    """The best model of a category (and those the tie rule cannot tell apart from it); with --model, where that
    model stands in every category; on a run whose leaderboard ranks one model, that model, best by default."""
    if args.model:
        return _recommend_model(args)
    if not args.category:
        raise CliError("recommend needs --category (or --model, for where one model stands in every category)")
    args.regime = args.regime or "full"
    path = table_path(args, "recommendation")
    if _read(path, "recommendation", allow_empty=True).empty:
        board = beside_tables(path)[0]
        answer = None
        if board is not None:
            answer = single_model_answer(protocol_rows(board, args.protocol), category_name(args.category), args.regime)
        if answer is None:
            raise CliError(f"recommendation table {path} has no rows")
        return answer
    r, cat = _rows(args, "recommendation")
    best = r[r["role"] == "best"]
    if best.empty:
        raise CliError(f"{args.table}: no 'best' row for category {cat!r}, regime {args.regime!r}")
    label = _ci_label(args.table, r)

    def ci(lo: float, hi: float) -> str:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "no CI"
        return f"{label or 'CI'} {lo:.4f}-{hi:.4f}"

    b = best.iloc[0]
    lines = [f"{cat}, {args.regime}: {b['model']} (MCC {b['value']:.4f}, {ci(b['ci_low'], b['ci_high'])})"]
    tied = r[r["role"] == "tied"]
    if len(tied):
        lines.append(f"indistinguishable by the {r['tie_rule'].iloc[0]} rule:")
        lines += [f"  {t.model} (MCC {t.value:.4f}, {ci(t.ci_low, t.ci_high)})" for t in tied.itertuples()]
    if label is None:
        lines.append("(confidence level unknown: no analysis_summary.json with the table's settings_hash beside it)")
    return "\n".join(lines)
