"""Leaderboards: per task, per category (mean MCC over the category's tasks), macro (mean over categories),
micro (mean over tasks), each with a rank and a Borda rank, for every (protocol, regime).

Aggregation follows the paper (`benchmark_spec.json`, README "Aggregates"): category score = mean of the
category's task scores; macro = mean of the category scores; micro = mean over tasks; the leaderboard ranks
by macro. A model that lacks a task another model has in that (protocol, regime) is *incomplete*: its category
value is the mean over the tasks it has (shown, but not ranked: `rank` is NA on every row where `complete` is
false, so a model cannot win a category on the one task it has), and its macro and micro are NaN. A configured
task missing for every model (a partial run's failed task; in the clean leaderboard, a task without clean test
rows) counts the same way: its category is listed for every model, unranked, with `incomplete_reason` saying which
task is missing and why, and no macro or micro row is complete or ranked. A task failing the leakage or shortcut
audit (`geneb.analysis.controls.task_audit.audit_flags`) is named on every row it feeds (`flagged_tasks`, `flags`), and
`exclude_flagged` ranks without such tasks (`excluded_tasks`).

Borda rank as MTEB computes it (`mteb/benchmarks/_create_table.py`, `_get_borda_rank`): each task gives every
model `n - rank` votes (n = number of models; rank 1 = best, ties share the average rank; a model without the
task gets 0 votes from it); models are ranked by their summed votes, ties sharing the lowest rank ("min").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from geneb import __version__
from geneb.analysis.inputs.tables import frame_sha256
from geneb.core.categories import CATEGORIES
from geneb.tables.scores import AnalysisInputError, with_code_revision

#: the leaderboard table's version (2: the code-revision columns `geneb_commit`, `geneb_dirty` were added; 3: the
#: margin over the best shortcut model, `shortcut_margin`; 4: every category of a configured task is listed, also
#: when none of its tasks completed, with `incomplete_reason`, and the audit columns `flagged_tasks`, `flags`,
#: `excluded_tasks`; 5: the statistically tied tiers, `geneb.analysis.ranking.tiers.TIER_COLUMNS`)
SCHEMA_VERSION = "5"
AGGREGATES = ("macro", "micro")
#: the kinds of audit flag a task can carry (`geneb.analysis.controls.task_audit.audit_flags`; config
#: `leaderboard.exclude_flagged`)
FLAG_KINDS: tuple[str, ...] = ("leakage", "shortcut")
#: the comma-joined list columns of every leaderboard row ("" = none)
LIST_COLUMNS: tuple[str, ...] = ("flagged_tasks", "flags", "excluded_tasks")
#: the parquet metadata key (pandas `attrs`) of leaderboard.parquet / leaderboard_clean.parquet holding the audit
#: flags {task: {kind: reason}} and the one holding the excluded kinds (config `leaderboard.exclude_flagged`)
TASK_FLAGS_ATTR = "geneb_task_flags"
EXCLUDE_FLAGGED_ATTR = "geneb_exclude_flagged"
#: how many missing tasks an `incomplete_reason` names
MAX_NAMED = 5
#: {task: {kind: reason}}
TaskFlags = Mapping[str, Mapping[str, str]]
#: {model: {task: reason}}
CellReasons = Mapping[str, Mapping[str, str]]


def borda_rank(matrix: pd.DataFrame) -> pd.Series:
    """MTEB's Borda rank of the models (rows) over the tasks (columns) of `matrix`.

    matrix: (n_models, n_tasks) scores, higher is better, NaN = not evaluated. Returns an int Series
    (n_models,) of ranks, 1 = best. Raises AnalysisInputError for an empty matrix.
    """
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise AnalysisInputError("Borda rank needs at least one model and one task")
    n = matrix.shape[0]
    votes = np.zeros(n)
    for col in matrix.columns:
        x = matrix[col].to_numpy(dtype=float)
        ok = np.isfinite(x)
        if not ok.any():
            continue
        ranks = np.full(n, np.nan)
        ranks[ok] = stats.rankdata(-x[ok], method="average")
        votes += np.where(ok, n - ranks, 0.0)
    rank = stats.rankdata(-votes, method="min").astype(int)
    return pd.Series(rank, index=matrix.index, name="borda_rank")


def rank_desc(values: pd.Series) -> pd.Series:
    """Rank 1 = highest; ties share the lowest rank; NaN stays unranked (pandas Int64 NA)."""
    return values.rank(method="min", ascending=False).astype("Int64")


def _join(items: Iterable[str]) -> str:
    """Sorted, comma-joined ids ("" for none): the list columns of the leaderboard (task ids hold no comma)."""
    return ",".join(sorted(set(items)))


def _why_missing(task: str, model: str, missing_reasons: Mapping[str, str], cell_reasons: CellReasons) -> str:
    """Why `model` has no score for `task`: the task's failure, the cell's failure, else not scored."""
    if task in missing_reasons:
        return f"{task}: {missing_reasons[task]}"
    if task in cell_reasons.get(model, {}):
        return f"{task}: failed for this model ({cell_reasons[model][task]})"
    return f"{task}: no score for this model (not run, or left out as contaminated: contamination.parquet)"


def _reason(lacks: list[str], n_expected: int, scope: str) -> str:
    """The `incomplete_reason` of a row: which of its `n_expected` tasks it lacks and why (at most 5 named)."""
    if not lacks:
        return ""
    head = "; ".join(lacks[:MAX_NAMED]) + (f"; and {len(lacks) - MAX_NAMED} more" if len(lacks) > MAX_NAMED else "")
    if scope != "aggregate" and len(lacks) == n_expected:
        return f"no task of this category completed: {head}"
    return f"missing {len(lacks)} of {n_expected} task(s): {head}"


def category_scores(
    cells: pd.DataFrame,
    missing: Mapping[str, str] | None = None,
    *,
    missing_reasons: Mapping[str, str] | None = None,
    cell_reasons: CellReasons | None = None,
    flags: TaskFlags | None = None,
    exclude_flagged: Sequence[str] = (),
) -> pd.DataFrame:
    """Per (protocol, regime, model, category): mean cell value over the category's tasks.

    cells: per-cell table (`tables.cell_scores`). missing: {task: category} of configured tasks that failed
    (a partial run, geneb.run.partial) or have no value in this table (the clean leaderboard's tasks without clean
    test rows): each counts as expected and missing for every model, so its category is listed, also when no task
    of it completed (value NaN, not ranked). missing_reasons: {task: why} for those tasks; cell_reasons:
    {model: {task: why}} of failed (model, task) cells; flags: {task: {kind: why}} of tasks failing an audit
    (`geneb.analysis.controls.task_audit.audit_flags`); exclude_flagged: the kinds (FLAG_KINDS) whose flagged tasks are
    left out of every value and rank. Returns columns protocol, regime, model, category, value, n_tasks (tasks the
    model has), n_tasks_expected (tasks of the category any model has in that protocol and regime, plus the
    missing ones, less the excluded ones), complete (n_tasks == n_tasks_expected > 0), incomplete_reason ("" when
    complete), flagged_tasks, flags, excluded_tasks (comma-joined; LIST_COLUMNS). Raises AnalysisInputError for an
    unknown flag kind.
    """
    return _scores(cells, missing, missing_reasons, cell_reasons, flags, exclude_flagged)[0]


def _scores(
    cells: pd.DataFrame,
    missing: Mapping[str, str] | None,
    missing_reasons: Mapping[str, str] | None,
    cell_reasons: CellReasons | None,
    flags: TaskFlags | None,
    exclude_flagged: Sequence[str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(category rows, macro and micro rows): see `category_scores` and `leaderboard`."""
    bad = sorted(set(exclude_flagged) - set(FLAG_KINDS))
    if bad:
        raise AnalysisInputError(f"leaderboard.exclude_flagged: unknown kind(s) {bad}; expected some of {FLAG_KINDS}")
    missing = dict(missing or {})
    unknown = {t: k for t, k in missing.items() if k not in CATEGORIES}
    if unknown:
        raise AnalysisInputError(f"leaderboard: missing tasks with unknown categories {unknown}; expected {CATEGORIES}")
    why = {t: (missing_reasons or {}).get(t, "failed in this run") for t in missing}
    cell_why = cell_reasons or {}
    flags = flags or {}
    excluded = {t for t, kinds in flags.items() if set(kinds) & set(exclude_flagged)}
    cats, aggs = [], []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True, sort=True):
        task_cat = {
            **dict(zip(c["task"], c["category"])),
            **{t: k for t, k in missing.items() if t not in set(c["task"])},
        }
        expected = {t: k for t, k in task_cat.items() if t not in excluded}
        by_cat: dict[str, list[str]] = {}
        for t, k in sorted(task_cat.items()):
            by_cat.setdefault(k, []).append(t)
        for model, mc in c.groupby("model", observed=True, sort=True):
            have = dict(zip(mc["task"], mc["value"].astype(float)))
            cat_values, all_lacks, all_flagged, all_excl = [], [], set(), set()
            for category, tasks in by_cat.items():
                exp = [t for t in tasks if t in expected]
                got = [t for t in exp if t in have]
                lacks = [_why_missing(t, str(model), why, cell_why) for t in exp if t not in have]
                flagged = {t for t in tasks if t in flags and t in have}
                excl = flagged & excluded
                complete = len(got) == len(exp) > 0
                value = float(np.mean([have[t] for t in got])) if got else np.nan
                reason = _reason(lacks, len(exp), "category")
                if not exp:
                    reason = f"every task of this category is excluded (leaderboard.exclude_flagged): {_join(excl)}"
                cats.append(
                    {
                        "protocol": protocol,
                        "regime": regime,
                        "model": model,
                        "category": category,
                        "value": value,
                        "n_tasks": len(got),
                        "n_tasks_expected": len(exp),
                        "complete": complete,
                        "incomplete_reason": "" if complete else reason,
                        **_flag_columns(flagged, excl, flags),
                    }
                )
                if exp:
                    cat_values.append(value if complete else np.nan)
                all_lacks += lacks
                all_flagged |= flagged
                all_excl |= excl
            n_exp = len(expected)
            got_all = [t for t in expected if t in have]
            complete = not all_lacks and n_exp > 0
            for agg, value in (
                ("macro", float(np.mean(cat_values)) if complete else np.nan),
                ("micro", float(np.mean([have[t] for t in got_all])) if complete else np.nan),
            ):
                aggs.append(
                    {
                        "protocol": protocol,
                        "regime": regime,
                        "model": model,
                        "category": agg,
                        "value": value,
                        "n_tasks": len(got_all),
                        "n_tasks_expected": n_exp,
                        "complete": complete,
                        "incomplete_reason": "" if complete else _reason(all_lacks, n_exp, "aggregate"),
                        **_flag_columns(all_flagged, all_excl, flags),
                    }
                )
    return pd.DataFrame(cats), pd.DataFrame(aggs)


