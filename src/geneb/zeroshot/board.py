"""The zero-shot leaderboard and how its ranking relates to the probe leaderboard's.

* `zeroshot_leaderboard`: per (model, scorer), each task's primary metric (AUROC for a variant task, paired
  accuracy for a paired one: both 0.5 at chance, so a mean over tasks of both kinds is meaningful) and a `macro`
  row, the mean over the configured zero-shot tasks of the kinds the scorer applies to (its `scope`:
  `geneb.zeroshot.scores.scorer_kinds`; the embedding distances score variant tasks only, by construction). A
  (model, scorer) that lacks a task of its scope, or for which the scorer does not apply to one (a model without a
  language-model head for `llr`), is incomplete: its macro value is NaN and it is not ranked, and
  `incomplete_reason` names the tasks and why (a not-applicable reason is shown as given), so a model never wins on
  the tasks it happens to have. Macro rows are ranked among the entries of the same scope (their means cover the
  same tasks), task rows among the entries of the task; 1 = best, ties sharing the lowest rank.
* `zeroshot_vs_probe`: Kendall's tau-b (scipy.stats.kendalltau) between each scorer's macro zero-shot ranking
  and the probe leaderboard's macro ranking of the same models, per (protocol, regime), with a seeded percentile
  bootstrap CI over models (models resampled with replacement; resamples with fewer than 3 distinct models or a
  constant side are skipped and counted).

Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.ranking.leaderboard import rank_desc
from geneb.zeroshot.scores import scorer_kinds

#: the metric that ranks a task of each kind (geneb.zeroshot.metrics)
PRIMARY_METRIC: Mapping[str, str] = {"variant": "auroc", "paired": "paired_accuracy"}
MACRO = "macro"
#: how many tasks an `incomplete_reason` names before "and N more"
MAX_NAMED = 5

LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "model",
    "scorer",
    "task",
    "kind",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_tasks",
    "n_tasks_expected",
    "scope",
    "complete",
    "rank",
    "incomplete_reason",
)


def zeroshot_leaderboard(
    metrics: pd.DataFrame,
    task_kinds: Mapping[str, str],
    not_applicable: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The zero-shot leaderboard (module docstring) from the metrics table.

    metrics: `zeroshot_scores.parquet` rows (columns model, task, scorer, metric, value, ci_low, ci_high, n, group);
    only the `group == "all"` rows of each task's primary metric are read. task_kinds: {task: kind} of every
    configured zero-shot task (what a complete entry must have). not_applicable: rows model, task, scorer, reason
    (`geneb.zeroshot.scores.NotApplicable`); None = none. Returns LEADERBOARD_COLUMNS, per-task rows then the
    macro row of each (model, scorer), sorted by scorer, rank. Raises ValueError for a task of unknown kind or a
    metrics row of a task not in `task_kinds` (its kind decides the metric, so it cannot be guessed).
    """
    unknown_kinds = {t: k for t, k in task_kinds.items() if k not in PRIMARY_METRIC}
    if unknown_kinds:
        raise ValueError(
            f"zero-shot leaderboard: tasks of unknown kind {unknown_kinds} (kinds: {list(PRIMARY_METRIC)})"
        )
    stray = sorted(set(metrics["task"]) - set(task_kinds))
    if stray:
        raise ValueError(f"zero-shot leaderboard: metrics for tasks that are not configured: {stray}")
    na = not_applicable if not_applicable is not None else pd.DataFrame(columns=["model", "task", "scorer", "reason"])
    primary = metrics[
        (metrics["group"] == "all")
        & (metrics["metric"] == metrics["task"].map(lambda t: PRIMARY_METRIC[task_kinds[t]]))
    ]
    entries = sorted(
        {(m, s) for m, s in zip(primary["model"], primary["scorer"])}
        | {(m, s) for m, s in zip(na["model"], na["scorer"])}
    )
    reasons = {(m, t, s): r for m, t, s, r in zip(na["model"], na["task"], na["scorer"], na["reason"])}
    by_key = {(r.model, r.scorer, r.task): r for r in primary.itertuples(index=False)}
    rows: list[dict[str, object]] = []
    for model, scorer in entries:
        values, lacks = [], []
        kinds = scorer_kinds(scorer)
        scope = "+".join(k for k in ("variant", "paired") if k in kinds and k in task_kinds.values())
        for task, kind in task_kinds.items():
            if kind not in kinds:
                continue  # out of the scorer's scope by construction (listed in not_applicable, not held against it)
            hit = by_key.get((model, scorer, task))
            if hit is None:
                lacks.append(f"{task} ({reasons.get((model, task, scorer), 'not scored')})")
                continue
            values.append(float(hit.value))
            rows.append(
                {
                    "model": model,
                    "scorer": scorer,
                    "task": task,
                    "kind": kind,
                    "metric": PRIMARY_METRIC[kind],
                    "value": float(hit.value),
                    "ci_low": float(hit.ci_low),
                    "ci_high": float(hit.ci_high),
                    "n": int(hit.n),
                    "n_tasks": 1,
                    "n_tasks_expected": 1,
                    "scope": kind,
                    "complete": bool(np.isfinite(hit.value)),
                    "incomplete_reason": "" if np.isfinite(hit.value) else "metric undefined (see the metrics note)",
                }
            )
        expected = sum(1 for k in task_kinds.values() if k in kinds)
        complete = bool(values) and not lacks and all(np.isfinite(values))
        reason = ""
        if lacks:
            named = "; ".join(lacks[:MAX_NAMED]) + (
                f"; and {len(lacks) - MAX_NAMED} more" if len(lacks) > MAX_NAMED else ""
            )
            reason = f"lacks {len(lacks)} of {expected} tasks: {named}"
        elif not values:
            reason = "no configured task is of a kind this scorer applies to"
        rows.append(
            {
                "model": model,
                "scorer": scorer,
                "task": MACRO,
                "kind": MACRO,
                "metric": "mean_primary",
                "value": float(np.mean(values)) if complete else np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "n": len(values),
                "n_tasks": len(values),
                "n_tasks_expected": expected,
                "scope": scope,
                "complete": complete,
                "incomplete_reason": reason,
            }
        )
    board = pd.DataFrame(rows, columns=[c for c in LEADERBOARD_COLUMNS if c != "rank"])
    board["rank"] = pd.Series(pd.NA, index=board.index, dtype="Int64")
    for _, part in board[board["complete"]].groupby(["task", "scope"]):
        board.loc[part.index, "rank"] = rank_desc(part["value"])
    board = board[list(LEADERBOARD_COLUMNS)]
    order = board.assign(_macro=board["task"] == MACRO).sort_values(
        ["_macro", "task", "rank", "model", "scorer"], na_position="last", kind="mergesort"
    )
    return order.drop(columns="_macro").reset_index(drop=True)


