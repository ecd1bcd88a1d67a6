"""Does pretraining help? Each model against its random-init twin (`geneb.registry.families`: the same architecture,
tokenizer, extraction and probe, seeded random weights), per (model, task) and per category, in every protocol
and regime.

Per task: gain = MCC(model) - MCC(twin), both the seed mean of the score table, with the paired bootstrap over
the task's test rows (`paired.paired_draws`: the same row draws for both cells, Efron & Tibshirani 1993, ch. 13;
the percentile interval and the two-sided bootstrap p-value). The p-values of one (protocol, regime, model) are
Holm-corrected over its tasks (Holm 1979; `statsmodels.stats.multitest.multipletests`), and a task is a
significant win of pretraining when the corrected p < alpha = 1 - confidence and the gain is positive (a loss
when negative).

Per category (and "macro", all tasks): the mean gain over the category's tasks, its interval from a two-level
bootstrap (Davison & Hinkley 1997, sec. 3.8): in each replicate the tasks are drawn with replacement within the
category (`default_rng([seed, 5, crc32(model), crc32(category)])`), then each drawn task's gain is its own
row-bootstrap replicate; a category with one task keeps the row level alone, so its interval is never of zero
width while the rows vary. `n_wins` / `n_losses` of `n_tasks`: the category's tasks won / lost significantly,
`fraction_won` = n_wins / n_tasks.

Without per-row predictions for a cell (a run without `results/predictions`, a cell of several views) the task's
interval and test are NA with the reason in `note`, and so are its category's.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pandas as pd

from geneb.analysis.context import RunContext
from geneb.analysis.inputs.tables import task_categories
from geneb.analysis.stats.paired import paired_draws, read_cell
from geneb.tables.scores import REGIMES, AnalysisInputError

PRETRAINING_GAIN_COLUMNS = (
    "protocol",
    "regime",
    "model",
    "twin",
    "level",
    "category",
    "task",
    "n_tasks",
    "mcc_model",
    "mcc_twin",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "p_bootstrap",
    "p_holm",
    "n_wins",
    "n_losses",
    "fraction_won",
    "n_rows",
    "alpha",
    "confidence",
    "n_resamples",
    "seed",
    "note",
)


def twin_pairs(model_meta: pd.DataFrame, models: list[str]) -> list[tuple[str, str]]:
    """(model, twin) for every twin among `models` whose model is among them too, in `models` order.
    model_meta: the model-metadata frame (`metadata.model_frame`, column `twin_of`)."""
    twin_of = model_meta["twin_of"] if "twin_of" in model_meta.columns else pd.Series(dtype=object)
    return [
        (str(twin_of[m]), m)
        for m in models
        if m in twin_of.index and isinstance(twin_of[m], str) and twin_of[m] in models
    ]


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-corrected p-values of `p` (n,), NaN kept as NaN and left out of the correction (Holm 1979)."""
    from statsmodels.stats.multitest import multipletests

    out = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


def _reference_view(ctx: RunContext, model: str) -> str | None:
    """The view whose rows the score table ranks for `model` (None for a table without views)."""
    if "view" not in ctx.scores.columns:
        return None
    return str(ctx.scores.loc[ctx.scores["model"] == model, "view"].iloc[0])


def _task_draws(ctx: RunContext, key: dict[str, str], views: dict[str, str | None], task: str, files: dict) -> Any:
    """(PairedDraws of model minus twin on `task`, "") or (None, why not)."""
    if ctx.predictions_root is None:
        return None, "no per-row predictions in this run"
    try:
        a, b = (
            read_cell(
                ctx.predictions_root,
                protocol=key["protocol"],
                model=key[who],
                task=task,
                view=views[who],
                regime=key["regime"],
                cache=files,
            )
            for who in ("model", "twin")
        )
        return paired_draws(a, b, task=task, n_resamples=ctx.n_resamples, seed=ctx.seed), ""
    except AnalysisInputError as err:
        return None, str(err)


