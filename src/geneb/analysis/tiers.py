"""Statistically tied tiers: which models of a leaderboard the tasks cannot tell apart.

Statistically tied tiers: which models of a leaderboard the tasks cannot tell apart.

Method (Demsar 2006, "Statistical comparisons of classifiers over multiple data sets", JMLR 7:1-30, sections
3.2.2 and 3.2.3): per (protocol, regime, category) the models ranked there (complete: every task of the group)
are ranked within each task (1 = best MCC, ties share the average rank); the Friedman test asks whether the
mean ranks differ (blocks = tasks, treatments = models; the chi-square statistic with scipy's tie correction,
`scipy.stats.friedmanchisquare`, computed here so that two models also work); the Nemenyi post-hoc test calls
two models different when their mean ranks differ by more than the critical difference
CD = q_alpha * sqrt(k (k + 1) / (6 N)), q_alpha the studentized range quantile for k groups and infinite degrees
of freedom over sqrt(2) (`scipy.stats.studentized_range`; Demsar's Table 5). When the Friedman test does not
reject at the configured confidence, no pair is separable (Demsar: the post-hoc test follows a rejection only).

Tiers: order the models by mean rank (ties: higher mean value, then name). Tier 1 = the best model and every
model not separable from it; tier k = the best model not in tiers < k and every remaining model not separable
from it. As the order is by mean rank, each tier is a run of consecutive models. Macro and micro rows use every
task of the (protocol, regime) as blocks, so they share their tiers. A group with fewer than 2 tasks or fewer
than 2 ranked models has no tier (NA) and says why in `tier_reason`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.ranking import AGGREGATES
from geneb.tables.scores import AnalysisInputError

#: the post-hoc procedure recorded on every tiered row
_METHOD = "Friedman + Nemenyi (Demsar 2006)"
#: the columns `add_tiers` adds to the leaderboard (docs/data-dictionary.md)
TIER_COLUMNS: tuple[str, ...] = (
    "tier",
    "tier_reason",
    "tier_confidence",
    "tier_mean_rank",
    "tier_cd",
    "tier_n_models",
    "tier_n_tasks",
    "friedman_stat",
    "friedman_p",
    "tier_method",
)
_GROUP = ["protocol", "regime", "category"]


def _friedman(values: np.ndarray) -> tuple[float, float]:
    """Friedman chi-square statistic and p-value of `values` (n_tasks, k_models), higher = better.

    Same statistic as `scipy.stats.friedmanchisquare(*values.T)` (tie-corrected; the ranks' direction does not
    change it), also for k = 2 (scipy needs 3). Every task tying every model: statistic 0, p 1 (no evidence).
    Raises AnalysisInputError for NaN values, fewer than 2 tasks or fewer than 2 models.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise AnalysisInputError(f"Friedman test needs >= 2 tasks x >= 2 models, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise AnalysisInputError("Friedman test: the matrix has missing values (only complete models are tested)")
    n, k = x.shape
    ranks = stats.rankdata(-x, axis=1)
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts * (counts * counts - 1)).sum())
    c = 1.0 - ties / (k * (k * k - 1) * n)
    if c <= 0:
        return 0.0, 1.0
    chi = (12.0 / (k * n * (k + 1)) * float((ranks.sum(axis=0) ** 2).sum()) - 3.0 * n * (k + 1)) / c
    chi = max(chi, 0.0)
    return float(chi), float(stats.chi2.sf(chi, k - 1))


def _critical_difference(k: int, n: int, confidence: float) -> float:
    """Nemenyi critical difference of mean ranks for `k` models over `n` tasks at `confidence` (Demsar 2006,
    eq. in 3.2.2): q_alpha * sqrt(k (k + 1) / (6 n)), q_alpha = studentized_range.ppf(confidence, k, inf) / sqrt(2).
    Raises AnalysisInputError for k < 2, n < 1 or a confidence outside (0, 1)."""
    if k < 2 or n < 1 or not 0 < confidence < 1:
        raise AnalysisInputError(
            f"critical difference needs k >= 2, n >= 1, 0 < confidence < 1; got {k}, {n}, {confidence}"
        )
    q = float(stats.studentized_range.ppf(confidence, k, np.inf)) / np.sqrt(2.0)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def separable(mean_ranks: np.ndarray, cd: float, friedman_p: float, confidence: float) -> np.ndarray:
    """(k, k) bool: models i and j are separable (Friedman rejects at `confidence` and |R_i - R_j| > cd)."""
    r = np.asarray(mean_ranks, dtype=float)
    if not friedman_p < 1 - confidence:
        return np.zeros((len(r), len(r)), dtype=bool)
    return np.abs(r[:, None] - r[None, :]) > cd


