"""Probing views (`geneb.registry.spec`): the view columns of every score and prediction row, and the layer rule.

Every score row names its view (the view columns of the score-table contract, `geneb.tables.scores`): a run without
`views:` carries view "default", the registry's layer (absolute index) and pooling, layer_rule "registry"; a views
run probes each view of the file (layer_rule "fixed") and, per (pooling, rc) with more than one layer, adds the
rows of the layer the inner-CV rule chose (view "Lcv|<pooling>|rc<0|1>", layer_rule "inner_cv", `layer` the chosen
one), per (regime, seed).

The layer rule (`_choose_layers`, docs/protocols.md "Views"): for each candidate layer, out-of-fold predictions of
the protocol's probe (its fixed C, class weights and, under `standardize`, the training split's label-free scaler)
over stratified folds (shuffled with `cv_seed`) of that fit's own training rows only; the layer with the highest
out-of-fold MCC is chosen, ties to the deeper layer. Full regime: the (capped) training split, min(cv_folds,
smallest class) folds. k-shot regimes: the draw's k shots only, min(cv_folds, k) folds (5 at 10-shot), so no label
beyond the draw is used; at 1-shot (one row per class, nothing to fold) there is nothing to choose on and the
deepest requested layer is taken, fixed before any label is seen (`layer_cv_folds` 0). The test split is never read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold

from geneb.probe.fit import PREVALIDATED, TaskArrays, _positions, fit_scaler, probe_thread_limits
from geneb.probe.metrics import seed_summary
from geneb.probe.protocols import Protocol
from geneb.registry.families import family as model_family
from geneb.registry.spec import DEFAULT_VIEW_ID, INNER_CV_LAYER, absolute_layer, layer_depth, view_id

_SEED_COLUMNS = ("seed_mean", "seed_sd", "seed_ci_low", "seed_ci_high", "n_seeds")


def with_view(
    table: pd.DataFrame,
    *,
    view: str,
    layer: int | None,
    depth: float | None,
    pooling: str,
    reverse_complement: bool,
    layer_rule: str,
) -> pd.DataFrame:
    """`table` with the view columns set on every row: view (str), layer (nullable Int64, NA without layers),
    layer_depth (nullable Float64 in [0, 1]), pooling (str), reverse_complement (bool), layer_rule (str), and the
    layer rule's record layer_cv_folds (Int64) / layer_cv_mcc (float), NA here (set on inner_cv rows), so every
    probe table of a run has the same columns in the same order (aggregation requires it)."""
    n = len(table)
    out = table.copy()
    out["view"] = view
    out["layer"] = pd.array([pd.NA if layer is None else int(layer)] * n, dtype="Int64")
    out["layer_depth"] = pd.array([pd.NA if depth is None else float(depth)] * n, dtype="Float64")
    out["pooling"] = pooling
    out["reverse_complement"] = bool(reverse_complement)
    out["layer_rule"] = layer_rule
    out["layer_cv_folds"] = pd.array([pd.NA] * n, dtype="Int64")  # set on inner_cv rows (`_inner_cv_rows`)
    out["layer_cv_mcc"] = np.full(n, np.nan)
    return out


def registry_view(key: dict[str, Any], n_layers: int | None) -> dict[str, Any]:
    """The view columns of a run without `views:` from the file's extraction key: view "default", the registry's
    layer as an absolute index (-1 -> n_layers; NA for an encoder without layers, or when the depth is unknown),
    its depth, pooling ("mean" for k-mer counts: the spectrum is the mean of one-hot k-mer indicators), rc (any mode
    but none), layer_rule "registry"."""
    settings = key.get("settings", {})
    ext = settings.get("extraction", {})
    token_states = model_family(settings.get("family", "kmer"), model=str(key.get("model"))).uses_torch
    raw = ext.get("layer", -1)
    layer = absolute_layer(int(raw), n_layers) if token_states and isinstance(raw, int) else None
    return {
        "view": DEFAULT_VIEW_ID,
        "layer": layer,
        "depth": layer_depth(layer, n_layers),
        "pooling": str(ext.get("pooling", "mean")) if token_states else "mean",
        "reverse_complement": str(ext.get("rc", "none")) != "none",
        "layer_rule": "registry",
    }


def _oof_mcc(protocol: Protocol, X: np.ndarray, y: np.ndarray, n_splits: int, weight: str | None, seed: int) -> float:
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=protocol.cv_seed)
    pred = np.empty_like(y)
    for fit_idx, held_idx in folds.split(X, y):
        lr = protocol.logistic_regression(protocol.C, seed, weight)
        lr.fit(X[fit_idx], y[fit_idx])
        pred[held_idx] = lr.predict(X[held_idx])
    return float(matthews_corrcoef(y, pred))


def _choose_layers(
    X_by_layer: dict[int, np.ndarray], y_train: np.ndarray, rows_train: np.ndarray, protocol: Protocol, shots: dict
) -> dict[tuple[str, int], tuple[int, int, float]]:
    """The layer rule (module docstring) for every (regime, seed) a probe reports: {(regime, seed): (chosen layer,
    folds used (0: no CV possible, the deepest layer taken), its out-of-fold MCC (NaN without CV))}.

    X_by_layer: {absolute layer: training-split embeddings float (n_train, d)} of one (pooling, rc); y_train,
    rows_train: (n_train,) labels and row ids in the same order; shots: the parsed shot file. Only training rows
    are read. Raises ProbeInputError for a shot row that is not in the training split.
    """
    layers = sorted(X_by_layer)
    task = "layer rule"
    full_pos = _positions(rows_train, shots["full_rows"], task, "full", None)
    X = dict(X_by_layer)
    if protocol.standardize:
        X = {layer: fit_scaler(x[full_pos]).transform(x) for layer, x in X.items()}
    sets = [("full", s, full_pos) for s in (protocol.seeds if protocol.report_full_per_seed else [protocol.cv_seed])]
    sets += [
        (d["regime"], int(d["seed"]), _positions(rows_train, d["rows"], task, d["regime"], d["seed"]))
        for d in shots["draws"]
    ]
    out: dict[tuple[str, int], tuple[int, int, float]] = {}
    full_choice: tuple[int, int, float] | None = None
    with probe_thread_limits(), sklearn.config_context(**PREVALIDATED):
        for regime, seed, pos in sets:
            if regime == "full" and full_choice is not None:  # one choice: the full fit is deterministic
                out[(regime, seed)] = full_choice
                continue
            y = y_train[pos]
            n_splits = min(protocol.cv_folds, int(np.bincount(np.unique(y, return_inverse=True)[1]).min()))
            if n_splits < 2:
                out[(regime, seed)] = (layers[-1], 0, float("nan"))
                continue
            weight = protocol.class_weight_for(y)  # this fit's own rows (a k-shot draw: nothing beyond it)
            scores = [_oof_mcc(protocol, X[layer][pos], y, n_splits, weight, seed) for layer in layers]
            best = max(range(len(layers)), key=lambda i: (round(scores[i], 12), layers[i]))  # ties: the deeper
            out[(regime, seed)] = (layers[best], n_splits, scores[best])
            if regime == "full":
                full_choice = out[(regime, seed)]
    return out


def _inner_cv_rows(
    scores: pd.DataFrame,
    preds: pd.DataFrame,
    choices: dict[tuple[str, int], tuple[int, int, float]],
    *,
    pooling: str,
    reverse_complement: bool,
    confidence: float,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The inner_cv rows of one (pooling, rc): for each (regime, seed), the score and prediction rows of the fixed
    view of the chosen layer (`scores` / `preds`: every fixed view of this pooling and rc, with view columns),
    relabelled view "Lcv|<pooling>|rc<0|1>", layer_rule "inner_cv", with `layer_cv_folds` and `layer_cv_mcc`;
    the over-seeds columns recomputed over the chosen rows (`metrics.seed_summary` at `confidence`)."""
    vid = view_id(INNER_CV_LAYER, pooling, reverse_complement)
    picked_s: list[pd.DataFrame] = []
    picked_p: list[pd.DataFrame] = []
    for (regime, seed), (layer, folds, mcc) in choices.items():
        for table, bucket in ((scores, picked_s), (preds, picked_p)):
            rows = table[(table["regime"] == regime) & (table["seed"] == seed) & (table["layer"] == layer)]
            chosen = rows.assign(view=vid, layer_rule="inner_cv", layer_cv_mcc=mcc)
            chosen["layer_cv_folds"] = pd.array([folds] * len(rows), dtype="Int64")
            bucket.append(chosen)
    out_s = pd.concat(picked_s, ignore_index=True)
    for _, idx in out_s.groupby(["regime", "metric"], sort=False).groups.items():
        summary = seed_summary(out_s.loc[idx, "value"].to_numpy(), confidence)
        for col in _SEED_COLUMNS:
            if col in out_s.columns:
                out_s.loc[idx, col] = summary[col.removeprefix("seed_")] if col != "n_seeds" else summary["n"]
    return out_s, pd.concat(picked_p, ignore_index=True)


