"""Task difficulty: tasks no model solves, tasks that separate models, and category specialists.

* `near_random`: per (protocol, regime, task), the best model and its CI; the task is *near random* when even
  that CI's upper end stays below a configured MCC threshold (MCC 0 = chance). Without a CI (published
  results carry none) the point value is compared instead, and `ci_source` says so.
* `high_variance`: per task, the standard deviation (ddof = 1) and range of MCC across models; tasks at or
  above a configured quantile of that spread are *high variance*: the tasks that tell models apart.
* `specialists`: per category, the winner; a *specialist* wins the category while its macro MCC is below the
  median macro MCC of all ranked models.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from geneb.analysis.context import RunContext
from geneb.tables.scores import AnalysisInputError


def near_random(cells: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per (protocol, regime, task): best model, its value, ci_low, ci_high, ci_source and `near_random`.

    cells: per-cell table, optionally with ci_low/ci_high/ci_source columns (NaN where unknown). The task is
    near random when ci_high < threshold, or value < threshold where ci_high is NaN. Raises
    AnalysisInputError for a threshold outside (-1, 1].
    """
    if not -1 < threshold <= 1:
        raise AnalysisInputError(f"near-random MCC threshold must be in (-1, 1], got {threshold}")
    df = cells.copy()
    for col in ("ci_low", "ci_high"):
        if col not in df.columns:
            df[col] = np.nan
    if "ci_source" not in df.columns:
        df["ci_source"] = "none"
    best = df.loc[df.groupby(["protocol", "regime", "task"], observed=True)["value"].idxmax()]
    out = best[["protocol", "regime", "task", "category", "model", "value", "ci_low", "ci_high", "ci_source"]].copy()
    out = out.rename(columns={"model": "best_model", "value": "best_value"})
    has_ci = out["ci_high"].notna()
    out.loc[~has_ci, "ci_source"] = "none"
    out["near_random"] = np.where(has_ci, out["ci_high"] < threshold, out["best_value"] < threshold)
    out["threshold"] = threshold
    return out.sort_values(["protocol", "regime", "best_value"]).reset_index(drop=True)


def high_variance(cells: pd.DataFrame, quantile: float) -> pd.DataFrame:
    """Per (protocol, regime, task): sd (ddof=1), range, median, n_models and `high_variance`.

    high_variance: sd >= the `quantile` of the task sds within the same (protocol, regime). Tasks with fewer
    than 2 models get NaN sd and are never high variance. Raises AnalysisInputError for quantile outside [0, 1].
    """
    if not 0 <= quantile <= 1:
        raise AnalysisInputError(f"high-variance quantile must be in [0, 1], got {quantile}")
    g = cells.groupby(["protocol", "regime", "task", "category"], observed=True)["value"]
    out = g.agg(sd=lambda v: v.std(ddof=1), min="min", max="max", median="median", n_models="count").reset_index()
    out["range"] = out["max"] - out["min"]
    cut = out.groupby(["protocol", "regime"])["sd"].transform(lambda s: s.quantile(quantile))
    out["high_variance"] = (out["sd"] >= cut) & out["sd"].notna()
    out["sd_cutoff"] = cut
    return out.sort_values(["protocol", "regime", "sd"], ascending=[True, True, False]).reset_index(drop=True)


def specialists(board: pd.DataFrame) -> pd.DataFrame:
    """Per (protocol, regime, category): the winner, its macro value, the median macro and `specialist`.

    board: leaderboard table. Winners are the rank-1 rows (ties give several rows). specialist: the winner's
    macro is below the median macro over models with a macro value; NaN macro (incomplete model) is never a
    specialist.
    """
    macro = board[board["category"] == "macro"]
    med = macro.groupby(["protocol", "regime"])["value"].median().rename("median_macro")
    wins = board[(board["rank"] == 1) & ~board["category"].isin(["macro", "micro"])]
    out = (
        wins[["protocol", "regime", "category", "model", "value"]]
        .merge(
            macro[["protocol", "regime", "model", "value"]].rename(columns={"value": "macro"}),
            on=["protocol", "regime", "model"],
            how="left",
        )
        .merge(med.reset_index(), on=["protocol", "regime"], how="left")
    )
    out["specialist"] = (out["macro"] < out["median_macro"]).fillna(False).astype(bool)
    return out.rename(columns={"model": "winner"}).reset_index(drop=True)


def difficulty_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `difficulty`: near-random tasks (with the bootstrap CIs of the cells), high-variance
    tasks and specialists; each regime's summary gets its near-random tasks."""
    d = ctx.settings["difficulty"]
    nr = near_random(ctx.used, float(d["near_random_mcc"]))
    for protocol, psum in ctx.summary["protocols"].items():
        for regime, rsum in psum["regimes"].items():
            sel = nr[(nr["protocol"] == protocol) & (nr["regime"] == regime)]
            rsum["near_random_tasks"] = sel.loc[sel["near_random"], "task"].tolist()
    return {
        "near_random": nr,
        "task_variance": high_variance(ctx.used, float(d["high_variance_quantile"])),
        "specialists": specialists(ctx.board),
    }
