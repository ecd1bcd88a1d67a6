"""Rank instability: how much a model's rank depends on which category, which tasks and which test rows.

* `category_kendall`: Kendall's tau-b (scipy.stats.kendalltau) between the model rankings of every pair of
  categories (and macro); tau near 1 means the categories agree on the order, near 0 that they do not.
* `rank_intervals`: each model's rank in each category and on macro with a bootstrap interval: the 2.5 and
  97.5 percentiles of its rank over paired replicates (`bootstrap.category_replicates`, test rows and tasks
  resampled), and how often it ranks first. Overlapping rank intervals mean the order is not resolved.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.context import RegimeContext
from geneb.analysis.ranking.leaderboard import ranked_rows
from geneb.analysis.stats.bootstrap import CategoryReplicates
from geneb.tables.scores import AnalysisInputError


def category_kendall(wide: pd.DataFrame) -> pd.DataFrame:
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
    """Ranks along axis -2 (models), 1 = highest, ties share the lowest rank."""
    return stats.rankdata(-x, axis=-2, method="min")


def rank_intervals(rep: CategoryReplicates, confidence: float) -> pd.DataFrame:
    """Per (model, category incl. macro): value, ci_low, ci_high, rank, rank_low, rank_high, p_top1.

    rep: paired replicates (B, M, C + 1). rank_low/rank_high: percentile interval of the model's rank over
    replicates at `confidence`; p_top1: fraction of replicates in which the model ranks first. Ranks: 1 =
    best, ties share the lowest rank (scipy.stats.rankdata, method "min"). ci_low/ci_high: the percentile
    interval of the model's value over the same replicates (`CategoryReplicates.interval`, NaN where undefined). A column whose replicates cannot
    vary for some model (`CategoryReplicates.column_defined`: a single-task category without that task's per-row
    predictions, a macro over one) has nothing to resample: its interval and p_top1 are missing (NA), not a
    certain-looking [rank, rank] and 1.0, and `interval_reason` says why ("" where defined). `seed`: the
    bootstrap seed of the replicates.
    """
    point_rank = _ranks(rep.point)
    draw_rank = _ranks(rep.draws)
    a = (1 - confidence) / 2
    low = np.quantile(draw_rank, a, axis=0, method="lower")
    high = np.quantile(draw_rank, 1 - a, axis=0, method="higher")
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
                    "rank_low": int(low[m, c]) if known else None,
                    "rank_high": int(high[m, c]) if known else None,
                    "p_top1": float(top[m, c]) if known else np.nan,
                    "interval_reason": "" if known else rep.column_reason(c),
                }
            )
    out = pd.DataFrame(rows)
    out[["rank_low", "rank_high"]] = out[["rank_low", "rank_high"]].astype("Int64")
    out["rows_resampled"] = rep.rows_resampled
    out["n_resamples"] = rep.draws.shape[0]
    out["seed"] = rep.seed
    return out


def rank_interval_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `rank_intervals`: `rank_intervals` of the regime's paired replicates (none with
    fewer than 2 complete models), only where the run's leaderboard ranks the (category, model)
    (`leaderboard.ranked_rows`: no macro interval for a model that lacks a failed task)."""
    if ctx.replicates is None:
        return {}
    ri = rank_intervals(ctx.replicates, ctx.run.confidence)
    return {"rank_intervals": ranked_rows(ri, ctx.run.board, ctx.protocol.protocol, ctx.regime)}


def category_kendall_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `category_kendall`: Kendall tau-b between the category (and macro) rankings of the
    complete models (at least 3); the summary gets the mean tau between categories."""
    wide = ctx.wide
    if wide.dropna().shape[0] < 3:
        return {}
    kt = category_kendall(wide)
    cat_only = kt[(kt["a"] != "macro") & (kt["b"] != "macro")]
    ctx.summary["mean_kendall_tau_between_categories"] = float(cat_only["tau"].mean()) if len(cat_only) else None
    return {"category_kendall": kt}