def view_task(data: TaskArrays, X_train: np.ndarray, X_test: np.ndarray) -> TaskArrays:
    """`data` with one view's embeddings (same rows and labels)."""
    return TaskArrays(data.task, X_train, data.y_train, data.rows_train, X_test, data.y_test, data.rows_test)


def probe_views(
    path: Any,
    view_ids: list[str],
    probe: Any,
    data: TaskArrays,
    protocol: Protocol,
    shots: dict,
    *,
    hdf5_locking: str = "auto",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every view of a views file and add the inner_cv rows. probe: (X_train, X_test) -> (scores, preds), the
    job's probe of one embedding (`run_task`, plus the dedup rows when the protocol asks); data: the task's labels
    and rows in the file's order (its X unused). Returns (scores, preds), every row with the view columns."""
    from geneb.extract.cache import read_view

    all_s: list[pd.DataFrame] = []
    all_p: list[pd.DataFrame] = []
    groups: dict[tuple[str, bool], dict[int, np.ndarray]] = {}
    for vid in view_ids:
        attrs, arrays = read_view(path, vid, hdf5_locking=hdf5_locking)
        layer = None if int(attrs["layer"]) < 0 else int(attrs["layer"])
        n_layers = None if int(attrs["n_layers"]) < 0 else int(attrs["n_layers"])
        pooling, rc = str(attrs["pooling"]), bool(attrs["reverse_complement"])
        scores, preds = probe(arrays["train"], arrays["test"])
        depth = layer_depth(layer, n_layers)
        for tables, table in ((all_s, scores), (all_p, preds)):
            tables.append(
                with_view(
                    table,
                    view=vid,
                    layer_rule="fixed",
                    layer=layer,
                    depth=depth,
                    pooling=pooling,
                    reverse_complement=rc,
                )
            )
        if layer is not None:
            groups.setdefault((pooling, rc), {})[layer] = arrays["train"]
    scores, preds = pd.concat(all_s, ignore_index=True), pd.concat(all_p, ignore_index=True)
    extra_s, extra_p = [], []
    for (pooling, rc), by_layer in groups.items():
        if len(by_layer) < 2:
            continue
        choices = _choose_layers(by_layer, data.y_train, data.rows_train, protocol, shots)
        mine = (scores["pooling"] == pooling) & (scores["reverse_complement"] == rc)
        mine_p = (preds["pooling"] == pooling) & (preds["reverse_complement"] == rc)
        s, p = _inner_cv_rows(
            scores[mine],
            preds[mine_p],
            choices,
            pooling=pooling,
            reverse_complement=rc,
            confidence=protocol.bootstrap.confidence,
        )
        extra_s.append(s)
        extra_p.append(p)
    return pd.concat([scores, *extra_s], ignore_index=True), pd.concat([preds, *extra_p], ignore_index=True)
