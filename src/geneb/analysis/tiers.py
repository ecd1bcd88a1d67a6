"""Statistically tied tiers: which models of a leaderboard the data cannot tell apart.

Blocks. Per (protocol, regime, category) the models ranked there (complete: every task of the group) are
compared over blocks, each block one value per model, in the unit the row's score weights equally: a category row
over its tasks (the category score is their mean), or, with `analysis.tier_category_blocks: source_benchmarks`,
over its source benchmarks (each the mean of the category's tasks cut from that benchmark: sibling tasks are not
independent data sets; a task without a source benchmark counts alone); the macro row over the 13 categories (the
category means: macro-MCC weights categories equally); the micro row over every task. `tier_blocks` names the unit
on every row.

Method `nemenyi` (Demsar 2006, "Statistical comparisons of classifiers over multiple data sets", JMLR 7:1-30,
sections 3.2.2 and 3.2.3): the models are ranked within each block (1 = best, ties share the average rank); the
Friedman test asks whether the mean ranks differ (blocks x models; the chi-square statistic with scipy's tie
correction, `scipy.stats.friedmanchisquare`, computed here so that two models also work); the Nemenyi post-hoc
test calls two models different when their mean ranks differ by more than the critical difference
CD = q_alpha * sqrt(k (k + 1) / (6 N)), q_alpha the studentized range quantile for k groups and infinite degrees
of freedom over sqrt(2) (`scipy.stats.studentized_range`; Demsar's Table 5). When the Friedman test does not
reject at the configured confidence, no pair is separable (Demsar: the post-hoc test follows a rejection only).
Mean ranks lie in [1, k], so no pair can ever be separated when CD >= k - 1: such a group has too few blocks for
the post-hoc test and gets no tier (NA, the numbers in `tier_reason`), whatever the Friedman test says.

Method `wilcoxon_holm` (Benavoli, Corani, Mangili 2016, "Should we really use post-hoc tests based on
mean-ranks?", JMLR 17(5):1-10): every pair of models is compared by the two-sided Wilcoxon signed-rank test on
its paired block values (`scipy.stats.wilcoxon`, zero differences dropped; p 1 when every difference is 0), the
m = k (k - 1) / 2 p-values adjusted by Holm's step-down (Holm 1979, "A simple sequentially rejective multiple test
procedure", Scand. J. Statist. 6:65-70), and a pair is separable when its adjusted p <= 1 - confidence. Holm
controls the family-wise error on its own, so no Friedman gate is applied (the Friedman statistic is still
reported). When even the smallest p-value the test can give over N blocks exceeds Holm's first threshold
alpha / m, no pair can be separated: too few blocks, tier NA with the numbers.

Tiers: order the models (nemenyi: by mean rank, ties by higher mean block value, then name; wilcoxon_holm: by
mean block value, which for the score's own unit is the leaderboard's order, ties by mean rank, then name).
Tier 1 = the first model and the models after it up to the first one the test separates from it; tier k starts
at the first model not in tiers < k. For nemenyi this is "the best model and every model not separable from it"
(separation from a model grows along the mean-rank order). The position in this order is `tier_position` and
whether the test separates a model from the next one `tier_separable_next`.

Against the rank. The leaderboard's `rank` orders by the score (the mean value), the nemenyi tiers by mean rank;
the two can disagree. A row whose tier contradicts the rank order (a model ranked below it sits in a better tier,
or one ranked above it in a worse tier) says so in `tier_note`, with both orders' numbers; a model a test does not
separate from the first model of a better tier says that too. A group with fewer than 2 blocks or fewer than 2
ranked models has no tier (NA) and says why in `tier_reason`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.ranking import AGGREGATES
from geneb.tables.scores import AnalysisInputError

#: the post-hoc procedures (config `analysis.tier_method`) and the text recorded on every tiered row
TIER_METHODS: dict[str, str] = {
    "nemenyi": "Friedman + Nemenyi (Demsar 2006)",
    "wilcoxon_holm": "Wilcoxon signed-rank + Holm (Benavoli et al. 2016)",
}
#: the blocks of a category row (config `analysis.tier_category_blocks`)
CATEGORY_BLOCKS: tuple[str, ...] = ("tasks", "source_benchmarks")
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
    "tier_blocks",
    "tier_n_blocks",
    "tier_position",
    "tier_separable_next",
    "tier_note",
)
_GROUP = ["protocol", "regime", "category"]
#: the unit of each kind of block, as `tier_blocks` and the reasons write it
_UNITS = {"tasks": "tasks", "categories": "categories", "source_benchmarks": "source benchmarks"}
#: how many models a `tier_note` names
_MAX_NAMED = 3


def _friedman(values: np.ndarray) -> tuple[float, float]:
    """Friedman chi-square statistic and p-value of `values` (n_blocks, k_models), higher = better.

    Same statistic as `scipy.stats.friedmanchisquare(*values.T)` (tie-corrected; the ranks' direction does not
    change it), also for k = 2 (scipy needs 3). Every block tying every model: statistic 0, p 1 (no evidence).
    Raises AnalysisInputError for NaN values, fewer than 2 blocks or fewer than 2 models.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise AnalysisInputError(f"Friedman test needs >= 2 blocks x >= 2 models, got shape {x.shape}")
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
    """Nemenyi critical difference of mean ranks for `k` models over `n` blocks at `confidence` (Demsar 2006,
    eq. in 3.2.2): q_alpha * sqrt(k (k + 1) / (6 n)), q_alpha = studentized_range.ppf(confidence, k, inf) / sqrt(2).
    Raises AnalysisInputError for k < 2, n < 1 or a confidence outside (0, 1)."""
    if k < 2 or n < 1 or not 0 < confidence < 1:
        raise AnalysisInputError(
            f"critical difference needs k >= 2, n >= 1, 0 < confidence < 1; got {k}, {n}, {confidence}"
        )
    q = float(stats.studentized_range.ppf(confidence, k, np.inf)) / np.sqrt(2.0)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def separable(mean_ranks: np.ndarray, cd: float, friedman_p: float, confidence: float) -> np.ndarray:
    """(k, k) bool: models i and j are separable by Nemenyi (Friedman rejects at `confidence` and
    |R_i - R_j| > cd); `mean_ranks` (k,)."""
    r = np.asarray(mean_ranks, dtype=float)
    if not friedman_p < 1 - confidence:
        return np.zeros((len(r), len(r)), dtype=bool)
    return np.abs(r[:, None] - r[None, :]) > cd


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979, Scand. J. Statist. 6:65-70) of `p_values` (m,), same order:
    the i-th smallest p times (m - i + 1), made non-decreasing along the sorted order, capped at 1; a hypothesis is
    rejected at level alpha when its adjusted p <= alpha. Raises AnalysisInputError for a NaN or a p outside [0, 1]."""
    p = np.asarray(p_values, dtype=float)
    if not (np.isfinite(p) & (p >= 0) & (p <= 1)).all():
        raise AnalysisInputError(f"Holm adjustment: p-values must be in [0, 1], got {p[~((p >= 0) & (p <= 1))]}")
    if len(p) == 0:
        return p
    from statsmodels.stats.multitest import multipletests  # as the pretraining-gain analysis adjusts (controls)

    return np.asarray(multipletests(p, method="holm")[1], dtype=float)


def _wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the paired values `a`, `b` (n,) (`scipy.stats.wilcoxon`, zero
    differences dropped, scipy's exact or normal method as it chooses); 1 when every difference is 0."""
    if np.allclose(a, b, rtol=0, atol=0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small samples with ties/zeros: scipy warns that it uses the normal method
        return float(stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided").pvalue)


def wilcoxon_holm(values: np.ndarray) -> np.ndarray:
    """(k, k) Holm-adjusted p-values of the pairwise two-sided Wilcoxon signed-rank tests between the models
    (columns) of `values` (n_blocks, k_models) (Benavoli et al. 2016, JMLR 17(5)); diagonal 1. Raises
    AnalysisInputError for NaN values or fewer than 2 models."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[1] < 2 or not np.isfinite(x).all():
        raise AnalysisInputError(f"Wilcoxon-Holm needs a complete (blocks, >= 2 models) matrix, got shape {x.shape}")
    k = x.shape[1]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    adjusted = holm(np.array([_wilcoxon_p(x[:, i], x[:, j]) for i, j in pairs]))
    out = np.ones((k, k))
    for (i, j), p in zip(pairs, adjusted):
        out[i, j] = out[j, i] = p
    return out


def _too_few(method: str, k: int, n: int, cd: float, confidence: float, unit: str) -> str:
    """Why no pair of `k` models can ever be separated over `n` blocks of `unit` ("" when some pair can): nemenyi,
    CD >= k - 1 (mean ranks lie in [1, k]); wilcoxon_holm, the smallest p the signed-rank test gives over n blocks
    (every difference of one sign, `scipy.stats.wilcoxon`) above Holm's first threshold alpha / m."""
    if method == "nemenyi":
        if cd < k - 1:
            return ""
        return (
            f"too few {unit} for a post-hoc test: the Nemenyi critical difference over {n} {unit} is {cd:.2f} mean "
            f"ranks at {confidence:g}, at least {k - 1}, the largest possible mean-rank gap between {k} models, so no "
            "pair can be separated"
        )
    alpha, m = 1 - confidence, k * (k - 1) // 2
    smallest = _wilcoxon_p(np.arange(1.0, n + 1), np.zeros(n))
    if smallest <= alpha / m:
        return ""
    return (
        f"too few {unit} for a post-hoc test: over {n} {unit} the smallest two-sided Wilcoxon signed-rank p-value is "
        f"{smallest:.3g}, above Holm's first threshold {alpha:.3g}/{m} = {alpha / m:.3g} for the {m} pairs of {k} "
        "models, so no pair can be separated"
    )


@dataclass(frozen=True)
class Tiers:
    """The tiers of one group: `models` in tier order (module docstring), their `mean_rank` and `mean_value` over
    the blocks, `tier` (all 0 when `too_few` says why no pair can be separated), `sep` (k, k) the test's
    separable pairs in that order, the Friedman statistic and p-value, the Nemenyi critical difference `cd` (NaN
    for wilcoxon_holm), the number of blocks."""

    models: tuple[str, ...]
    mean_rank: np.ndarray
    mean_value: np.ndarray
    tier: np.ndarray
    sep: np.ndarray
    friedman_stat: float
    friedman_p: float
    cd: float
    n_blocks: int
    confidence: float
    too_few: str = ""


def _tiers(matrix: pd.DataFrame, confidence: float, method: str = "nemenyi", unit: str = "tasks") -> Tiers:
    """Tiers of the models (rows) of `matrix` (n_models, n_blocks; higher = better, no NaN) at `confidence` by
    `method` (TIER_METHODS; module docstring); `unit` names the blocks in a too-few reason. Raises
    AnalysisInputError as `_friedman` and `_critical_difference` do, or for an unknown method."""
    if method not in TIER_METHODS:
        raise AnalysisInputError(f"analysis.tier_method must be one of {sorted(TIER_METHODS)}, got {method!r}")
    x = matrix.to_numpy(dtype=float).T  # (blocks, models)
    stat, p = _friedman(x)
    mean_rank = stats.rankdata(-x, axis=1).mean(axis=0)
    mean_value = x.mean(axis=0)
    names = [str(m) for m in matrix.index]
    if method == "nemenyi":
        key = [(mean_rank[i], -mean_value[i], names[i]) for i in range(len(names))]
    else:
        key = [(-mean_value[i], mean_rank[i], names[i]) for i in range(len(names))]
    order = sorted(range(len(names)), key=key.__getitem__)
    n, k = x.shape
    cd = _critical_difference(k, n, confidence) if method == "nemenyi" else float("nan")
    too_few = _too_few(method, k, n, cd, confidence, unit)
    if too_few:  # no pair can be separated: no test to run
        sep = np.zeros((k, k), dtype=bool)
    elif method == "nemenyi":
        sep = separable(mean_rank[order], cd, p, confidence)
    else:
        sep = wilcoxon_holm(x[:, order]) <= 1 - confidence
    tier = np.zeros(k, dtype=int)
    level, i = 1, 0
    while i < k and not too_few:
        j = i
        while j < k and not sep[i, j]:
            tier[j] = level
            j += 1
        level, i = level + 1, j
    return Tiers(
        tuple(names[o] for o in order),
        mean_rank[order],
        mean_value[order],
        tier,
        sep,
        stat,
        p,
        cd,
        n,
        confidence,
        too_few,
    )


def _undefined(n_models: int, n_blocks: int, category: str, unit: str) -> str:
    """Why a group has no tiers before any test ("" when it may have)."""
    if n_blocks < 2:
        scope = "this category has" if category not in AGGREGATES else "this regime has"
        what = {"tasks": "task(s)", "categories": "category(ies)"}.get(unit, "source benchmark(s)")
        return f"{scope} {n_blocks} {what}: the Friedman test needs >= 2 {unit} (blocks)"
    if n_models < 2:
        return f"{n_models} ranked model(s): tiers need >= 2 models ranked on every task of the group"
    return ""


def _blocks(category: str, tasks: list[str], by: str, sources: Mapping[str, str] | None) -> tuple[str, dict[str, str]]:
    """(unit, {task: block}) of a group: macro, each task's category ("categories"); micro and a category with
    `by` "tasks", the task itself; a category with `by` "source_benchmarks", each task's source benchmark
    (`sources`; a task without one is its own block)."""
    if category == "macro":
        return "categories", {}
    if category == "micro" or by == "tasks":
        return "tasks", {t: t for t in tasks}
    src = sources or {}
    return "source_benchmarks", {t: (str(src.get(t) or "").strip() or f"task:{t}") for t in tasks}


def _block_matrix(wide: pd.DataFrame, block_of: Mapping[str, str]) -> pd.DataFrame:
    """(n_models, n_blocks): each model's mean over the tasks (columns of `wide`, (n_models, n_tasks)) of each block
    (`block_of` {task: block}); blocks sorted by name."""
    return wide.T.groupby([block_of[str(t)] for t in wide.columns], sort=True).mean().T


def _names(models: list[str], ranks: Mapping[str, float], tier: Mapping[str, int]) -> str:
    """ "m (rank r, tier t), ..." of at most _MAX_NAMED models, "and N more" after."""
    shown = [f"{m} (rank {int(ranks[m])}, tier {tier[m]})" for m in models[:_MAX_NAMED]]
    more = f" and {len(models) - _MAX_NAMED} more" if len(models) > _MAX_NAMED else ""
    return ", ".join(shown) + more


def _notes(result: Tiers, ranks: Mapping[str, float], method: str, unit: str) -> dict[str, str]:
    """{model: tier_note} of a tiered group (module docstring, "Against the rank"): the models ranked below it in a
    better tier or above it in a worse one, with both orders' numbers; the first model of a better tier the test
    does not separate it from. "" for a model whose tier agrees with every rank."""
    pos = {m: i for i, m in enumerate(result.models)}
    tier = {m: int(t) for m, t in zip(result.models, result.tier)}
    if method == "nemenyi":
        what, stat = "mean rank", {m: f"{r:.2f}" for m, r in zip(result.models, result.mean_rank)}
    else:
        what, stat = "mean value", {m: f"{v:.4f}" for m, v in zip(result.models, result.mean_value)}
    heads = {t: next(m for m in result.models if tier[m] == t) for t in sorted(set(tier.values()))}
    out = {}
    for m in result.models:
        r, t, parts = ranks[m], tier[m], []
        for others, where in (
            ([o for o in result.models if ranks[o] > r and tier[o] < t], "ranked below it, in a better tier"),
            ([o for o in result.models if ranks[o] < r and tier[o] > t], "ranked above it, in a worse tier"),
        ):
            if others:
                numbers = ", ".join(f"{o} {stat[o]}" for o in [m, *others[:_MAX_NAMED]])
                parts.append(
                    f"tier {t} at rank {int(r)}: {where}: {_names(others, ranks, tier)}; the tiers order by {what} over "
                    f"the {result.n_blocks} {unit} ({numbers}), the rank by the row's value"
                )
        near = [h for s, h in heads.items() if s < t and not result.sep[pos[h], pos[m]]]
        if near:
            parts.append(
                f"the test does not separate it from {near[0]} (first of tier {tier[near[0]]}) either: a tier ends "
                "at the first model the test separates from the tier's first"
            )
        out[m] = "; ".join(parts)
    return out


def add_tiers(
    board: pd.DataFrame,
    cells: pd.DataFrame,
    confidence: float,
    method: str = "nemenyi",
    category_blocks: str = "tasks",
    sources: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The leaderboard `board` with the TIER_COLUMNS (docs/data-dictionary.md, `leaderboard.parquet`).

    cells: the per-cell table the board ranks (`tables.cell_scores`, less the tasks the ranking excludes); per
    (protocol, regime, category) the models with a rank are tested over the group's blocks (module docstring:
    category rows over their tasks, or their source benchmarks with `category_blocks` "source_benchmarks" and
    `sources` {task: source benchmark}; macro over the category means; micro over every task of the protocol and
    regime) by `method` (TIER_METHODS) at `confidence`. An unranked row of a tiered group gets tier NA and the
    reason "not ranked: ...". Raises AnalysisInputError for a confidence outside (0, 1), an unknown method or
    category_blocks, or a ranked model without a value on a task of its group.
    """
    if not 0 < confidence < 1:
        raise AnalysisInputError(f"analysis.tier_confidence must be in (0, 1), got {confidence}")
    if method not in TIER_METHODS:
        raise AnalysisInputError(f"analysis.tier_method must be one of {sorted(TIER_METHODS)}, got {method!r}")
    if category_blocks not in CATEGORY_BLOCKS:
        raise AnalysisInputError(
            f"analysis.tier_category_blocks must be one of {list(CATEGORY_BLOCKS)}, got {category_blocks!r}"
        )
    out = board.copy()
    floats = ("tier_confidence", "tier_mean_rank", "tier_cd", "friedman_stat", "friedman_p")
    cols: dict[str, list[object]] = {c: [np.nan if c in floats else pd.NA] * len(out) for c in TIER_COLUMNS}
    pos = {idx: i for i, idx in enumerate(out.index)}
    for (protocol, regime, category), g in out.groupby(_GROUP, observed=True, sort=False):
        c = cells[(cells["protocol"] == protocol) & (cells["regime"] == regime)]
        if category not in AGGREGATES:
            c = c[c["category"] == category]
        tasks = sorted(c["task"].unique())
        kind, block_of = _blocks(str(category), tasks, category_blocks, sources)
        if kind == "categories":
            block_of = {str(t): str(k) for t, k in c[["task", "category"]].drop_duplicates().itertuples(index=False)}
        unit = _UNITS[kind]
        n_blocks = len(set(block_of.values()))
        ranked = sorted(g.loc[g["rank"].notna(), "model"].astype(str))
        reason = _undefined(len(ranked), n_blocks, str(category), unit)
        result, notes = None, {}
        if not reason:
            wide = c[c["model"].isin(ranked)].pivot(index="model", columns="task", values="value")
            wide = wide.reindex(index=ranked, columns=tasks)
            if wide.isna().any().any():
                bad = wide.stack(future_stack=True)
                bad = bad[bad.isna()].index[0]
                raise AnalysisInputError(
                    f"tiers: ranked model {bad[0]!r} has no value on task {bad[1]!r} ({protocol}, {regime}, {category})"
                )
            result = _tiers(_block_matrix(wide, block_of), confidence, method, unit)
            reason = result.too_few
            if not reason:
                ranks = dict(zip(g["model"].astype(str), g["rank"].astype(float)))
                notes = _notes(result, ranks, method, unit)
        at = dict(zip(result.models, range(len(result.models)))) if result else {}
        for idx, model in zip(g.index, g["model"].astype(str)):
            i = pos[idx]
            cols["tier_confidence"][i] = confidence
            cols["tier_method"][i] = TIER_METHODS[method]
            cols["tier_n_tasks"][i] = len(tasks)
            cols["tier_n_models"][i] = len(ranked)
            cols["tier_blocks"][i] = unit
            cols["tier_n_blocks"][i] = n_blocks
            cols["tier_note"][i] = ""
            if result is not None:
                cols["friedman_stat"][i] = result.friedman_stat
                cols["friedman_p"][i] = result.friedman_p
                cols["tier_cd"][i] = result.cd
            if reason:
                cols["tier_reason"][i] = reason
                continue
            if result is not None and model in at:
                j = at[model]
                cols["tier"][i] = int(result.tier[j])
                cols["tier_mean_rank"][i] = float(result.mean_rank[j])
                cols["tier_position"][i] = j + 1
                if j + 1 < len(result.models):
                    cols["tier_separable_next"][i] = bool(result.sep[j, j + 1])
                cols["tier_reason"][i] = ""
                cols["tier_note"][i] = notes.get(model, "")
            else:
                cols["tier_reason"][i] = "not ranked: " + (str(g.loc[idx, "incomplete_reason"]) or "incomplete")
    for name in ("tier", "tier_n_models", "tier_n_tasks", "tier_n_blocks", "tier_position"):
        out[name] = pd.array(cols[name], dtype="Int64")  # type: ignore[call-overload]  # NA-holding ints
    out["tier_separable_next"] = pd.array(cols["tier_separable_next"], dtype="boolean")  # type: ignore[call-overload]
    for name in floats:
        out[name] = np.array(cols[name], dtype=float)
    for name in ("tier_reason", "tier_method", "tier_blocks", "tier_note"):
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
    "tier_blocks",
    "tier_n_blocks",
    "n_tier_notes",
)


def rank_separability(board: pd.DataFrame) -> pd.DataFrame:
    """`rank_separability.parquet`: one row per (protocol, regime, category incl. macro and micro) of a tiered
    leaderboard (`add_tiers`): n_models (ranked models tested), n_tasks (tasks of the group), n_adjacent_pairs
    (n_models - 1 neighbours in the tier order, `tier_position`), n_separable_adjacent (neighbours the post-hoc test
    separates, `tier_separable_next`), n_defensible_top (models in tier 1: each could be #1),
    defensible_top_models (comma-joined, in tier order), n_tiers, the Friedman statistic and p-value, the
    critical difference, the confidence, tier_reason where the group has no tiers (then the counts are NA), the
    method, the blocks (tier_blocks, tier_n_blocks) and n_tier_notes (rows whose tier_note says their tier
    contradicts the rank order or a tier's first model). Raises AnalysisInputError for a board without the
    TIER_COLUMNS."""
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
            "tier_blocks": first["tier_blocks"],
            "tier_n_blocks": first["tier_n_blocks"],
            "n_tier_notes": int((g["tier_note"].fillna("") != "").sum()),
        }
        t = g[g["tier"].notna()].sort_values(["tier_position", "model"])
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
            top = t.loc[t["tier"] == 1, "model"].astype(str).tolist()
            row.update(
                n_adjacent_pairs=len(t) - 1,
                n_separable_adjacent=int(t["tier_separable_next"].fillna(False).astype(bool).sum()),
                n_defensible_top=len(top),
                defensible_top_models=",".join(top),
                n_tiers=int(t["tier"].max()),
                tier_reason="",
            )
        rows.append(row)
    out = pd.DataFrame(rows, columns=list(_SEPARABILITY_COLUMNS))
    counts = ("n_models", "n_tasks", "n_adjacent_pairs", "n_separable_adjacent", "n_defensible_top", "n_tiers")
    for name in (*counts, "tier_n_blocks", "n_tier_notes"):
        out[name] = out[name].astype("Int64")
    for name in ("friedman_stat", "friedman_p", "tier_cd", "tier_confidence"):
        out[name] = out[name].astype(float)
    return out