@dataclass(frozen=True)
class Tiers:
    """The tiers of one group: `models` ordered best first by mean rank, their `mean_rank` and `tier`, the
    Friedman statistic and p-value, the Nemenyi critical difference `cd`, the number of tasks (blocks)."""

    models: tuple[str, ...]
    mean_rank: np.ndarray
    tier: np.ndarray
    friedman_stat: float
    friedman_p: float
    cd: float
    n_tasks: int
    confidence: float


def _tiers(matrix: pd.DataFrame, confidence: float) -> Tiers:
    """Tiers of the models (rows) of `matrix` (n_models, n_tasks; higher = better, no NaN) at `confidence`
    (module docstring). Raises AnalysisInputError as `_friedman` and `_critical_difference` do."""
    x = matrix.to_numpy(dtype=float).T  # (tasks, models)
    stat, p = _friedman(x)
    mean_rank = stats.rankdata(-x, axis=1).mean(axis=0)
    mean_value = x.mean(axis=0)
    order = sorted(range(len(matrix.index)), key=lambda i: (mean_rank[i], -mean_value[i], str(matrix.index[i])))
    r = mean_rank[order]
    n, k = x.shape
    cd = _critical_difference(k, n, confidence)
    sep = separable(r, cd, p, confidence)
    tier = np.zeros(k, dtype=int)
    level, i = 1, 0
    while i < k:
        j = i
        while j < k and not sep[i, j]:
            tier[j] = level
            j += 1
        level, i = level + 1, j
    return Tiers(tuple(str(matrix.index[o]) for o in order), r, tier, stat, p, cd, n, confidence)


def _undefined(n_models: int, n_tasks: int, category: str) -> str:
    """Why a group has no tiers ("" when it has)."""
    if n_tasks < 2:
        scope = "this category has" if category not in AGGREGATES else "this regime has"
        return f"{scope} {n_tasks} task(s): the Friedman test needs >= 2 tasks (blocks)"
    if n_models < 2:
        return f"{n_models} ranked model(s): tiers need >= 2 models ranked on every task of the group"
    return ""


