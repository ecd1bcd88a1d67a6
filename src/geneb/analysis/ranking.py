"""Who is ahead: leaderboards with Borda rank, contamination, rank instability and category-aware
recommendation.

Contamination: cells where the model was trained or fine-tuned on the task itself.

A model's registry entry lists `trained_on_tasks` (mirror and paper task ids). A cell (model, task) is
contaminated when the task has the same data as a listed task: tasks are grouped by the catalogue's
`geneb_task_id` (a mirror task and its paper task, whatever the split), so listing the mirror id or the paper
id flags both. Such a cell measures memorisation, not transfer: by default it is left out of every ranking
(policy "exclude") and listed in its own table; policy "flag" keeps it, marked.

Leaderboards: per task, per category (mean MCC over the category's tasks), macro (mean over categories),
micro (mean over tasks), each with a rank and a Borda rank, for every (protocol, regime).

Aggregation follows the paper (`benchmark_spec.json`, README "Aggregates"): category score = mean of the
category's task scores; macro = mean of the category scores; micro = mean over tasks; the leaderboard ranks
by macro. A model that lacks a task another model has in that (protocol, regime) is *incomplete*: its category
value is the mean over the tasks it has (shown, but not ranked: `rank` is NA on every row where `complete` is
false, so a model cannot win a category on the one task it has), and its macro and micro are NaN. A configured
task missing for every model (a partial run's failed task; in the clean leaderboard, a task without clean test
rows) counts the same way: its category is listed for every model, unranked, with `incomplete_reason` saying which
task is missing and why, and no macro or micro row is complete or ranked. A task failing the leakage or shortcut
audit (`geneb.analysis.controls.audit_flags`) is named on every row it feeds (`flagged_tasks`, `flags`), and
`exclude_flagged` ranks without such tasks (`excluded_tasks`).

Borda rank as MTEB computes it (`mteb/benchmarks/_create_table.py`, `_get_borda_rank`): each task gives every
model `n - rank` votes (n = number of models; rank 1 = best, ties share the average rank; a model without the
task gets 0 votes from it); models are ranked by their summed votes, ties sharing the lowest rank ("min"). It
counts the models the leaderboard ranks in that (protocol, regime, category) only: an unranked row has no rank of
any kind.

Rank instability: how much a model's rank depends on which category, which tasks and which test rows.

* `_category_kendall`: Kendall's tau-b (scipy.stats.kendalltau) between the model rankings of every pair of
  categories (and macro); tau near 1 means the categories agree on the order, near 0 that they do not.
* `rank_intervals`: each model's rank in each category and on macro with a bootstrap interval: the 2.5 and
  97.5 percentiles of its rank over paired replicates (`bootstrap.category_replicates`, test rows and tasks
  resampled), and how often it ranks first. Overlapping rank intervals mean the order is not resolved. Rank,
  `of` and interval are computed together, per column, over the models the leaderboard ranks there
  (`ranked_sets`, `ranked_replicates`), so the rank lies in its interval and is the leaderboard's; readers take
  an interval only from the same models (`attach_rank_intervals`), and writing checks it
  (`check_rank_intervals`).

Category-aware recommendation: for each category (and macro), the best model (the leaderboard's rank 1, over the
same models as the rank intervals) and the models it cannot be told apart from.

Tie rules (config `analysis.recommendation.tie_rule`):
* "overlap": a model ties with the best when their percentile CIs overlap (its upper end >= the best's
  lower end). Conservative: overlapping CIs do not prove equality, but non-overlap proves a difference.
* "paired": a model ties with the best when the paired-bootstrap CI of (best - model) contains 0; uses the
  pairing of `bootstrap.category_replicates` (same rows, same tasks) and so separates more models.
Where a column has no CI (a single-task category without per-row predictions), only exact equality ties.

Leaderboards and ranks: the category, macro and micro leaderboards with Borda rank, statistically tied tiers,
rank instability and intervals, the category-aware recommendation, and the contaminated cells they leave out.
One module because every one of these ranks the same models per column (who is complete, who is left out) and
they must agree with each other: a rank inside its interval, the recommendation's best the leaderboard's rank 1,
no Borda rank where there is no rank. Split, each part would keep its own copy of who is ranked where.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from geneb import __version__
from geneb.analysis.inputs import RegimeContext, cell_scores, frame_sha256
from geneb.analysis.stats import CategoryReplicates, category_replicates
from geneb.core.categories import CATEGORIES
from geneb.tables.collapse import collapsed_cells as tables_collapsed_cells
from geneb.tables.scores import CELL_KEYS, AnalysisInputError, with_code_revision

_log = logging.getLogger(__name__)

_POLICIES = ("exclude", "flag")


def _flag_contamination(cells: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None) -> pd.DataFrame:
    """Return `cells` with a boolean `contaminated` column and the `contamination_reason`.

    cells: per-cell table (`tables.cell_scores`); model_meta: `metadata.model_frame` output (models missing
    from it are treated as clean); task_meta: the catalogue (optional; adds the paper-id alias).
    """
    out = cells.copy()
    # tasks with the same data share a group (the paper task id): listing either id covers every one of them
    group: dict[str, str] = {}
    if task_meta is not None and "geneb_task_id" in task_meta.columns:
        group = {str(t): str(g) for t, g in task_meta["geneb_task_id"].items() if g}
    trained = model_meta["trained_on_tasks"].to_dict() if "trained_on_tasks" in model_meta else {}
    flags, reasons = [], []
    for model, task in zip(out["model"], out["task"]):
        seen = {group.get(t, t) for t in trained.get(model, ())}
        hit = group.get(task, task) in seen
        flags.append(hit)
        reasons.append(f"{model} was trained on {task}" if hit else "")
    out["contaminated"] = flags
    out["contamination_reason"] = reasons
    return out


def _apply_policy(cells: pd.DataFrame, policy: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split flagged cells by `policy`: returns (cells used for rankings, contaminated cells).

    "exclude" drops contaminated cells from the first table; "flag" keeps them (still marked). Raises
    AnalysisInputError for an unknown policy or when `cells` was not flagged.
    """
    if policy not in _POLICIES:
        raise AnalysisInputError(f"contamination policy must be one of {_POLICIES}, not {policy!r}")
    if "contaminated" not in cells.columns:
        raise AnalysisInputError("cells are not flagged; call flag_contamination first")
    bad = cells[cells["contaminated"]]
    kept = cells[~cells["contaminated"]] if policy == "exclude" else cells
    return kept.reset_index(drop=True), bad.reset_index(drop=True)