def zeroshot_vs_probe(
    board: pd.DataFrame,
    probe_leaderboard: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Kendall's tau-b between each scorer's zero-shot macro ranking and the probe macro ranking, per protocol and
    regime, over the models complete in both.

    board: `zeroshot_leaderboard` output; probe_leaderboard: `leaderboard.parquet` rows (protocol, regime, model,
    category, value, complete). Returns columns scorer, protocol, regime, tau, p_value, ci_low, ci_high, n_models,
    models, n_boot, n_boot_used, seed. Fewer than 3 shared models give NaN tau with n_models saying why.
    """
    zs = board[(board["task"] == MACRO) & board["complete"]]
    probe = probe_leaderboard[(probe_leaderboard["category"] == MACRO) & probe_leaderboard["complete"].astype(bool)]
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for scorer, zpart in zs.groupby("scorer", sort=True):
        zvals = dict(zip(zpart["model"], zpart["value"]))
        for (protocol, regime), ppart in probe.groupby(["protocol", "regime"], sort=True):
            pvals = dict(zip(ppart["model"], ppart["value"]))
            models = sorted(set(zvals) & set(pvals))
            x = np.array([zvals[m] for m in models], dtype=float)
            y = np.array([pvals[m] for m in models], dtype=float)
            tau, p, lo, hi, used = np.nan, np.nan, np.nan, np.nan, 0
            if len(models) >= 3:
                res = stats.kendalltau(x, y, variant="b")
                tau, p = float(res.statistic), float(res.pvalue)
                lo, hi, used = _bootstrap_tau(x, y, rng, n_boot, ci)
            out.append(
                {
                    "scorer": scorer,
                    "protocol": protocol,
                    "regime": regime,
                    "tau": tau,
                    "p_value": p,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n_models": len(models),
                    "models": ",".join(models),
                    "n_boot": n_boot,
                    "n_boot_used": used,
                    "seed": seed,
                }
            )
    return pd.DataFrame(out, columns=_VS_COLUMNS)


_VS_COLUMNS: list[str] = [
    "scorer",
    "protocol",
    "regime",
    "tau",
    "p_value",
    "ci_low",
    "ci_high",
    "n_models",
    "models",
    "n_boot",
    "n_boot_used",
    "seed",
]


def _bootstrap_tau(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_boot: int, ci: float
) -> tuple[float, float, int]:
    """Percentile CI of tau-b over models resampled with replacement; skipped resamples are not counted."""
    taus = []
    n = len(x)
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        if len(set(idx.tolist())) < 3 or np.ptp(x[idx]) == 0 or np.ptp(y[idx]) == 0:
            continue
        taus.append(float(stats.kendalltau(x[idx], y[idx], variant="b").statistic))
    if not taus:
        return np.nan, np.nan, 0
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(taus, [alpha, 1 - alpha])
    return float(lo), float(hi), len(taus)
