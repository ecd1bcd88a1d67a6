"""`geneb leaderboard`, `geneb recommend` (with `--model ID`: where one model stands) and
`geneb compare-cells`: read the finished tables of a run.

`geneb leaderboard --model ID` and `geneb recommend --model ID`: where one model stands, per category and regime
(rank out of the ranked models, MCC with its CI where the table has one, distance to the best, tier where the
table has a `tier` column), and the answer of `recommend` on a run with a single model.

Reads the same tables as the plain commands: the leaderboard (`tables/leaderboard.parquet`, or the comparison's
`compare_published.parquet`, which carries CIs and rank intervals), and beside it, where present, the
recommendations (role best / tied, with the CI of those models) and the rank intervals (bootstrap over tasks).

`geneb leaderboard` and `geneb recommend`: read the finished tables of a run.

`geneb compare-cells`: a paired test between two cells of one task, read from the kept per-item predictions.

A cell is (model, view, protocol, regime) of a task; the two cells are written `key=value,...` (keys: model,
view, protocol, regime). Cell b takes every key it does not name from cell a, so `--a model=X --b model=Y`
compares two models on the same view, protocol and regime, and `--a model=X,view=V1 --b view=V2` two views of
one model. Defaults: regime full; protocol the only one under the predictions folder; view the file's only one.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from geneb.analysis.ranking import EXCLUDE_FLAGGED_ATTR, TASK_FLAGS_ATTR, attach_rank_intervals
from geneb.analysis.stats import compare_cells, read_cell
from geneb.cli.common import CliError, category_name, existing_file, protocol_rows, short_error
from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.tables.freshness import stale_warning
from geneb.tables.scores import COVERAGE_NOTES_ATTR, FAILED_CELLS_ATTR, MISSING_CELL_RULE_ATTR, REGIMES

#: the order categories are printed in (the 13 categories, then the aggregates)
_CATEGORY_ORDER = {c: i for i, c in enumerate((*CATEGORIES, "macro", "micro"))}
#: the regimes in print order
_REGIME_ORDER = {"full": 0, "10shot": 1, "1shot": 2}


def _check_model(table: pd.DataFrame, model: str, path: str) -> None:
    """Raise CliError when `model` has no row in `table` (read from `path`), naming the closest model ids
    (`difflib.get_close_matches`, cutoff 0.5) or, with none close, how many models the table has."""
    have = sorted(table["model"].dropna().astype(str).unique())
    if model in have:
        return
    close = difflib.get_close_matches(model, have, n=5, cutoff=0.5)
    hint = (
        f"did you mean: {', '.join(close)}?" if close else f"the table has {len(have)} models: {', '.join(have[:12])}"
    )
    raise CliError(f"model {model!r} is not in {path}; {hint}")


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    key = df["regime"].map(_REGIME_ORDER).fillna(9) * 100 + df["category"].map(_CATEGORY_ORDER).fillna(99)
    return df.assign(_o=key.to_numpy()).sort_values("_o").drop(columns="_o")


def _model_board(
    board: pd.DataFrame, model: str, regime: str | None, intervals: pd.DataFrame | None = None
) -> pd.DataFrame:
    """`model`'s rows of a one-protocol leaderboard, every category (and macro / micro) of `regime` (every regime
    when None): regime, category, value, ci_low / ci_high (where the table has them), rank, of (the number of
    ranked models there), rank_low / rank_high (the table's, else those of `intervals`, the run's rank-interval
    table, where it ranks the model over the same models: `ranking.attach_rank_intervals`), tier (where present),
    n_tasks, complete, incomplete_reason."""
    if regime is not None:
        board = board[board["regime"] == regime]
    mine = attach_rank_intervals(board, intervals)
    mine = mine[mine["model"] == model]
    cols = ["regime", "category", "value", "ci_low", "ci_high", "rank", "of", "rank_low", "rank_high", "tier"]
    cols += ["n_tasks", "complete", "incomplete_reason"]
    out = _ordered(mine)[[c for c in cols if c in mine.columns]]
    return out.drop(columns=[c for c in ("incomplete_reason",) if c in out.columns and not out[c].fillna("").any()])


#: columns that hold counts or ranks: printed as integers, "-" where missing (a float column with a missing value
#: would print 1.0000)
_INTEGER_COLUMNS = ("rank", "of", "rank_low", "rank_high", "tier", "n_tasks", "n_tasks_expected", "borda_rank")


def _integers_as_integers(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each numeric column of _INTEGER_COLUMNS whose values are whole numbers written as integers,
    "-" where missing (text, for printing)."""
    out = frame.copy()
    for col in _INTEGER_COLUMNS:
        if col in out.columns and pd.api.types.is_numeric_dtype(out[col]):
            values = pd.to_numeric(out[col]).astype(float)
            if (values.dropna() == values.dropna().round()).all():
                out[col] = ["-" if pd.isna(v) else str(int(round(v))) for v in values]
    return out