def add_tiers(board: pd.DataFrame, cells: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """The leaderboard `board` with the TIER_COLUMNS (docs/data-dictionary.md, `leaderboard.parquet`).

    cells: the per-cell table the board ranks (`tables.cell_scores`, less the tasks the ranking excludes); per
    (protocol, regime, category) the models with a rank are tested over the category's tasks (macro and micro:
    every task of the protocol and regime). An unranked row of a tiered group gets tier NA and the reason
    "not ranked: ...". Raises AnalysisInputError for a confidence outside (0, 1) or a ranked model without a
    value on a task of its group.
    """
    if not 0 < confidence < 1:
        raise AnalysisInputError(f"analysis.tier_confidence must be in (0, 1), got {confidence}")
    out = board.copy()
    floats = ("tier_confidence", "tier_mean_rank", "tier_cd", "friedman_stat", "friedman_p")
    cols: dict[str, list[object]] = {c: [np.nan if c in floats else pd.NA] * len(out) for c in TIER_COLUMNS}
    pos = {idx: i for i, idx in enumerate(out.index)}
    for (protocol, regime, category), g in out.groupby(_GROUP, observed=True, sort=False):
        c = cells[(cells["protocol"] == protocol) & (cells["regime"] == regime)]
        if category not in AGGREGATES:
            c = c[c["category"] == category]
        tasks = sorted(c["task"].unique())
        ranked = sorted(g.loc[g["rank"].notna(), "model"].astype(str))
        reason = _undefined(len(ranked), len(tasks), str(category))
        result = None
        if not reason:
            wide = c[c["model"].isin(ranked)].pivot(index="model", columns="task", values="value")
            wide = wide.reindex(index=ranked, columns=tasks)
            if wide.isna().any().any():
                bad = wide.stack(future_stack=True)
                bad = bad[bad.isna()].index[0]
                raise AnalysisInputError(
                    f"tiers: ranked model {bad[0]!r} has no value on task {bad[1]!r} ({protocol}, {regime}, {category})"
                )
            result = _tiers(wide, confidence)
        at = dict(zip(result.models, range(len(result.models)))) if result else {}
        for idx, model in zip(g.index, g["model"].astype(str)):
            i = pos[idx]
            cols["tier_confidence"][i] = confidence
            cols["tier_method"][i] = _METHOD
            cols["tier_n_tasks"][i] = len(tasks)
            cols["tier_n_models"][i] = len(ranked)
            if result is None:
                cols["tier_reason"][i] = reason
                continue
            cols["friedman_stat"][i] = result.friedman_stat
            cols["friedman_p"][i] = result.friedman_p
            cols["tier_cd"][i] = result.cd
            if model in at:
                cols["tier"][i] = int(result.tier[at[model]])
                cols["tier_mean_rank"][i] = float(result.mean_rank[at[model]])
                cols["tier_reason"][i] = ""
            else:
                cols["tier_reason"][i] = "not ranked: " + (str(g.loc[idx, "incomplete_reason"]) or "incomplete")
    for name in ("tier", "tier_n_models", "tier_n_tasks"):
        out[name] = pd.array(cols[name], dtype="Int64")  # type: ignore[call-overload]  # NA-holding ints
    for name in floats:
        out[name] = np.array(cols[name], dtype=float)
    for name in ("tier_reason", "tier_method"):
        out[name] = pd.Series(cols[name], index=out.index, dtype=object).fillna("").astype(str)
    out.attrs = dict(board.attrs)
    return out


#: the columns of `rank_separability.parquet` (docs/data-dictionary.md)
_SEPARABILITY_COLUMNS: tuple[str, ...] = (
    "protocol",
    "regime",
    "category",
    "n_models",
    "n_tasks",
    "n_adjacent_pairs",
    "n_separable_adjacent",
    "n_defensible_top",
    "defensible_top_models",
    "n_tiers",
    "friedman_stat",
    "friedman_p",
    "tier_cd",
    "tier_confidence",
    "tier_reason",
    "tier_method",
)


def rank_separability(board: pd.DataFrame) -> pd.DataFrame:
    """`rank_separability.parquet`: one row per (protocol, regime, category incl. macro and micro) of a tiered
    leaderboard (`add_tiers`): n_models (ranked models tested), n_tasks (blocks), n_adjacent_pairs (n_models - 1
    neighbours in mean-rank order), n_separable_adjacent (neighbours the post-hoc test separates),
    n_defensible_top (models in tier 1: each could be #1), defensible_top_models (comma-joined, best mean rank
    first), n_tiers, the Friedman statistic and p-value, the critical difference, the confidence, and
    tier_reason where the group has no tiers (then the counts are NA). Raises AnalysisInputError for a board
    without the TIER_COLUMNS."""
    missing = [c for c in TIER_COLUMNS if c not in board.columns]
    if missing:
        raise AnalysisInputError(f"rank_separability: the leaderboard lacks {missing} (run add_tiers first)")
    rows = []
    for (protocol, regime, category), g in board.groupby(_GROUP, observed=True, sort=False):
        first = g.iloc[0]
        row: dict[str, object] = {
            "protocol": protocol,
            "regime": regime,
            "category": category,
            "n_models": first["tier_n_models"],
            "n_tasks": first["tier_n_tasks"],
            "friedman_stat": first["friedman_stat"],
            "friedman_p": first["friedman_p"],
            "tier_cd": first["tier_cd"],
            "tier_confidence": first["tier_confidence"],
            "tier_method": first["tier_method"],
        }
        t = g[g["tier"].notna()].sort_values(["tier_mean_rank", "rank", "model"])
        if t.empty:
            row.update(
                n_adjacent_pairs=pd.NA,
                n_separable_adjacent=pd.NA,
                n_defensible_top=pd.NA,
                defensible_top_models="",
                n_tiers=pd.NA,
                tier_reason=str(first["tier_reason"]),
            )
        else:
            sep = separable(
                t["tier_mean_rank"].to_numpy(),
                float(first["tier_cd"]),
                float(first["friedman_p"]),
                float(first["tier_confidence"]),
            )
            top = t.loc[t["tier"] == 1, "model"].astype(str).tolist()
            row.update(
                n_adjacent_pairs=len(t) - 1,
                n_separable_adjacent=int(sum(sep[i, i + 1] for i in range(len(t) - 1))),
                n_defensible_top=len(top),
                defensible_top_models=",".join(top),
                n_tiers=int(t["tier"].max()),
                tier_reason="",
            )
        rows.append(row)
    out = pd.DataFrame(rows, columns=list(_SEPARABILITY_COLUMNS))
    for name in ("n_models", "n_tasks", "n_adjacent_pairs", "n_separable_adjacent", "n_defensible_top", "n_tiers"):
        out[name] = out[name].astype("Int64")
    for name in ("friedman_stat", "friedman_p", "tier_cd", "tier_confidence"):
        out[name] = out[name].astype(float)
    return out