def _flag_columns(flagged: set[str], excluded: set[str], flags: TaskFlags) -> dict[str, str]:
    return {
        "flagged_tasks": _join(flagged),
        "flags": _join(k for t in flagged for k in flags[t]),
        "excluded_tasks": _join(excluded),
    }


def leaderboard(
    cells: pd.DataFrame,
    missing: Mapping[str, str] | None = None,
    *,
    missing_reasons: Mapping[str, str] | None = None,
    cell_reasons: CellReasons | None = None,
    flags: TaskFlags | None = None,
    exclude_flagged: Sequence[str] = (),
) -> pd.DataFrame:
    """The leaderboard table (`results/tables/leaderboard.parquet`, docs/data-dictionary.md).

    cells: per-cell table. Returns one row per (protocol, model, regime, category) for every category of a
    configured task (its cells' tasks and the `missing` ones) plus `macro` and `micro`, with value, n_tasks,
    n_tasks_expected, complete, incomplete_reason (why a row is not complete: the missing tasks and their errors;
    "no task of this category completed: ..." when the model has none), rank (by value within protocol, regime and
    category, 1 = best; NA on every incomplete row), borda_rank (over the category's tasks; over all tasks for
    macro/micro; NA where no task of the category has a value), flagged_tasks / flags / excluded_tasks (the tasks
    feeding the row that fail an audit, their kinds, and those left out of value and rank under
    `exclude_flagged`), source, schema_version, geneb_version, input_sha256 (hash of `cells`), geneb_commit and
    geneb_dirty (the running code's revision, `geneb.tables.scores.with_code_revision`).
    missing, missing_reasons, cell_reasons, flags, exclude_flagged: see `category_scores`; a model missing any
    expected task has `complete` False and no rank on its macro and micro rows. The table's attrs hold the flags
    (TASK_FLAGS_ATTR) and the excluded kinds (EXCLUDE_FLAGGED_ATTR). Raises AnalysisInputError for an empty table
    or an unknown flag kind.
    """
    if cells.empty:
        raise AnalysisInputError("leaderboard: no cells")
    cats, aggs = _scores(cells, missing, missing_reasons, cell_reasons, flags, exclude_flagged)
    table = pd.concat([cats, aggs], ignore_index=True)
    table["_ranked"] = table["value"].where(table["complete"])
    table["rank"] = table.groupby(["protocol", "regime", "category"], observed=True)["_ranked"].transform(rank_desc)
    table = table.drop(columns="_ranked")
    excluded = {t for t, kinds in (flags or {}).items() if set(kinds) & set(exclude_flagged)}
    cells = cells[~cells["task"].isin(excluded)]
    borda = []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True):
        if c.empty:
            continue
        wide = c.pivot(index="model", columns="task", values="value")
        for agg in AGGREGATES:
            b = borda_rank(wide)
            borda.append(
                pd.DataFrame(
                    {
                        "protocol": protocol,
                        "regime": regime,
                        "category": agg,
                        "model": b.index,
                        "borda_rank": b.to_numpy(),
                    }
                )
            )
        for cat, cc in c.groupby("category", observed=True):
            b = borda_rank(cc.pivot(index="model", columns="task", values="value"))
            borda.append(
                pd.DataFrame(
                    {
                        "protocol": protocol,
                        "regime": regime,
                        "category": cat,
                        "model": b.index,
                        "borda_rank": b.to_numpy(),
                    }
                )
            )
    keys = ["protocol", "regime", "category", "model"]
    table = table.merge(pd.concat(borda) if borda else pd.DataFrame(columns=keys), on=keys, how="left")
    table["borda_rank"] = table["borda_rank"].astype("Int64")
    sources = cells.groupby("model")["source"].agg(lambda s: "+".join(sorted(set(s))))
    table["source"] = table["model"].map(sources)
    table["schema_version"] = SCHEMA_VERSION
    table["geneb_version"] = __version__
    table["input_sha256"] = frame_sha256(cells)
    table = with_code_revision(table)
    order = {c: i for i, c in enumerate((*CATEGORIES, *AGGREGATES))}
    table["_o"] = table["category"].map(order)
    table = table.sort_values(["protocol", "regime", "_o", "rank", "model"], na_position="last").drop(columns="_o")
    table = table.reset_index(drop=True)
    table.attrs[TASK_FLAGS_ATTR] = {t: dict(k) for t, k in sorted((flags or {}).items())}
    table.attrs[EXCLUDE_FLAGGED_ATTR] = sorted(set(exclude_flagged))
    return table