def _format_board(rows: pd.DataFrame, model: str, protocol: str) -> str:
    """The text `geneb leaderboard --model` prints for `_model_board`'s rows."""
    shown = rows.copy()
    shown["rank"] = [
        f"{int(r)} of {int(n)}" if pd.notna(r) else f"- of {int(n)}" for r, n in zip(shown["rank"], shown.pop("of"))
    ]
    shown = _integers_as_integers(shown)  # rank_low, rank_high, tier, n_tasks
    head = f"{model} ({protocol}): MCC per category and regime; rank among the ranked models"
    return head + "\n" + shown.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-")


def _beside(path: str, name: str) -> pd.DataFrame | None:
    p = Path(path).with_name(name)
    if not p.exists():
        return None
    df = integrity.read_parquet(p)
    return df if len(df) else None


def _standing(
    board: pd.DataFrame, recs: pd.DataFrame | None, intervals: pd.DataFrame | None, model: str
) -> pd.DataFrame:
    """Where `model` stands in each (regime, category) of a one-protocol leaderboard `board`: regime, category,
    rank, of, value, ci_low, ci_high (the table's own CI, else the rank-interval table's value interval, else the
    recommendation table's for a best or tied model, else missing), best (the best model's id), to_best (best value
    minus this value, 0 for the best), role (best / tied / "-": `recommendations`; "only model" where it is the
    single ranked model), rank_low / rank_high (the table's, else the rank-interval table's where it ranks the model
    over the same models: `ranking.attach_rank_intervals`), tier where the board has it."""
    b = _model_board(board, model, None, intervals)
    ranked = board[board["rank"].notna()].sort_values(["rank", "model"])
    top = ranked.drop_duplicates(["regime", "category"]).set_index(["regime", "category"])
    rows = []
    for r in b.to_dict("records"):
        key = (r["regime"], r["category"])
        out = {k: r.get(k) for k in ("regime", "category", "rank", "of", "value", "ci_low", "ci_high")}
        best = top.loc[key] if key in top.index else None
        out["best"] = best["model"] if best is not None else None
        out["to_best"] = float(best["value"] - r["value"]) if best is not None and pd.notna(r["value"]) else None
        role = "-"
        if recs is not None:
            hit = recs[(recs["model"] == model) & (recs["regime"] == key[0]) & (recs["category"] == key[1])]
            if len(hit):
                role = str(hit["role"].iloc[0])
                if pd.isna(out.get("ci_low")):
                    out["ci_low"], out["ci_high"] = hit["ci_low"].iloc[0], hit["ci_high"].iloc[0]
        if r["of"] == 1 and pd.notna(r["rank"]):
            role = "only model"
        out["role"] = role
        for c in ("rank_low", "rank_high"):
            out[c] = r.get(c)
        if "tier" in b.columns:
            out["tier"] = r.get("tier")
        rows.append(out)
    return pd.DataFrame(rows)


