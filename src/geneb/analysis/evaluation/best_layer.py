"""The best hidden-state layer of each model per category, as relative depth, and what it gains over the
registry's layer.

Input: the views of layer rule "fixed" (one per requested layer) that share the pooling and reverse-complement
flag of the model's reference view (`choices.reference_views`), and the reference view itself (the registry's
layer). Per (protocol, regime, model) and per category (and macro, the mean of the category scores): the
category score of every layer over the tasks every layer has; the best layer is the arg-max (the shallower on a
tie), reported as `best_depth` = layer / n_layers (the rows' `layer_depth`); `gain` = its score minus the
registry layer's score on the same tasks. Both get percentile CIs from the task bootstrap
(`bootstrap.category_replicates`: tasks drawn with replacement within each category by
`default_rng([seed, 2, category])`, the best layer chosen again in every replicate).

The gain is chosen on the test scores, so it is optimistic: read it as an upper bound of what a layer choice
can buy; the layer rule "inner_cv" (chosen on training data) is the honest comparison, and the sensitivity
analysis reports it. `n_tasks_better` / `n_tasks_worse`: the category's tasks on which the best layer's full-regime
cell beats / loses to the registry layer's in the paired test over test items (`paired.compare_cells`:
two-sided bootstrap p < `analysis.sensitivity.alpha`); NA without predictions or in the k-shot regimes.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from geneb.analysis.context import RunContext
from geneb.analysis.evaluation import choices
from geneb.analysis.evaluation.sensitivity import view_cells
from geneb.analysis.inputs.tables import task_categories
from geneb.analysis.stats.bootstrap import category_replicates
from geneb.analysis.stats.paired import compare_cells, read_cell
from geneb.tables.scores import REGIMES, AnalysisInputError

BEST_LAYER_COLUMNS = (
    "protocol",
    "regime",
    "model",
    "category",
    "n_layers",
    "n_tasks",
    "best_layer",
    "best_depth",
    "depth_ci_low",
    "depth_ci_high",
    "best_view",
    "mcc_best",
    "registry_view",
    "registry_layer",
    "registry_depth",
    "mcc_registry",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "n_tasks_better",
    "n_tasks_worse",
    "n_resamples",
    "seed",
)


def layer_views(views: pd.DataFrame, model: str, ref_view: str) -> pd.DataFrame:
    """The model's fixed-layer views with its reference view's pooling and reverse-complement flag, by layer."""
    g = views[views["model"] == model]
    r = g[g["view"] == ref_view].iloc[0]
    same_pool = g["pooling"].isna() if pd.isna(r["pooling"]) else g["pooling"] == r["pooling"]
    sel = (g["layer_rule"] == "fixed") & g["layer"].notna() & same_pool
    sel &= g["reverse_complement"] == r["reverse_complement"]
    return g[sel].drop_duplicates("layer").sort_values("layer")


def _paired_counts(
    ctx: RunContext, key: dict[str, str], tasks: list[str], best: str, ref: str, memo: dict[Any, Any]
) -> tuple[Any, Any]:
    """(tasks where view `best` beats `ref`, tasks where it loses) in the paired test; NA without predictions or
    in a k-shot regime. memo: test results and prediction files of earlier calls (filled here)."""
    if ctx.predictions_root is None or key["regime"] != "full":
        return pd.NA, pd.NA
    alpha = float(ctx.settings["sensitivity"]["alpha"])
    files = memo.setdefault("files", {})
    better = worse = 0
    for task in tasks:
        test_key = (*key.values(), task, best, ref)
        if test_key not in memo:
            try:
                a, b = (read_cell(ctx.predictions_root, task=task, view=v, cache=files, **key) for v in (best, ref))
            except AnalysisInputError:
                return pd.NA, pd.NA
            memo[test_key] = compare_cells(
                a, b, task=task, n_resamples=ctx.n_resamples, seed=ctx.seed, confidence=ctx.confidence
            )
        r = memo[test_key]
        better += int(r["p_bootstrap"] < alpha and r["difference"] > 0)
        worse += int(r["p_bootstrap"] < alpha and r["difference"] < 0)
    return better, worse


def _model_rows(
    ctx: RunContext, tag: dict[str, str], lv: pd.DataFrame, ref_view: str, cells: pd.DataFrame, memo: dict[Any, Any]
) -> list:
    """The rows of one (protocol, regime, model): its layers' and reference view's cells -> per category + macro."""
    cats = task_categories(cells)
    by_view = cells.pivot(index="view", columns="task", values="value")
    want = [*lv["view"], ref_view]
    if not set(want) <= set(by_view.index):
        return []
    m = by_view.loc[want].dropna(axis=1)
    if m.shape[1] == 0:
        return []
    m.index = [f"L{i}" for i in range(len(lv))] + ["registry"]
    rep = category_replicates(m, cats, None, n_resamples=ctx.n_resamples, seed=ctx.seed, resample_tasks=True)
    n = len(lv)
    depth = lv["layer_depth"].astype(float).to_numpy()
    lo, hi = (1 - ctx.confidence) / 2, 1 - (1 - ctx.confidence) / 2
    rows = []
    for c, cat in enumerate(rep.columns):
        best = int(np.argmax(rep.point[:n, c]))
        picks = np.argmax(rep.draws[:, :n, c], axis=1)
        gains = rep.draws[np.arange(len(picks)), picks, c] - rep.draws[:, n, c]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            d_lo, d_hi = np.nanquantile(depth[picks], [lo, hi]) if np.isfinite(depth).any() else (np.nan, np.nan)
        tasks = list(m.columns) if cat == "macro" else [t for t in m.columns if cats[t] == cat]
        better, worse = _paired_counts(ctx, tag, tasks, lv["view"].iloc[best], ref_view, memo)
        rows.append(
            {
                "category": cat,
                "n_layers": n,
                "n_tasks": len(tasks),
                "best_layer": int(lv["layer"].iloc[best]),
                "best_depth": float(depth[best]),
                "depth_ci_low": float(d_lo),
                "depth_ci_high": float(d_hi),
                "best_view": str(lv["view"].iloc[best]),
                "mcc_best": float(rep.point[best, c]),
                "mcc_registry": float(rep.point[n, c]),
                "gain": float(rep.point[best, c] - rep.point[n, c]),
                "gain_ci_low": float(np.quantile(gains, lo)),
                "gain_ci_high": float(np.quantile(gains, hi)),
                "n_tasks_better": better,
                "n_tasks_worse": worse,
            }
        )
    return rows


def best_layer_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `best_layer` (module docstring): {"best_layer": one row per (protocol, regime,
    model, category) of the models with at least 2 fixed layers}; empty (and the summary's `best_layer.note`
    says why) for a run without them."""
    scores = ctx.view_scores if ctx.view_scores is not None else ctx.scores
    views = choices.view_table(scores)
    refv = choices.reference_views(views, ctx.settings["sensitivity"]["reference"])
    rows: list[dict[str, Any]] = []
    n_models = 0
    for model, ref_view in refv.items():
        lv = layer_views(views, model, ref_view)
        if len(lv) < 2:
            continue
        n_models += 1
        r = views[(views["model"] == model) & (views["view"] == ref_view)].iloc[0]
        memo: dict[Any, Any] = {}  # one model's prediction files and tests, read and run once
        for protocol in sorted(scores["protocol"].unique()):
            cells = pd.concat(
                # a views run writes no registry rows: its reference view is then one of the layers, read once
                [view_cells(ctx, {model: v}, protocol).assign(view=v) for v in dict.fromkeys([*lv["view"], ref_view])],
                ignore_index=True,
            )
            for regime in [x for x in REGIMES if x in set(cells["regime"])]:
                tag = {"protocol": protocol, "regime": regime, "model": model}
                for row in _model_rows(ctx, tag, lv, ref_view, cells[cells["regime"] == regime], memo):
                    rows.append(
                        {
                            **tag,
                            **row,
                            "registry_view": ref_view,
                            "registry_layer": r["layer"],
                            "registry_depth": r["layer_depth"],
                            "n_resamples": ctx.n_resamples,
                            "seed": ctx.seed,
                        }
                    )
    ctx.summary["best_layer"] = {"n_models": n_models}
    if not n_models:
        ctx.summary["best_layer"]["note"] = (
            "no model has two or more fixed-layer views: run with `views: {layers: ...}` (config/sensitivity.yaml)"
        )
    out = pd.DataFrame(rows, columns=list(BEST_LAYER_COLUMNS))
    for col in ("registry_layer", "n_tasks_better", "n_tasks_worse"):
        out[col] = out[col].astype("Int64")
    out["registry_depth"] = out["registry_depth"].astype("Float64")
    return {"best_layer": out}
