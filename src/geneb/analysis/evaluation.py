"""How much of a ranking is the evaluation choice: views, sensitivity to the protocol, and the best layer.

How much of a ranking is the protocol: the leaderboard under each evaluation choice against the reference one.

For each evaluation choice (`inputs.CHOICES`: pooling, layer rule, probe protocol, reverse complement) and each
alternative value the run holds, every model is scored on the view that differs from its reference view in that
choice alone (`inputs.choice_views`; the reference: `analysis.sensitivity.reference`). Per regime, over the
models complete under both and the tasks both have:

* `kendall_tau`: Kendall's τ-b between the two macro-MCC rankings (`scipy.stats.kendalltau`), with its p-value;
* `winners_changed`: the categories whose best model differs (a tie counts as a change only when the sets of
  tied best models differ);
* percentile CIs of both from the two-level bootstrap (`bootstrap.two_level_replicates`: tasks drawn with
  replacement within each category by `default_rng([seed, 2, category])`, then the test rows of each drawn task
  by `default_rng([seed, 1, crc32(task)])`, each model's MCC recomputed from its per-row predictions of that view;
  the same draws for both leaderboards; seed `analysis.bootstrap.seed`, recorded with `n_resamples` in every row).
  Where a category has one task and a model lacks that task's predictions nothing varies: the CIs are NaN and
  `ci_reason` says why, never a zero-width interval.

Tables: `sensitivity` (one row per (regime, choice, alternative), with a headline sentence) and
`sensitivity_leaderboard` (each model's category and macro MCC and rank under the reference and each
alternative; the `sensitivity` figure draws it). A run with one view and one protocol has no alternative: both
tables are empty and the summary's `sensitivity.note` says why.

The best hidden-state layer of each model per category, as relative depth, and what it gains over the
registry's layer.

Input: the views of layer rule "fixed" (one per requested layer) that share the pooling and reverse-complement
flag of the model's reference view (`inputs.reference_views`), and the reference view itself (the registry's
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

Evaluation choices: which view (pooling, layer, protocol) a score comes from, how much of a ranking each choice
moves (sensitivity), and the best layer per model.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import geneb.analysis.inputs as inputs
from geneb.analysis.inputs import RunContext, task_categories, task_matrix
from geneb.analysis.ranking import prepare_cells
from geneb.analysis.stats import category_replicates, compare_cells, load_predictions, read_cell, two_level_replicates
from geneb.tables.scores import REGIMES, AnalysisInputError

#: the columns of the sensitivity table
_SENSITIVITY_COLUMNS = (
    "protocol",
    "regime",
    "choice",
    "reference",
    "alternative",
    "n_models",
    "n_models_unaffected",
    "n_tasks",
    "n_categories",
    "kendall_tau",
    "kendall_p",
    "tau_ci_low",
    "tau_ci_high",
    "winners_changed",
    "winners_changed_ci_low",
    "winners_changed_ci_high",
    "ci_reason",
    "changed_categories",
    "headline",
    "n_resamples",
    "seed",
    "note",
)
_BOARD_COLUMNS = ("protocol", "regime", "choice", "alternative", "model", "category", "value", "rank")
_LABEL = {
    "pooling": "pooling",
    "layer_rule": "layer rule",
    "protocol": "protocol",
    "reverse_complement": "reverse complement",
}


def _value_label(choice: str, value: Any) -> str:
    """How a choice's value is written in tables and sentences (reverse complement: "off" / "on")."""
    if choice == "reverse_complement":
        return "on" if bool(value) else "off"
    return str(value)


def _view_cells(ctx: RunContext, views: dict[str, str], protocol: str) -> pd.DataFrame:
    """The seed-mean cells of `protocol` for the (model, view) pairs of `views`, contamination and one-class test
    splits handled as for the leaderboard (`contamination.prepare_cells`)."""
    scores = ctx.view_scores if ctx.view_scores is not None else ctx.scores
    rows = inputs.select_views(scores[scores["protocol"] == protocol], views)
    if rows.empty or not (rows["metric"] == ctx.settings["metric"]).any():
        return pd.DataFrame(columns=["protocol", "model", "task", "category", "regime", "value"])
    return prepare_cells(rows, ctx.model_meta, ctx.task_meta, ctx.settings)[0]