def _format_standing(st: pd.DataFrame, model: str, protocol: str, ci_label: str | None) -> str:
    """The text `geneb recommend --model` prints: one line per (regime, category) of `_standing`."""
    lines = [f"{model} ({protocol}): where it stands, per regime and category"]
    for r in st.to_dict("records"):
        if pd.isna(r["rank"]):
            lines.append(f"{r['regime']} {r['category']}: not ranked (MCC {_num(r['value'])})")
            continue
        ci = (
            f"{ci_label or 'CI'} {r['ci_low']:.4f}-{r['ci_high']:.4f}"
            if pd.notna(r.get("ci_low")) and pd.notna(r.get("ci_high"))
            else "no CI recorded for this model"
        )
        text = f"{r['regime']} {r['category']}: rank {int(r['rank'])} of {r['of']}"
        if pd.notna(r.get("rank_low")) and pd.notna(r.get("rank_high")):
            text += f" (rank interval {int(r['rank_low'])}-{int(r['rank_high'])})"
        text += f", MCC {_num(r['value'])} ({ci})"
        if r["role"] == "only model":
            text += ": the only ranked model, so the best by default (nothing to compare with)"
        elif r["best"] == model:
            text += ": the best"
        elif int(r["rank"]) == 1:
            text += f": tied for rank 1 with {r['best']} (the same MCC)"
        else:
            text += f", {_num(r['to_best'])} below the best ({r['best']})"
        if r["role"] == "tied":
            text += "; indistinguishable from the best by the tie rule"
        if "tier" in r and pd.notna(r.get("tier")):
            text += f"; tier {r['tier']}"
        lines.append(text)
    return "\n".join(lines)


def _num(v: Any) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{float(v):.4f}"


def _single_model_answer(board: pd.DataFrame, category: str, regime: str) -> str | None:
    """The answer of `geneb recommend` where a one-protocol leaderboard ranks a single model in (`category`,
    `regime`): that model is the best by default; None when it ranks more or none."""
    b = board[(board["regime"] == regime) & (board["category"] == category) & board["rank"].notna()]
    if b["model"].nunique() != 1:
        return None
    r = b.iloc[0]
    return (
        f"{category}, {regime}: {r['model']} (MCC {r['value']:.4f}): the only ranked model of this run, so the "
        "best by default; nothing to compare it with (run more models, or compare with the paper's: "
        "snakemake compare_published)"
    )


def _beside_tables(path: str) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """The leaderboard, recommendations and rank-interval tables in the folder of `path` (None for one absent or
    empty)."""
    return tuple(_beside(path, f"{n}.parquet") for n in ("leaderboard", "recommendations", "rank_intervals"))  # type: ignore[return-value]