def _category_interval(ctx: RunContext, model: str, category: str, draws: list[np.ndarray]) -> tuple[float, float]:
    """The two-level bootstrap interval of the mean gain over a category's tasks (module docstring)."""
    d = np.stack(draws)  # (tasks, B)
    n_tasks, n_draws = d.shape
    if n_tasks > 1:
        rng = np.random.default_rng([ctx.seed, 5, zlib.crc32(model.encode()), zlib.crc32(category.encode())])
        picks = rng.integers(0, n_tasks, size=(n_draws, n_tasks))
        means = d[picks, np.arange(n_draws)[:, None]].mean(axis=1)
    else:
        means = d[0]
    alpha = (1 - ctx.confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def _pair_rows(ctx: RunContext, key: dict[str, str], cells: pd.DataFrame, files: dict) -> list[dict[str, Any]]:
    """The task, category and macro rows of one (protocol, regime, model, twin)."""
    wide = cells.pivot(index="task", columns="model", values="value")
    if not {key["model"], key["twin"]} <= set(wide.columns):
        return []
    wide = wide[[key["model"], key["twin"]]].dropna()
    if wide.empty:
        return []
    cats = task_categories(cells)
    views = {who: _reference_view(ctx, key[who]) for who in ("model", "twin")}
    alpha = _alpha(ctx)
    tasks = []
    for task, (mcc_m, mcc_t) in wide.iterrows():
        d, why = _task_draws(ctx, key, views, str(task), files)
        lo, hi = (1 - ctx.confidence) / 2, 1 - (1 - ctx.confidence) / 2
        tasks.append(
            {
                "level": "task",
                "category": cats[task],
                "task": str(task),
                "n_tasks": 1,
                "mcc_model": float(mcc_m),
                "mcc_twin": float(mcc_t),
                "gain": float(mcc_m - mcc_t),
                "gain_ci_low": float(np.quantile(d.draws, lo)) if d is not None else np.nan,
                "gain_ci_high": float(np.quantile(d.draws, hi)) if d is not None else np.nan,
                "p_bootstrap": float(_p_value(d.draws)) if d is not None else np.nan,
                "n_rows": d.n_rows if d is not None else pd.NA,
                "note": why,
                "_draws": d.draws if d is not None else None,
            }
        )
    p_holm = holm(np.array([t["p_bootstrap"] for t in tasks]))
    for t, p in zip(tasks, p_holm):
        significant = bool(np.isfinite(p) and p < alpha)
        t.update(
            p_holm=p,
            n_wins=int(significant and t["gain"] > 0) if np.isfinite(p) else pd.NA,
            n_losses=int(significant and t["gain"] < 0) if np.isfinite(p) else pd.NA,
        )
        t["fraction_won"] = float(t["n_wins"]) if np.isfinite(p) else np.nan
    groups = {c: [t for t in tasks if t["category"] == c] for c in sorted({t["category"] for t in tasks})}
    groups["macro"] = tasks
    rows = [{k: v for k, v in t.items() if k != "_draws"} for t in tasks]
    for category, members in groups.items():
        draws = [t["_draws"] for t in members]
        complete = all(d is not None for d in draws)
        lo, hi = _category_interval(ctx, key["model"], category, draws) if complete else (np.nan, np.nan)
        wins = sum(int(t["n_wins"]) for t in members) if complete else pd.NA
        losses = sum(int(t["n_losses"]) for t in members) if complete else pd.NA
        rows.append(
            {
                "level": "macro" if category == "macro" else "category",
                "category": category,
                "task": pd.NA,
                "n_tasks": len(members),
                "mcc_model": float(np.mean([t["mcc_model"] for t in members])),
                "mcc_twin": float(np.mean([t["mcc_twin"] for t in members])),
                "gain": float(np.mean([t["gain"] for t in members])),
                "gain_ci_low": lo,
                "gain_ci_high": hi,
                "p_bootstrap": np.nan,
                "p_holm": np.nan,
                "n_wins": wins,
                "n_losses": losses,
                "fraction_won": wins / len(members) if complete else np.nan,
                "n_rows": pd.NA,
                "note": "" if complete else next(t["note"] for t in members if t["_draws"] is None),
            }
        )
    return rows


def _alpha(ctx: RunContext) -> float:
    """The significance level of the task tests: 1 - confidence (rounded: 1 - 0.95 is not 0.05 in binary)."""
    return round(1 - ctx.confidence, 12)


def _p_value(draws: np.ndarray) -> float:
    from geneb.analysis.stats.bootstrap import bootstrap_p_value

    return float(bootstrap_p_value(draws))


def pretraining_gain_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `pretraining_gain` (module docstring): {"pretraining_gain": one row per (protocol,
    regime, model) and task, category and macro}, empty (the summary's `pretraining_gain.note` says why) for a
    run without a model and its twin. The summary gets, per (protocol, regime), the macro count of significant
    wins and losses (`pretraining_gain.headlines`)."""
    models = sorted(ctx.used["model"].unique())
    pairs = twin_pairs(ctx.model_meta, models)
    rows: list[dict[str, Any]] = []
    files: dict = {}
    for protocol in sorted(ctx.used["protocol"].unique()):
        for regime in [r for r in REGIMES if r in set(ctx.used["regime"])]:
            cells = ctx.used[(ctx.used["protocol"] == protocol) & (ctx.used["regime"] == regime)]
            for model, twin in pairs:
                key = {"protocol": protocol, "regime": regime, "model": model, "twin": twin}
                rows += [{**key, **r} for r in _pair_rows(ctx, key, cells, files)]
    out = pd.DataFrame(rows, columns=[c for c in PRETRAINING_GAIN_COLUMNS if c not in ("alpha", "confidence", "n_resamples", "seed")])
    out = out.assign(alpha=_alpha(ctx), confidence=ctx.confidence, n_resamples=ctx.n_resamples, seed=ctx.seed)
    out = out[list(PRETRAINING_GAIN_COLUMNS)]
    for col in ("n_wins", "n_losses", "n_rows"):
        out[col] = out[col].astype("Int64")
    out["task"] = out["task"].astype("string")
    ctx.summary["pretraining_gain"] = _summary(out, len(pairs))
    return {"pretraining_gain": out}


def _summary(table: pd.DataFrame, n_pairs: int) -> dict[str, Any]:
    """The summary block: the count of (model, task) pairs won / lost significantly, per (protocol, regime)."""
    if not n_pairs:
        return {
            "n_pairs": 0,
            "note": "no model of this run has its random-init twin beside it: set `twins: true` (config/twins.yaml)",
        }
    heads = []
    tasks = table[table["level"] == "task"]
    for (protocol, regime), g in tasks.groupby(["protocol", "regime"], sort=True):
        tested = g["p_holm"].notna()
        wins, losses = int(g["n_wins"].fillna(0).sum()), int(g["n_losses"].fillna(0).sum())
        heads.append(
            {
                "protocol": protocol,
                "regime": regime,
                "n_tested": int(tested.sum()),
                "n_pairs": len(g),
                "n_wins": wins,
                "n_losses": losses,
                "sentence": (
                    f"pretraining beats its random-init twin significantly on {wins} of {int(tested.sum())} "
                    f"(model, task) pairs and loses on {losses} ({g['model'].nunique()} models; paired bootstrap "
                    f"over test rows, Holm-corrected per model, alpha {1 - float(g['confidence'].iloc[0]):.2f})"
                ),
            }
        )
    return {"n_pairs": n_pairs, "headlines": heads}