def _cell_cis(cells: pd.DataFrame, scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Attach the score table's per-cell CI (mean over seeds of ci_low/ci_high) where it has one."""
    out = cells.copy()
    if {"ci_low", "ci_high"} <= set(scores.columns):
        ci = scores[scores["metric"] == metric].groupby(list(CELL_KEYS), observed=True)[["ci_low", "ci_high"]].mean()
        out = out.merge(ci.reset_index(), on=list(CELL_KEYS), how="left")
    else:
        out["ci_low"] = out["ci_high"] = np.nan
    out["ci_source"] = np.where(out["ci_high"].notna(), "score table (seed mean of per-seed CIs)", "none")
    return out


def prepare_cells(
    scores: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None, settings: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed-mean cells of the configured metric, contamination applied: (cells used, contaminated cells).
    Tasks whose score rows are flagged `test_single_class` (a one-class test split kept by
    task_checks.single_class_test: keep) are left out: MCC there is 0 for every model, so they would only pull
    their category's mean towards 0."""
    scores = _two_class_tests(scores)
    cells = _flag_contamination(cell_scores(scores, metric=settings["metric"]), model_meta, task_meta)
    used, contaminated = _apply_policy(cells, settings["contamination"])
    collapsed = collapsed_cells(scores, settings)
    if len(collapsed):  # a collapsed fine-tune run's cell is never ranked as a score (geneb.tables.collapse)
        gone = used.merge(collapsed[list(CELL_KEYS)], on=list(CELL_KEYS), how="left", indicator=True)["_merge"]
        used = used[(gone == "left_only").to_numpy()].reset_index(drop=True)
    return _cell_cis(used, scores, settings["metric"]), contaminated


def _two_class_tests(scores: pd.DataFrame) -> pd.DataFrame:
    """`scores` without the tasks flagged `test_single_class` (logged)."""
    if "test_single_class" in scores.columns and scores["test_single_class"].fillna(False).astype(bool).any():
        flagged = scores["test_single_class"].fillna(False).astype(bool)
        _log.warning("left out of the analyses (one-class test split): %s", sorted(set(scores.loc[flagged, "task"])))
        scores = scores[~flagged]
    return scores


def collapsed_cells(scores: pd.DataFrame, settings: dict[str, Any]) -> pd.DataFrame:
    """The cells (CELL_KEYS) of the configured metric with a collapsed fine-tune run (`finetune_status`
    "collapsed", geneb.tables.collapse), which `prepare_cells` leaves out of every ranking and analysis: CELL_KEYS,
    value (the seed mean, shown but never ranked), n_seeds, the seed spread columns, collapse_reason ("seed <s>:
    why", per collapsed run) and n_collapsed. Empty when nothing collapsed or the table has no such column."""
    scores = _two_class_tests(scores)
    metric = scores[scores["metric"] == settings["metric"]]
    marked = tables_collapsed_cells(metric, CELL_KEYS)
    if marked.empty:
        return marked
    return cell_scores(metric, metric=settings["metric"]).merge(marked, on=list(CELL_KEYS), how="inner")


#: the leaderboard table's version (2: the code-revision columns `geneb_commit`, `geneb_dirty` were added; 3: the
#: margin over the best shortcut model, `shortcut_margin`; 4: every category of a configured task is listed, also
#: when none of its tasks completed, with `incomplete_reason`, and the audit columns `flagged_tasks`, `flags`,
#: `excluded_tasks`; 5: the statistically tied tiers, `geneb.analysis.tiers.TIER_COLUMNS`; 6: `of`, the number of
#: models ranked in the row's protocol, regime and category; 7: `collapsed_tasks`, the tasks whose fine-tune cell
#: collapsed, left unranked; 8: the tiers' unit and notes, `tier_blocks`, `tier_n_blocks`, `tier_position`,
#: `tier_separable_next`, `tier_note`, and tiers as integers)
_SCHEMA_VERSION = "8"
AGGREGATES = ("macro", "micro")
#: the kinds of audit flag a task can carry (`geneb.analysis.controls.audit_flags`; config
#: `leaderboard.exclude_flagged`)
_FLAG_KINDS: tuple[str, ...] = ("leakage", "shortcut")
# the comma-joined list columns of every leaderboard row ("" = none): flagged_tasks, flags, excluded_tasks
#: the parquet metadata key (pandas `attrs`) of leaderboard.parquet / leaderboard_clean.parquet holding the audit
#: flags {task: {kind: reason}} and the one holding the excluded kinds (config `leaderboard.exclude_flagged`)
TASK_FLAGS_ATTR = "geneb_task_flags"
EXCLUDE_FLAGGED_ATTR = "geneb_exclude_flagged"
#: how many missing tasks an `incomplete_reason` names
_MAX_NAMED = 5
#: {task: {kind: reason}}
_TaskFlags = Mapping[str, Mapping[str, str]]
#: {model: {task: reason}}
_CellReasons = Mapping[str, Mapping[str, str]]


def _borda_rank(matrix: pd.DataFrame) -> pd.Series:
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


#: the decimals a score is rounded to before it is ranked: two means of the same task scores summed in another
#: order (1e-16 apart) tie, so the leaderboard's rank and the rank-interval table's, computed from the same cells by
#: two code paths, agree
_RANK_DECIMALS = 12


def rank_desc(values: pd.Series) -> pd.Series:
    """Rank 1 = highest; ties (equal to `_RANK_DECIMALS` decimals) share the lowest rank; NaN stays unranked
    (pandas Int64 NA)."""
    return values.astype(float).round(_RANK_DECIMALS).rank(method="min", ascending=False).astype("Int64")


def _join(items: Iterable[str]) -> str:
    """Sorted, comma-joined ids ("" for none): the list columns of the leaderboard (task ids hold no comma)."""
    return ",".join(sorted(set(items)))


def _why_missing(
    task: str,
    model: str,
    missing_reasons: Mapping[str, str],
    cell_reasons: _CellReasons,
    collapsed: Mapping[str, str] | None = None,
) -> str:
    """Why `model` has no score for `task`: its collapsed fine-tune run(s) (`collapsed`: {task: reason} of this
    model, protocol and regime), the task's failure, the cell's failure, else not scored."""
    if collapsed and task in collapsed:
        return f"{task}: fine-tune collapsed, not ranked ({collapsed[task]})"
    if task in missing_reasons:
        return f"{task}: {missing_reasons[task]}"
    if task in cell_reasons.get(model, {}):
        return f"{task}: failed for this model ({cell_reasons[model][task]})"
    return f"{task}: no score for this model (not run, or left out as contaminated: contamination.parquet)"


def _reason(lacks: list[str], n_expected: int, scope: str) -> str:
    """The `incomplete_reason` of a row: which of its `n_expected` tasks it lacks and why (at most 5 named)."""
    if not lacks:
        return ""
    head = "; ".join(lacks[:_MAX_NAMED]) + (f"; and {len(lacks) - _MAX_NAMED} more" if len(lacks) > _MAX_NAMED else "")
    if scope != "aggregate" and len(lacks) == n_expected:
        return f"no task of this category completed: {head}"
    return f"missing {len(lacks)} of {n_expected} task(s): {head}"


def _scores(
    cells: pd.DataFrame,
    missing: Mapping[str, str] | None,
    missing_reasons: Mapping[str, str] | None,
    cell_reasons: _CellReasons | None,
    flags: _TaskFlags | None,
    exclude_flagged: Sequence[str],
    collapsed: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(category rows, macro and micro rows: see `leaderboard`). The category rows: per (protocol, regime, model,
    category), the mean cell value over the category's tasks.

    cells: per-cell table (`tables.cell_scores`). missing: {task: category} of configured tasks that failed
    (a partial run, geneb.run.partial) or have no value in this table (the clean leaderboard's tasks without clean
    test rows): each counts as expected and missing for every model, so its category is listed, also when no task
    of it completed (value NaN, not ranked). missing_reasons: {task: why} for those tasks; cell_reasons:
    {model: {task: why}} of failed (model, task) cells; flags: {task: {kind: why}} of tasks failing an audit
    (`geneb.analysis.controls.audit_flags`); exclude_flagged: the kinds (FLAG_KINDS) whose flagged tasks are
    left out of every value and rank; collapsed: `collapsed_cells` (cells left out as collapsed fine-tune runs:
    each counts as a task the model lacks, with its reason, and its task as expected). Returns columns protocol,
    regime, model, category, value, n_tasks (tasks the
    model has), n_tasks_expected (tasks of the category any model has in that protocol and regime, plus the
    missing ones, less the excluded ones), complete (n_tasks == n_tasks_expected > 0), incomplete_reason ("" when
    complete), flagged_tasks, flags, excluded_tasks, collapsed_tasks (comma-joined, "" = none). Raises
    AnalysisInputError for an unknown flag kind.
    """
    bad = sorted(set(exclude_flagged) - set(_FLAG_KINDS))
    if bad:
        raise AnalysisInputError(f"leaderboard.exclude_flagged: unknown kind(s) {bad}; expected some of {_FLAG_KINDS}")
    missing = dict(missing or {})
    unknown = {t: k for t, k in missing.items() if k not in CATEGORIES}
    if unknown:
        raise AnalysisInputError(f"leaderboard: missing tasks with unknown categories {unknown}; expected {CATEGORIES}")
    why = {t: (missing_reasons or {}).get(t, "failed in this run") for t in missing}
    cell_why = cell_reasons or {}
    flags = flags or {}
    excluded = {t for t, kinds in flags.items() if set(kinds) & set(exclude_flagged)}
    gone = collapsed if collapsed is not None else pd.DataFrame(columns=[*CELL_KEYS, "collapse_reason"])
    cats, aggs = [], []
    every = pd.concat([cells[list(CELL_KEYS)], gone[list(CELL_KEYS)]]) if len(gone) else cells
    for (protocol, regime), c_all in every.groupby(["protocol", "regime"], observed=True, sort=True):
        c = cells[(cells["protocol"] == protocol) & (cells["regime"] == regime)]
        here = gone[(gone["protocol"] == protocol) & (gone["regime"] == regime)]
        task_cat = {
            **dict(zip(c_all["task"], c_all["category"])),
            **{t: k for t, k in missing.items() if t not in set(c_all["task"])},
        }
        expected = {t: k for t, k in task_cat.items() if t not in excluded}
        by_cat: dict[str, list[str]] = {}
        for t, k in sorted(task_cat.items()):
            by_cat.setdefault(k, []).append(t)
        for model in sorted(set(c["model"]) | set(here["model"])):
            mc = c[c["model"] == model]
            fell = dict(
                zip(here.loc[here["model"] == model, "task"], here.loc[here["model"] == model, "collapse_reason"])
            )
            have = dict(zip(mc["task"], mc["value"].astype(float)))
            cat_values, all_lacks, all_flagged, all_excl = [], [], set(), set()
            for category, tasks in by_cat.items():
                exp = [t for t in tasks if t in expected]
                got = [t for t in exp if t in have]
                lacks = [_why_missing(t, str(model), why, cell_why, fell) for t in exp if t not in have]
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
                        "collapsed_tasks": _join(t for t in tasks if t in fell),
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
                        "collapsed_tasks": _join(fell),
                    }
                )
    return pd.DataFrame(cats), pd.DataFrame(aggs)


def _flag_columns(flagged: set[str], excluded: set[str], flags: _TaskFlags) -> dict[str, str]:
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
    cell_reasons: _CellReasons | None = None,
    flags: _TaskFlags | None = None,
    exclude_flagged: Sequence[str] = (),
    collapsed: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The leaderboard table (`results/tables/leaderboard.parquet`, docs/data-dictionary.md).

    cells: per-cell table. Returns one row per (protocol, model, regime, category) for every category of a
    configured task (its cells' tasks and the `missing` ones) plus `macro` and `micro`, with value, n_tasks,
    n_tasks_expected, complete, incomplete_reason (why a row is not complete: the missing tasks and their errors;
    "no task of this category completed: ..." when the model has none), rank (by value within protocol, regime and
    category, 1 = best; NA on every incomplete row), of (the number of models ranked in that protocol, regime and
    category, on every row of it), borda_rank (MTEB's Borda over the category's tasks, all tasks for
    macro/micro, among the models ranked there; NA on every row without a rank), flagged_tasks / flags / excluded_tasks (the tasks
    feeding the row that fail an audit, their kinds, and those left out of value and rank under
    `exclude_flagged`), source, schema_version, geneb_version, input_sha256 (hash of `cells`), geneb_commit and
    geneb_dirty (the running code's revision, `geneb.tables.scores.with_code_revision`).
    collapsed_tasks: the tasks feeding the row whose cell has a collapsed fine-tune run (`collapsed`, the
    `collapsed_cells` of the table: left out of `cells` by `prepare_cells`; the row is incomplete, unranked, and
    its incomplete_reason says "fine-tune collapsed, not ranked" with each run's reason).
    missing, missing_reasons, cell_reasons, flags, exclude_flagged: see `_scores`; a model missing any
    expected task has `complete` False and no rank on its macro and micro rows. The table's attrs hold the flags
    (TASK_FLAGS_ATTR) and the excluded kinds (EXCLUDE_FLAGGED_ATTR). Raises AnalysisInputError for an empty table
    or an unknown flag kind.
    """
    if cells.empty:
        raise AnalysisInputError("leaderboard: no cells")
    cats, aggs = _scores(cells, missing, missing_reasons, cell_reasons, flags, exclude_flagged, collapsed)
    table = pd.concat([cats, aggs], ignore_index=True)
    table["_ranked"] = table["value"].where(table["complete"])
    group = table.groupby(["protocol", "regime", "category"], observed=True)
    table["rank"] = group["_ranked"].transform(rank_desc)
    table["of"] = group["_ranked"].transform("count").astype("Int64")
    table = table.drop(columns="_ranked")
    excluded = {t for t, kinds in (flags or {}).items() if set(kinds) & set(exclude_flagged)}
    cells = cells[~cells["task"].isin(excluded)]
    # Borda among the models ranked in the row's (protocol, regime, category): an unranked row gets none, and the
    # ranked ones count only each other's votes, as `rank` does
    done = table.loc[table["complete"].astype(bool), ["protocol", "regime", "category", "model"]]
    ranked = {key: set(g["model"]) for key, g in done.groupby(["protocol", "regime", "category"], observed=True)}
    borda = []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True):
        if c.empty:
            continue
        everything = c.pivot(index="model", columns="task", values="value")
        for agg in AGGREGATES:
            wide = everything[everything.index.isin(ranked.get((protocol, regime, agg), set()))]
            if wide.empty:
                continue
            b = _borda_rank(wide)
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
            wide = cc.pivot(index="model", columns="task", values="value")
            wide = wide[wide.index.isin(ranked.get((protocol, regime, cat), set()))]
            if wide.empty:
                continue
            b = _borda_rank(wide)
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
    table["schema_version"] = _SCHEMA_VERSION
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


def task_leaderboard(
    cells: pd.DataFrame, flags: _TaskFlags | None = None, collapsed: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per-task leaderboard: cells with a `rank` within (protocol, regime, task), 1 = best, and `flags` (the
    task's audit flags, comma-joined kinds; "" for none; `flags`: {task: {kind: reason}}). collapsed: the
    `collapsed_cells` of the table, listed with their value and spread, `finetune_status` "collapsed" and
    `collapse_reason`, and no rank (NA; the ranked cells' ranks are among themselves). `collapse_reason` is ""
    on every other row."""
    out = cells.copy()
    if "collapse_reason" not in out.columns:
        out["collapse_reason"] = ""
    out["rank"] = out.groupby(["protocol", "regime", "task"], observed=True)["value"].transform(rank_desc)
    if collapsed is not None and len(collapsed):
        shown = collapsed.drop(columns=["n_collapsed"], errors="ignore").assign(finetune_status="collapsed")
        out = pd.concat([out, shown.assign(rank=pd.array([pd.NA] * len(shown), dtype="Int64"))], ignore_index=True)
    out["collapse_reason"] = out["collapse_reason"].fillna("")
    out["flags"] = [_join((flags or {}).get(t, {})) for t in out["task"]]
    out["rank"] = out["rank"].astype("Int64")
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


#: the rank-interval columns a reader takes from the rank-interval table (`attach_rank_intervals`)
_INTERVAL_FIELDS = ("rank_low", "rank_high", "p_top1")


def ranked_sets(board: pd.DataFrame, protocol: str, regime: str) -> dict[str, tuple[str, ...]]:
    """{column: the models `board` ranks there} for one (`protocol`, `regime`), columns in the official order (the
    categories, then macro; micro ranks the macro's models on another mean and has no bootstrap of its own): per
    category the models complete in it (every task of the category), for macro the models complete on every task.
    What the rank interval, the recommendation and the point rank of a column are computed over, so that the three
    agree (a model missing one task of another category is still ranked, with an interval, in this one)."""
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime) & board["rank"].notna()]
    out: dict[str, tuple[str, ...]] = {}
    for column in (*CATEGORIES, "macro"):
        models = b.loc[b["category"] == column, "model"]
        if len(models):
            out[column] = tuple(sorted(map(str, models)))
    return out


def ranked_replicates(
    matrix: pd.DataFrame,
    task_category: pd.Series,
    rows: np.ndarray | None,
    ranked: Mapping[str, Sequence[str]],
    *,
    n_resamples: int,
    seed: int,
    resample_tasks: bool = True,
) -> dict[str, CategoryReplicates]:
    """{column: the paired replicates over the models ranked there} for every column of `ranked` (`ranked_sets`)
    with at least 2 models.

    matrix: (M, T) cell values of one (protocol, regime) (index model, columns task), NaN where a model lacks a task;
    task_category: task -> category; rows: test-row replicates (B, M, T) in `matrix`'s order (`stats.row_replicates`),
    or None; a category's replicates draw its tasks only, macro's every task (`stats.category_replicates`: the task
    draw of a category depends on the category alone, so every column sees the same draws). Raises
    AnalysisInputError when a ranked model lacks a task of its column or is not in `matrix` (the leaderboard and the
    matrix come from other cells), naming the column and the model.
    """
    out: dict[str, CategoryReplicates] = {}
    for column, models in ranked.items():
        if len(models) < 2:
            continue
        unknown = [m for m in models if m not in matrix.index]
        if unknown:
            raise AnalysisInputError(f"rank intervals of {column!r}: ranked model(s) {unknown} have no cells")
        tasks = [t for t in matrix.columns if column == "macro" or task_category.get(t) == column]
        sub = matrix.loc[list(models), tasks]
        lacking = sub.isna().any(axis=1)
        if not tasks or lacking.any():
            bad = list(sub.index[lacking]) if tasks else list(models)
            raise AnalysisInputError(
                f"rank intervals of {column!r}: model(s) {bad} are ranked there but lack one of its tasks {tasks}"
            )
        part = None
        if rows is not None:
            mi = np.asarray(matrix.index.get_indexer(pd.Index(list(models))), dtype=np.intp)
            ti = np.asarray(matrix.columns.get_indexer(pd.Index(tasks)), dtype=np.intp)
            part = rows[:, mi][:, :, ti]
            part = None if np.isnan(part).all() else part
        out[column] = category_replicates(
            sub, task_category, part, n_resamples=n_resamples, seed=seed, resample_tasks=resample_tasks
        )
    return out


def _category_kendall(wide: pd.DataFrame) -> pd.DataFrame:
    """Kendall tau-b between the columns of `wide` (n_models, n_columns), over models with no NaN.

    wide: e.g. `leaderboard.wide_view` (categories + macro). Returns one row per unordered column pair:
    a, b, tau, p_value (scipy's exact/asymptotic two-sided test), n_models. Raises AnalysisInputError with
    fewer than 3 complete models (tau is undefined or meaningless).
    """
    w = wide.dropna(how="any")
    if len(w) < 3:
        raise AnalysisInputError(f"Kendall tau between categories needs >= 3 models with every category, got {len(w)}")
    rows = []
    for a, b in itertools.combinations(w.columns, 2):
        res = stats.kendalltau(w[a].to_numpy(), w[b].to_numpy(), variant="b")
        rows.append({"a": a, "b": b, "tau": float(res.statistic), "p_value": float(res.pvalue), "n_models": len(w)})
    return pd.DataFrame(rows)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks along axis -2 (models), 1 = highest, ties (equal to `_RANK_DECIMALS` decimals) share the lowest rank."""
    return stats.rankdata(-np.round(x, _RANK_DECIMALS), axis=-2, method="min")


def rank_intervals(rep: CategoryReplicates, confidence: float) -> pd.DataFrame:
    """Per (model, category incl. macro): value, ci_low, ci_high, rank, of, rank_low, rank_high, p_top1, computed
    together over the models of `rep` and its replicates.

    rep: paired replicates (B, M, C + 1). rank: the model's rank on the unresampled data (`rep.point`) among the M
    models; of: M. rank_low/rank_high: percentile interval of the model's rank over replicates at `confidence`,
    widened where it misses the point rank (a biased resample, e.g. MCC recomputed on resampled test rows: the
    interval then reaches the rank shown, and `rank_interval_widened` is True), so rank_low <= rank <= rank_high on
    every row; p_top1: fraction of replicates in which the model ranks first. Ranks: 1 = best, ties share the lowest
    rank (scipy.stats.rankdata, method "min"). ci_low/ci_high: the percentile interval of the model's value over the
    same replicates (`CategoryReplicates.interval`, NaN where undefined). A column whose replicates cannot vary for
    some model (`CategoryReplicates.column_defined`: a single-task category without that task's per-row
    predictions, a macro over one) has nothing to resample: its interval and p_top1 are missing (NA), not a
    certain-looking [rank, rank] and 1.0, and `interval_reason` says why ("" where defined). `seed`: the bootstrap
    seed of the replicates.
    """
    point_rank = _ranks(rep.point)
    draw_rank = _ranks(rep.draws)
    a = (1 - confidence) / 2
    low = np.quantile(draw_rank, a, axis=0, method="lower")
    high = np.quantile(draw_rank, 1 - a, axis=0, method="higher")
    widened = (low > point_rank) | (high < point_rank)
    low, high = np.minimum(low, point_rank), np.maximum(high, point_rank)
    top = (draw_rank == 1).mean(axis=0)
    ci_low, ci_high = rep.interval(confidence)
    no_variation = ~rep.column_defined()
    rows = []
    for m, model in enumerate(rep.models):
        for c, col in enumerate(rep.columns):
            known = not no_variation[c]
            rows.append(
                {
                    "model": model,
                    "category": col,
                    "value": rep.point[m, c],
                    "ci_low": float(ci_low[m, c]),
                    "ci_high": float(ci_high[m, c]),
                    "rank": int(point_rank[m, c]),
                    "of": len(rep.models),
                    "rank_low": int(low[m, c]) if known else None,
                    "rank_high": int(high[m, c]) if known else None,
                    "p_top1": float(top[m, c]) if known else np.nan,
                    "rank_interval_widened": bool(widened[m, c]) and known,
                    "interval_reason": "" if known else rep.column_reason(c),
                }
            )
    out = pd.DataFrame(rows)
    out[["rank", "of", "rank_low", "rank_high"]] = out[["rank", "of", "rank_low", "rank_high"]].astype("Int64")
    out["rows_resampled"] = rep.rows_resampled
    out["n_resamples"] = rep.draws.shape[0]
    out["seed"] = rep.seed
    return out


def check_rank_intervals(table: pd.DataFrame, name: str) -> None:
    """Raise AnalysisInputError when a row of `table` (written as `name`) has rank, rank_low and rank_high and
    the rank lies outside [rank_low, rank_high], or a rank above its `of`: rank and interval were computed over
    different models. Names the protocol, regime, category and model of the first such rows and their count. A
    table without those columns, or a row missing one of them, passes."""
    if not {"rank", "rank_low", "rank_high"} <= set(table.columns) or table.empty:
        return
    rank = pd.to_numeric(table["rank"], errors="coerce")
    low = pd.to_numeric(table["rank_low"], errors="coerce")
    high = pd.to_numeric(table["rank_high"], errors="coerce")
    has = rank.notna() & low.notna() & high.notna()
    bad = has & ((low > rank) | (rank > high))
    if "of" in table.columns:
        bad |= rank.notna() & (rank > pd.to_numeric(table["of"], errors="coerce")).fillna(False)
    if not bad.any():
        return
    shown = []
    for i in table.index[bad][:5]:
        r = table.loc[i]
        where = ", ".join(f"{k} {r[k]}" for k in ("protocol", "regime", "category", "model") if k in table.columns)
        of = f" of {r['of']}" if "of" in table.columns else ""
        shown.append(f"{where}: rank {r['rank']}{of}, rank interval {r['rank_low']}-{r['rank_high']}")
    raise AnalysisInputError(
        f"{name}: {int(bad.sum())} row(s) with a rank outside its own rank interval (rank and interval computed over "
        f"different models): " + "; ".join(shown)
    )


def attach_rank_intervals(
    board: pd.DataFrame, intervals: pd.DataFrame | None, keys: Sequence[str] = ("protocol", "regime", "category")
) -> pd.DataFrame:
    """`board` (leaderboard rows) with `of` and each row's rank interval from `intervals` (a run's rank_intervals
    table), taken only where that table ranks the model over the same models: the same rank and the same `of`, which
    `rank_intervals` computed together with the interval. What every reader that shows a leaderboard rank with its
    interval uses, so that no row shows a rank from one model set and an interval from another.

    keys: the columns of a ranking group, without model (the site adds "run"). Adds `of` where the board has none
    (the ranked rows of the row's group), rank_low, rank_high (Int64), p_top1 (NA where no interval is taken),
    ci_low / ci_high where the board has none (the value's interval from the interval table's row of the model, also
    where its rank is not taken: a model's value draws do not depend on the other models drawn with it), and
    `interval_reason`: "" where an interval is taken, else why not: the row is not ranked, it is the only ranked
    model, the interval table's own reason (nothing to resample), no row of it in the interval table, or the
    interval table ranks it otherwise (tables of another run, or written before rank and interval were computed
    together). A board that carries rank_low already (the comparison table, `published.compare_intervals`) keeps its
    own intervals. Returns a new frame in `board`'s row order.
    """
    group = list(keys)
    out = board.copy()
    if "of" not in out.columns:
        ranked = out["rank"].notna()
        out["of"] = ranked.groupby([out[k] for k in group], observed=True, dropna=False).transform("sum")
        out["of"] = out["of"].astype("Int64")
    if "rank_low" in out.columns:
        return out
    rank, of = out["rank"].astype("Int64").to_numpy(), out["of"].astype("Int64").to_numpy()
    low: list[Any] = [pd.NA] * len(out)
    high: list[Any] = [pd.NA] * len(out)
    top = np.full(len(out), np.nan)
    reason = np.array(
        [
            "not ranked"
            if pd.isna(r)
            else "the only ranked model: nothing to rank it against"
            if n == 1
            else "no row of it in the rank-interval table"
            for r, n in zip(rank, of)
        ],
        dtype=object,
    )
    on = [*group, "model"]
    if intervals is not None and (
        intervals.empty or not {*on, "rank", "rank_low", "rank_high"} <= set(intervals.columns)
    ):
        intervals = None  # nothing to take: every ranked row says so
    own_ci = {"ci_low", "ci_high"} <= set(out.columns)
    with_ci = own_ci or (intervals is not None and {"ci_low", "ci_high"} <= set(intervals.columns))
    ci = {
        c: out[c].to_numpy(dtype=float, na_value=np.nan) if own_ci else np.full(len(out), np.nan)
        for c in ("ci_low", "ci_high")
    }
    if intervals is not None:
        ri = intervals.copy()
        if "of" not in ri.columns:  # a table written before `of`: its rows per group
            ri["of"] = ri.groupby(group, observed=True, dropna=False)["model"].transform("size")
        take = [c for c in ("rank", "of", *_INTERVAL_FIELDS, "interval_reason", "ci_low", "ci_high") if c in ri.columns]
        ri = ri[on + take].drop_duplicates(on).rename(columns={c: f"_ri_{c}" for c in take})
        m = out[on].reset_index(drop=True).merge(ri, on=on, how="left")
        has = m["_ri_rank"].notna().to_numpy()
        ri_rank, ri_of = m["_ri_rank"].astype("Int64").to_numpy(), m["_ri_of"].astype("Int64").to_numpy()
        for i in map(int, np.flatnonzero(has & ~pd.isna(rank))):
            for c in ("ci_low", "ci_high"):  # the value's own interval: its draws do not depend on the other models
                if np.isnan(ci[c][i]) and f"_ri_{c}" in m.columns:
                    ci[c][i] = m[f"_ri_{c}"].iloc[i]
            if ri_rank[i] != rank[i] or ri_of[i] != of[i]:
                reason[i] = (
                    f"the rank-interval table ranks it {ri_rank[i]} of {ri_of[i]}, the leaderboard {rank[i]} of "
                    f"{of[i]}: computed over other models (another run's tables, or tables written before rank and "
                    "interval were computed together: rerun the analyses)"
                )
                continue
            low[i], high[i] = m["_ri_rank_low"].iloc[i], m["_ri_rank_high"].iloc[i]
            if "_ri_p_top1" in m.columns:
                top[i] = m["_ri_p_top1"].iloc[i]
            reason[i] = str(m["_ri_interval_reason"].iloc[i] or "") if "_ri_interval_reason" in m.columns else ""
    out["rank_low"], out["rank_high"] = pd.array(low, dtype="Int64"), pd.array(high, dtype="Int64")
    out["p_top1"], out["interval_reason"] = top, reason
    if with_ci:
        out["ci_low"], out["ci_high"] = ci["ci_low"], ci["ci_high"]
    return out


def _column_rows(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The rows of `frame` (a `rank_intervals` or `recommend` output) of one column (a category or macro)."""
    return frame[frame["category"] == column]


def rank_interval_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `rank_intervals`: per column (category, macro) with at least 2 ranked models,
    `rank_intervals` of the replicates over exactly the models the run's leaderboard ranks there (`ranked_sets`,
    `ranked_replicates`: a model that lacks a task of another category, or a failed task, still has its interval
    where it is ranked, and none where it is not); rank and of are the leaderboard's."""
    frames = [_column_rows(rank_intervals(rep, ctx.run.confidence), col) for col, rep in ctx.ranked.items()]
    if not frames:
        return {}
    return {"rank_intervals": pd.concat(frames, ignore_index=True)}


def category_kendall_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `_category_kendall`: Kendall tau-b between the category (and macro) rankings of the
    complete models (at least 3); the summary gets the mean tau between categories."""
    wide = ctx.wide
    if wide.dropna().shape[0] < 3:
        return {}
    kt = _category_kendall(wide)
    cat_only = kt[(kt["a"] != "macro") & (kt["b"] != "macro")]
    ctx.summary["mean_kendall_tau_between_categories"] = float(cat_only["tau"].mean()) if len(cat_only) else None
    return {"category_kendall": kt}


_TIE_RULES = ("overlap", "paired")


def recommend(rep: CategoryReplicates, *, confidence: float, tie_rule: str = "overlap") -> pd.DataFrame:
    """Best and tied models per category (incl. macro).

    rep: paired category replicates of one (protocol, regime). Returns rows category, model, role ("best" or
    "tied"), value, ci_low, ci_high, rank and of (the model's point rank among the models of `rep`, as
    `rank_intervals` gives it: the best has rank 1), n_recommended (best + tied), sorted by category then value.
    The best is a model of rank 1; another model of rank 1 (the same value) is always "tied". Raises
    AnalysisInputError for an unknown tie rule.
    """
    if tie_rule not in _TIE_RULES:
        raise AnalysisInputError(f"tie_rule must be one of {_TIE_RULES}, not {tie_rule!r}")
    low, high = rep.interval(confidence)
    point_rank = _ranks(rep.point)
    a = (1 - confidence) / 2
    rows = []
    for c, col in enumerate(rep.columns):
        values = rep.point[:, c]
        best = int(np.flatnonzero(point_rank[:, c] == 1)[0])
        has_ci = np.isfinite(low[best, c])
        chosen: list[dict[str, Any]] = []
        for m, model in enumerate(rep.models):
            role: str | None
            if m == best:
                role = "best"
            elif point_rank[m, c] == 1:  # the same value as the best: a tie whatever the rule
                role = "tied"
            elif not has_ci:
                role = None
            elif tie_rule == "overlap":
                role = "tied" if high[m, c] >= low[best, c] else None
            else:
                d = rep.draws[:, best, c] - rep.draws[:, m, c]
                role = "tied" if np.quantile(d, a) <= 0 else None
            if role:
                chosen.append(
                    {
                        "category": col,
                        "model": model,
                        "role": role,
                        "value": float(values[m]),
                        "ci_low": float(low[m, c]),
                        "ci_high": float(high[m, c]),
                        "rank": int(point_rank[m, c]),
                        "of": len(rep.models),
                    }
                )
        for r in chosen:
            r["n_recommended"] = len(chosen)
        rows += sorted(chosen, key=lambda r: (r["rank"], r["role"] != "best", -r["value"]))
    out = pd.DataFrame(rows)
    out["tie_rule"] = tie_rule
    return out


def recommendation_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `recommendation`: per column (category, macro) with at least 2 ranked models, `recommend`
    on the replicates over exactly the models the run's leaderboard ranks there (`ranked_sets`), with the
    configured tie rule: the best is the leaderboard's rank 1 (another model of rank 1 is tied), and a column the
    leaderboard ranks nobody in (a failed task) is never recommended on."""
    rule = ctx.run.settings["recommendation"]["tie_rule"]
    frames = [
        _column_rows(recommend(rep, confidence=ctx.run.confidence, tie_rule=rule), col)
        for col, rep in ctx.ranked.items()
    ]
    if not frames:
        return {}
    return {"recommendations": pd.concat(frames, ignore_index=True)}