#: the columns each table-reading command needs, and the table it expects
_TABLES = {
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
_DEFAULT_TABLES = {"leaderboard": "tables/leaderboard.parquet", "recommendation": "tables/recommendations.parquet"}


def _table_path(args: argparse.Namespace, what: str) -> str:
    """The table a command reads: --table, else DEFAULT_TABLES[what] under --results-dir."""
    return args.table or f"{(args.results_dir or 'results').rstrip('/')}/{_DEFAULT_TABLES[what]}"


def _read(path: str, what: str, *, allow_empty: bool = False) -> pd.DataFrame:
    """The `what` table ("leaderboard" or "recommendation") at `path`; CliError when it is missing, not
    parquet, empty (unless `allow_empty`), or lacks the columns the command needs."""
    cols, expected = _TABLES[what]
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
    args.table = _table_path(args, what)
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
        args.table = str(Path(_table_path(args, "leaderboard")).with_name("leaderboard_clean.parquet"))
    if args.model:
        args.table = _table_path(args, "leaderboard")
        every = _read(args.table, "leaderboard")
        board = protocol_rows(every, args.protocol)
        _check_model(board, args.model, args.table)
        protocol = str(board["protocol"].iloc[0])
        others = sorted(set(every.loc[every["model"] == args.model, "protocol"].dropna().astype(str)) - {protocol})
        rows = _model_board(board, args.model, args.regime, _beside_tables(args.table)[2])
        if args.category:  # ranks stay out of every ranked model of that category, not of the rows shown
            rows = rows[rows["category"] == category_name(args.category)]
            if rows.empty:
                raise CliError(f"model {args.model!r} has no row for category {args.category!r} in {args.table}")
        text = _format_board(rows, args.model, protocol)
        if others:  # the table holds the model under more protocols than the one shown
            text += f"\n{args.model} is also scored under {', '.join(others)}: --protocol NAME shows those rows"
        return text
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
    out = f"{cat}, {args.regime} ({b['protocol'].iloc[0]}): MCC{subset}\n" + _integers_as_integers(b[cols]).to_string(
        index=False, float_format=lambda v: f"{v:.4f}", na_rep="-"
    )
    if tiered:
        t = b[b["tier"].notna()].iloc[0]
        out += _tier_line(t)
        notes = b[b["tier_note"].fillna("") != ""] if "tier_note" in b.columns else b.iloc[:0]
        out += "".join(f"\ntier note: {r.model}: {r.tier_note}" for r in notes.itertuples())
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


def _tier_line(t: pd.Series) -> str:
    """The line under a tiered board saying what a tier is: the test, its confidence, the critical difference
    (nemenyi) and the blocks (`tier_n_blocks` `tier_blocks`; a table written before them: its tasks)."""
    if "tier_n_blocks" in t.index and pd.notna(t["tier_n_blocks"]):
        blocks = f"{int(t['tier_n_blocks'])} {t['tier_blocks']}"
    else:
        blocks = f"{int(t['tier_n_tasks'])} tasks"
    cd = f"critical difference {t['tier_cd']:.2f} mean ranks, " if pd.notna(t["tier_cd"]) else ""
    return (
        f"\ntier 1 = not distinguishable from the best (Friedman p {t['friedman_p']:.3g}, {t['tier_method']}, "
        f"confidence {t['tier_confidence']:g}, {cd}over {blocks})"
    )


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
    """`geneb recommend --model`: the model's standing per regime and category (`_standing`)."""
    path = _table_path(args, "recommendation")
    table = _read(path, "recommendation", allow_empty=True)
    board, recs, intervals = _beside_tables(path)
    if {"rank", "complete"} <= set(table.columns) and len(table):  # the comparison table: board, CIs, roles in one
        board, recs = table, table
    elif len(table):
        recs = table
    if board is None:
        raise CliError(f"no leaderboard.parquet beside {path}: `recommend --model` needs the run's leaderboard")
    board = protocol_rows(board, args.protocol)
    _check_model(board, args.model, str(Path(path).with_name("leaderboard.parquet")))
    protocol = board["protocol"].iloc[0]
    recs = None if recs is None else recs[recs["protocol"] == protocol]
    intervals = None if intervals is None else intervals[intervals["protocol"] == protocol]
    st = _standing(board, recs, intervals, args.model)
    if args.regime:
        st = st[st["regime"] == args.regime]
    if args.category:
        st = st[st["category"] == category_name(args.category)]
    if st.empty:
        raise CliError(f"model {args.model!r} has no row for the regime / category asked in {path}")
    return _format_standing(st, args.model, protocol, _ci_label(path, table) if len(table) else None)


def cmd_recommend(args: argparse.Namespace) -> str:
    """The best model of a category (and those the tie rule cannot tell apart from it); with --model, where that
    model stands in every category; on a run whose leaderboard ranks one model, that model, best by default."""
    if args.model:
        return _recommend_model(args)
    if not args.category:
        raise CliError("recommend needs --category (or --model, for where one model stands in every category)")
    args.regime = args.regime or "full"
    path = _table_path(args, "recommendation")
    if _read(path, "recommendation", allow_empty=True).empty:
        board = _beside_tables(path)[0]
        answer = None
        if board is not None:
            answer = _single_model_answer(
                protocol_rows(board, args.protocol), category_name(args.category), args.regime
            )
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


#: the keys a cell may name
_CELL_KEYS = ("model", "view", "protocol", "regime")


def _parse_cell(text: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """{key: value} of a cell written "model=X,view=V,...", over `base` (cell a, for cell b). Raises CliError for
    an unknown key, an entry without "=", or a repeated key."""
    out = dict(base or {})
    seen = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise CliError(f"cell entry {part!r} is not key=value (keys: {', '.join(_CELL_KEYS)})")
        if key not in _CELL_KEYS:
            raise CliError(f"unknown cell key {key!r}; use {', '.join(_CELL_KEYS)}")
        if key in seen:
            raise CliError(f"cell key {key!r} given twice in {text!r}")
        seen.add(key)
        out[key] = value
    return out


def _complete(cell: dict[str, str], root: Path, side: str) -> dict[str, str]:
    """Fill the defaults (regime full, the only protocol) and check what the cell names."""
    cell = {"regime": "full", **cell}
    if "model" not in cell:
        raise CliError(f"cell {side} names no model (model=...)")
    if cell["regime"] not in REGIMES:
        raise CliError(f"cell {side}: regime {cell['regime']!r} is not one of {', '.join(REGIMES)}")
    if "protocol" not in cell:
        have = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        if len(have) != 1:
            raise CliError(f"{root} holds the protocols {have}; name one (protocol=...)")
        cell["protocol"] = have[0]
    return cell


def _label(cell: dict[str, str], view: str) -> str:
    return f"model={cell['model']} view={view} protocol={cell['protocol']} regime={cell['regime']}"


def cmd_compare_cells(args: argparse.Namespace) -> str:
    """The report of `compare_cells` for the two cells of `args` (module docstring)."""
    root = Path(args.predictions)
    if not root.is_dir():
        raise CliError(f"predictions folder {root} not found; run the probes first, or pass --predictions")
    a = _complete(_parse_cell(args.a), root, "a")
    b = _complete(_parse_cell(args.b, _parse_cell(args.a)), root, "b")
    if a == b:
        raise CliError("cells a and b are the same cell; change at least one of model, view, protocol, regime")
    frames, views = [], []
    for cell in (a, b):
        frame = read_cell(
            root,
            task=args.task,
            view=cell.get("view"),
            protocol=cell["protocol"],
            model=cell["model"],
            regime=cell["regime"],
        )
        frames.append(frame)
        views.append(str(frame["view"].iloc[0]) if "view" in frame.columns else "default")
    r = compare_cells(*frames, task=args.task, n_resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    level = f"{args.confidence * 100:g}%"
    lines = [
        f"task {args.task}: {r['n_rows']} test items",
        f"a: {_label(a, views[0])}: MCC {r['mcc_a']:.4f} ({r['n_seeds_a']} seed(s))",
        f"b: {_label(b, views[1])}: MCC {r['mcc_b']:.4f} ({r['n_seeds_b']} seed(s))",
        f"MCC(a) - MCC(b) = {r['difference']:+.4f}, {level} CI [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}], "
        f"bootstrap p = {r['p_bootstrap']:.3g} (paired bootstrap over test items, {r['n_resamples']} resamples, seed {r['seed']})",
    ]
    if r["mcnemar_note"]:
        lines.append(f"McNemar: not applicable ({r['mcnemar_note']})")
    else:
        lines.append(
            f"McNemar (exact binomial): a right where b wrong {r['a_only_correct']}, b right where a wrong "
            f"{r['b_only_correct']}, p = {r['p_mcnemar']:.3g}"
        )
    return "\n".join(lines)