def _winners(values: np.ndarray) -> frozenset[int]:
    """Positions of the best value (several when tied); empty when all are NaN."""
    if np.all(np.isnan(values)):
        return frozenset()
    return frozenset(np.flatnonzero(values == np.nanmax(values)).tolist())


def _changed(ref: np.ndarray, alt: np.ndarray) -> list[int]:
    """Category columns (of (M, C) point or draw arrays) whose winner set differs."""
    return [c for c in range(ref.shape[1]) if _winners(ref[:, c]) != _winners(alt[:, c])]


def _tau(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant ranking: tau is NaN, as scipy says
        res = stats.kendalltau(a, b)
    return float(res.statistic), float(res.pvalue)


def _rank(values: pd.Series) -> pd.Series:
    return values.rank(ascending=False, method="min").astype("Int64")


def _board(point: np.ndarray, models: list[str], columns: tuple[str, ...], tag: dict[str, Any]) -> pd.DataFrame:
    frames = []
    for c, cat in enumerate(columns):
        v = pd.Series(point[:, c], index=models)
        frames.append(
            pd.DataFrame({**tag, "model": models, "category": cat, "value": v.to_numpy(), "rank": _rank(v).to_numpy()})
        )
    return pd.concat(frames, ignore_index=True)


def _compare_leaderboards(
    ref: pd.DataFrame,
    alt: pd.DataFrame,
    task_category: pd.Series,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    predictions: tuple[Mapping[tuple[str, str], pd.DataFrame], Mapping[tuple[str, str], pd.DataFrame]] | None = None,
    regime: str = "full",
) -> tuple[dict[str, Any], np.ndarray | None, list[str], tuple[str, ...]]:
    """Kendall τ-b of the macro rankings and the changed category winners of two model x task matrices.

    ref, alt: (models, tasks) MCC, NaN where missing; only the models complete on the tasks both have are compared.
    predictions: ({(model, task): per-row predictions of the reference view}, {... of the alternative view}) for
    the row level of the bootstrap (None: tasks only); regime: the regime of those rows.
    Returns (statistics, point (2M, C + 1) with the reference's models first, the models, the column labels).
    Statistics: n_models, n_tasks, n_categories, kendall_tau, kendall_p, tau_ci_low/high, winners_changed and its
    CI, ci_reason ("" when the CIs are defined; else why not, and the CIs are NaN), changed_categories; with fewer
    than 2 models the statistics are NaN and `note` says so.
    """
    tasks = sorted(set(ref.columns) & set(alt.columns))
    r, a = ref[tasks].dropna(), alt[tasks].dropna()
    models = sorted(set(r.index) & set(a.index))
    out: dict[str, Any] = {"n_models": len(models), "n_tasks": len(tasks), "note": ""}
    if len(models) < 2 or not tasks:
        out.update(n_categories=0, kendall_tau=np.nan, kendall_p=np.nan, tau_ci_low=np.nan, tau_ci_high=np.nan)
        out.update(winners_changed=pd.NA, winners_changed_ci_low=np.nan, winners_changed_ci_high=np.nan)
        out.update(ci_reason="fewer than 2 models", changed_categories="")
        out.update(note="fewer than 2 models complete under both choices")
        return out, None, models, ()
    stacked = pd.concat([r.loc[models], a.loc[models]])
    stacked.index = [f"ref:{m}" for m in models] + [f"alt:{m}" for m in models]
    stacked_preds = {
        (f"{tag}:{k[0]}", k[1]): v
        for tag, preds in zip(("ref", "alt"), predictions or ({}, {}))
        for k, v in preds.items()
        if k[0] in models and k[1] in tasks
    }
    rep, _ = two_level_replicates(
        stacked, task_category, stacked_preds, regime, n_resamples=n_resamples, seed=seed, resample_tasks=True
    )
    m = len(models)
    tau, p = _tau(rep.point[:m, -1], rep.point[m:, -1])
    changed = _changed(rep.point[:m, :-1], rep.point[m:, :-1])
    taus = np.array([_tau(d[:m, -1], d[m:, -1])[0] for d in rep.draws])
    counts = np.array([len(_changed(d[:m, :-1], d[m:, :-1])) for d in rep.draws], dtype=float)
    lo, hi = (1 - confidence) / 2, 1 - (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every replicate undefined: NaN
        t_lo, t_hi = np.nanquantile(taus, [lo, hi]) if np.isfinite(taus).any() else (np.nan, np.nan)
    w_lo, w_hi = float(np.quantile(counts, lo)), float(np.quantile(counts, hi))
    reason = rep.column_reason(len(rep.columns) - 1)  # the macro: defined only when every category varies
    if reason:
        t_lo = t_hi = w_lo = w_hi = np.nan
    out.update(
        n_categories=len(rep.categories),
        kendall_tau=tau,
        kendall_p=p,
        tau_ci_low=float(t_lo),
        tau_ci_high=float(t_hi),
        winners_changed=len(changed),
        winners_changed_ci_low=w_lo,
        winners_changed_ci_high=w_hi,
        ci_reason=reason,
        changed_categories="; ".join(rep.categories[c] for c in changed),
    )
    return out, rep.point, models, rep.columns


def _headline(choice: str, reference: str, alternative: str, stats_: dict[str, Any], confidence: float) -> str:
    """The report's sentence, e.g. "pooling mean -> last changes 4 of 13 category winners (...)"."""
    if pd.isna(stats_["kendall_tau"]) and stats_["n_models"] < 2:
        return f"{_LABEL[choice]} {reference} -> {alternative}: not compared ({stats_['note']})"
    ci = (
        f"{confidence:.0%} CI undefined: {stats_['ci_reason']}"
        if stats_.get("ci_reason")
        else f"{confidence:.0%} CI [{stats_['tau_ci_low']:.2f}, {stats_['tau_ci_high']:.2f}]"
    )
    return (
        f"{_LABEL[choice]} {reference} -> {alternative} changes {stats_['winners_changed']} of "
        f"{stats_['n_categories']} category winners (Kendall τ of the macro ranking {stats_['kendall_tau']:.2f}, "
        f"{ci}; {stats_['n_models']} models, {stats_['n_tasks']} tasks)"
    )


def _view_predictions(
    ctx: RunContext, views: Mapping[str, str], protocol: str, cache: dict[str, dict[tuple[str, str], pd.DataFrame]]
) -> dict[tuple[str, str], pd.DataFrame]:
    """{(model, task): per-row predictions of `protocol` for the model's view in `views`} from the run's
    `results/predictions` (`bootstrap.load_predictions`; empty without a predictions folder). cache: {protocol:
    loaded frames}, filled on first use so each file is read once per analysis."""
    if ctx.predictions_root is None:
        return {}
    if protocol not in cache:
        scores = ctx.view_scores if ctx.view_scores is not None else ctx.scores
        on = scores[scores["protocol"] == protocol]
        cache[protocol] = load_predictions(
            ctx.predictions_root, protocol, sorted(on["model"].unique()), sorted(on["task"].unique())
        )
    return {k: inputs.select_view(v, views[k[0]]) for k, v in cache[protocol].items() if k[0] in views}


def sensitivity_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `sensitivity` (module docstring): {"sensitivity", "sensitivity_leaderboard"}."""
    s, run = ctx.settings["sensitivity"], ctx
    scores = ctx.view_scores if ctx.view_scores is not None else ctx.scores
    views = inputs.view_table(scores)
    protocols = sorted(scores["protocol"].unique())
    ref = dict(s["reference"])
    summary: dict[str, Any] = {"reference": dict(ref), "headlines": []}
    if ref["protocol"] not in protocols:
        summary["reference_protocol_note"] = f"{ref['protocol']} not in the run; the reference is {protocols[0]}"
        ref["protocol"] = protocols[0]
    refv = inputs.reference_views(views, ref)
    ref_cells = _view_cells(ctx, refv, ref["protocol"])
    cache: dict[str, dict[tuple[str, str], pd.DataFrame]] = {}
    ref_preds = _view_predictions(ctx, refv, ref["protocol"], cache)
    cats = task_categories(scores)
    rows, boards = [], []
    conf = run.confidence
    for regime in [r for r in REGIMES if r in set(ref_cells["regime"])]:
        ref_m = task_matrix(ref_cells, regime)
        tag = {"protocol": ref["protocol"], "regime": regime}
        complete = ref_m.dropna()
        if len(complete):
            rep = category_replicates(complete, cats, None, n_resamples=1, seed=run.seed)
            ref_label = f"{ref['pooling']}, {ref['layer_rule']}, rc {_value_label('reverse_complement', ref['reverse_complement'])}"
            boards.append(
                _board(
                    rep.point,
                    list(complete.index),
                    rep.columns,
                    {**tag, "choice": "reference", "alternative": ref_label},
                )
            )
        for choice in inputs.CHOICES:
            for value in inputs.choice_values(views, choice, protocols, ref):
                altv, unaffected = inputs.choice_views(views, refv, choice, value)
                alt_protocol = value if choice == "protocol" else ref["protocol"]
                alt_cells = _view_cells(ctx, altv, alt_protocol)
                alt_preds = _view_predictions(ctx, altv, alt_protocol, cache)
                alt_cells = alt_cells[alt_cells["regime"] == regime] if len(alt_cells) else alt_cells
                alt_m = task_matrix(alt_cells, regime) if len(alt_cells) else pd.DataFrame()
                st, point, models, cols = _compare_leaderboards(
                    ref_m,
                    alt_m,
                    cats,
                    n_resamples=run.n_resamples,
                    seed=run.seed,
                    confidence=conf,
                    predictions=(ref_preds, alt_preds),
                    regime=regime,
                )
                r_lab, a_lab = _value_label(choice, ref[choice]), _value_label(choice, value)
                sentence = _headline(choice, r_lab, a_lab, st, conf)
                rows.append(
                    {
                        **tag,
                        "choice": choice,
                        "reference": r_lab,
                        "alternative": a_lab,
                        **st,
                        "n_models_unaffected": len(set(unaffected) & set(models)),
                        "headline": sentence,
                        "n_resamples": run.n_resamples,
                        "seed": run.seed,
                    }
                )
                summary["headlines"].append({**tag, "choice": choice, "sentence": sentence})
                if point is not None:
                    m = len(models)
                    boards.append(_board(point[m:], models, cols, {**tag, "choice": choice, "alternative": a_lab}))
    if not rows:
        summary["note"] = (
            "no alternative view or protocol in this run (one view per model, one protocol): run with a `views:` "
            "section (config/sensitivity.yaml) or a second protocol to see how much of the ranking they move"
        )
        boards = []
    ctx.summary["sensitivity"] = summary
    table = pd.DataFrame(rows, columns=list(_SENSITIVITY_COLUMNS))
    board = pd.concat(boards, ignore_index=True) if boards else pd.DataFrame(columns=list(_BOARD_COLUMNS))
    return {"sensitivity": table, "sensitivity_leaderboard": board}


_BEST_LAYER_COLUMNS = (
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


def _layer_views(views: pd.DataFrame, model: str, ref_view: str) -> pd.DataFrame:
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
    views = inputs.view_table(scores)
    refv = inputs.reference_views(views, ctx.settings["sensitivity"]["reference"])
    rows: list[dict[str, Any]] = []
    n_models = 0
    for model, ref_view in refv.items():
        lv = _layer_views(views, model, ref_view)
        if len(lv) < 2:
            continue
        n_models += 1
        r = views[(views["model"] == model) & (views["view"] == ref_view)].iloc[0]
        memo: dict[Any, Any] = {}  # one model's prediction files and tests, read and run once
        for protocol in sorted(scores["protocol"].unique()):
            cells = pd.concat(
                # a views run writes no registry rows: its reference view is then one of the layers, read once
                [_view_cells(ctx, {model: v}, protocol).assign(view=v) for v in dict.fromkeys([*lv["view"], ref_view])],
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
    out = pd.DataFrame(rows, columns=list(_BEST_LAYER_COLUMNS))
    for col in ("registry_layer", "n_tasks_better", "n_tasks_worse"):
        out[col] = out[col].astype("Int64")
    out["registry_depth"] = out["registry_depth"].astype("Float64")
    return {"best_layer": out}