def task_leaderboard(cells: pd.DataFrame, flags: TaskFlags | None = None) -> pd.DataFrame:
    """Per-task leaderboard: cells with a `rank` within (protocol, regime, task), 1 = best, and `flags` (the
    task's audit flags, comma-joined kinds; "" for none; `flags`: {task: {kind: reason}})."""
    out = cells.copy()
    out["flags"] = [_join((flags or {}).get(t, {})) for t in out["task"]]
    out["rank"] = out.groupby(["protocol", "regime", "task"], observed=True)["value"].transform(rank_desc)
    return out.sort_values(["protocol", "regime", "category", "task", "rank"]).reset_index(drop=True)


def wide_view(board: pd.DataFrame, protocol: str, regime: str, *, complete_only: bool = True) -> pd.DataFrame:
    """Leaderboard as a (n_models, 13 categories + macro + micro) frame for one protocol and regime, sorted
    by macro (best first); columns follow the official category order. complete_only: NaN where the model
    lacks some of the category's tasks (what rankings and correlations use); False keeps those partial means
    (for display). Raises AnalysisInputError when empty."""
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    if b.empty:
        raise AnalysisInputError(f"no leaderboard rows for protocol {protocol!r}, regime {regime!r}")
    b = b.assign(value=b["value"].where(b["complete"])) if complete_only else b
    wide = b.pivot(index="model", columns="category", values="value")
    cols = [c for c in (*CATEGORIES, *AGGREGATES) if c in wide.columns]
    return wide[cols].sort_values("macro", ascending=False, na_position="last")


def ranked_rows(rows: pd.DataFrame, board: pd.DataFrame, protocol: str, regime: str) -> pd.DataFrame:
    """The rows of `rows` (columns category, model) whose (category, model) the leaderboard `board` ranks in
    (`protocol`, `regime`): what an analysis that ranks or recommends may show. A model missing a configured
    task (failed, contaminated, not run) has no macro or micro rank, so it is never recommended there."""
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime) & board["rank"].notna()]
    keep = set(zip(b["category"], b["model"]))
    return rows[[(c, m) in keep for c, m in zip(rows["category"], rows["model"])]].reset_index(drop=True)
