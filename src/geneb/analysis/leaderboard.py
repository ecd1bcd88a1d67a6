"""Leaderboards: per task, per category (mean MCC over the category's tasks), macro (mean over categories),
micro (mean over tasks), each with a rank and a Borda rank, for every (protocol, regime).

Aggregation follows the paper (`benchmark_spec.json`, README "Aggregates"): category score = mean of the
category's task scores; macro = mean of the category scores; micro = mean over tasks; the leaderboard ranks
by macro. A model that lacks a task another model has in that (protocol, regime) is *incomplete*: its category
value is the mean over the tasks it has (shown, but not ranked: `rank` is NA on every row where `complete` is
false, so a model cannot win a category on the one task it has), and its macro and micro are NaN.

Borda rank as MTEB computes it (`mteb/benchmarks/_create_table.py`, `_get_borda_rank`): each task gives every
model `n - rank` votes (n = number of models; rank 1 = best, ties share the average rank; a model without the
task gets 0 votes from it); models are ranked by their summed votes, ties sharing the lowest rank ("min").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from geneb import __version__
from geneb.analysis.tables import frame_sha256
from geneb.core.categories import CATEGORIES
from geneb.tables.scores import AnalysisInputError, with_code_revision

#: the leaderboard table's version (2: the code-revision columns `geneb_commit`, `geneb_dirty` were added; 3: the
#: margin over the best shortcut model, `shortcut_margin`)
SCHEMA_VERSION = "3"
AGGREGATES = ("macro", "micro")


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


def _rank_desc(values: pd.Series) -> pd.Series:
    """Rank 1 = highest; ties share the lowest rank; NaN stays unranked (pandas Int64 NA)."""
    return values.rank(method="min", ascending=False).astype("Int64")


def category_scores(cells: pd.DataFrame, missing: dict[str, str] | None = None) -> pd.DataFrame:
    """Per (protocol, regime, model, category): mean cell value over the category's tasks.

    cells: per-cell table (`tables.cell_scores`). missing: {task: category} of configured tasks that failed
    (a partial run, geneb.run.partial): each counts as expected and missing for every model, so its category is
    shown but not ranked. Returns columns protocol, regime, model, category, value, n_tasks (tasks the model
    has), n_tasks_expected (tasks of the category any model has in that protocol and regime, plus its failed
    tasks), complete (n_tasks == n_tasks_expected).
    """
    g = cells.groupby(["protocol", "regime", "model", "category"], observed=True)
    out = g.agg(value=("value", "mean"), n_tasks=("task", "nunique")).reset_index()
    expected = (
        cells.groupby(["protocol", "regime", "category"], observed=True)["task"].nunique().rename("n_tasks_expected")
    )
    out = out.merge(expected.reset_index(), on=["protocol", "regime", "category"], how="left")
    for category, n in pd.Series(list((missing or {}).values()), dtype=object).value_counts().items():
        out.loc[out["category"] == category, "n_tasks_expected"] += int(n)
    out["complete"] = out["n_tasks"] == out["n_tasks_expected"]
    return out


def _aggregates(cells: pd.DataFrame, cats: pd.DataFrame, n_missing: int = 0) -> pd.DataFrame:
    keys = ["protocol", "regime"]
    n_cat = cats.groupby(keys, observed=True)["category"].nunique().rename("n_cat")
    n_task = cells.groupby(keys, observed=True)["task"].nunique().rename("n_tasks_expected") + n_missing
    per_model = cats.groupby([*keys, "model"], observed=True).agg(
        macro=("value", "mean"), n_cat_model=("category", "nunique"), all_complete=("complete", "all")
    )
    micro = cells.groupby([*keys, "model"], observed=True)["value"].agg(["mean", "size"])
    m = per_model.join(micro).reset_index().merge(n_cat.reset_index(), on=keys).merge(n_task.reset_index(), on=keys)
    m["complete"] = m["all_complete"] & (m["n_cat_model"] == m["n_cat"])
    rows = []
    for agg, col in (("macro", "macro"), ("micro", "mean")):
        rows.append(
            pd.DataFrame(
                {
                    "protocol": m["protocol"],
                    "regime": m["regime"],
                    "model": m["model"],
                    "category": agg,
                    "value": m[col].where(m["complete"]),
                    "n_tasks": m["size"],
                    "n_tasks_expected": m["n_tasks_expected"],
                    "complete": m["complete"],
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def leaderboard(cells: pd.DataFrame, missing: dict[str, str] | None = None) -> pd.DataFrame:
    """The leaderboard table (`results/tables/leaderboard.parquet`, docs/data-dictionary.md).

    cells: per-cell table. Returns one row per (protocol, model, regime, category) for the 13 categories plus
    `macro` and `micro`, with value, n_tasks, n_tasks_expected, complete, rank (by value within protocol,
    regime and category; 1 = best), borda_rank (over the category's tasks; over all tasks for macro/micro),
    source, schema_version, geneb_version, input_sha256 (hash of `cells`), geneb_commit and geneb_dirty (the
    running code's revision, `geneb.tables.scores.with_code_revision`).
    missing: failed tasks ({task: category}, see `category_scores`): their categories, macro and micro are
    shown but not ranked. Raises AnalysisInputError for an empty table.
    """
    if cells.empty:
        raise AnalysisInputError("leaderboard: no cells")
    cats = category_scores(cells, missing)
    table = pd.concat([cats, _aggregates(cells, cats, len(missing or {}))], ignore_index=True)
    table["_ranked"] = table["value"].where(table["complete"])
    table["rank"] = table.groupby(["protocol", "regime", "category"], observed=True)["_ranked"].transform(_rank_desc)
    table = table.drop(columns="_ranked")
    borda = []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True):
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
    table = table.merge(pd.concat(borda), on=["protocol", "regime", "category", "model"], how="left")
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
    return table.reset_index(drop=True)


def task_leaderboard(cells: pd.DataFrame) -> pd.DataFrame:
    """Per-task leaderboard: cells with a `rank` within (protocol, regime, task), 1 = best."""
    out = cells.copy()
    out["rank"] = out.groupby(["protocol", "regime", "task"], observed=True)["value"].transform(_rank_desc)
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
