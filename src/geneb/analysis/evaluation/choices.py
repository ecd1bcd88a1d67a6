"""Views and evaluation choices: which embedding view of a model a score or prediction row comes from, the
reference view every leaderboard uses, and the alternative views the sensitivity analysis swaps in.

A *view* is one way of turning a model's forward pass into a vector: a hidden-state layer, a pooling and whether
the reverse complement was averaged in. Score and prediction rows of a run with a `views:` section carry the
columns VIEW_COLUMNS (docs/data-dictionary.md, stage 3): `view` (the id, "default" in a run without views),
`layer` (absolute 0-based hidden-state index, NA without layers), `layer_depth` (layer / n_layers in [0, 1]),
`pooling`, `reverse_complement`, `layer_rule` ("registry", "fixed" or "inner_cv"). A table without them (older
runs, published results) is a single default view (`with_view_columns`).

An *evaluation choice* is one of these attributes (or the probe protocol) changed for every model at once, the
others held at the reference (`analysis.sensitivity.reference`). `choice_views` maps each model to the view that
differs from its reference view in that attribute alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from geneb.tables.scores import AnalysisInputError

#: the columns that say which view a row comes from
VIEW_COLUMNS: tuple[str, ...] = ("view", "layer", "layer_depth", "pooling", "reverse_complement", "layer_rule")
#: the view id of a run without `views:`
DEFAULT_VIEW = "default"
#: how a view's layer was chosen
LAYER_RULES: tuple[str, ...] = ("registry", "fixed", "inner_cv")
#: the evaluation choices the sensitivity analysis varies, in report order
CHOICES: tuple[str, ...] = ("pooling", "layer_rule", "protocol", "reverse_complement")
#: the attributes that identify a view of one model (layer only matters under the rule "fixed")
_IDENTITY = ("layer_rule", "layer", "pooling", "reverse_complement")


def with_view_columns(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with every VIEW_COLUMNS column, the absent ones filled as the one default view: view "default",
    layer and layer_depth NA, pooling NA (not recorded), reverse_complement False, layer_rule "registry".
    Returns a copy; present columns are kept as they are (missing values of `view` become "default")."""
    out = df.copy()
    n = len(out)
    defaults: dict[str, Any] = {
        "view": pd.array([DEFAULT_VIEW] * n, dtype="string"),
        "layer": pd.array([pd.NA] * n, dtype="Int64"),
        "layer_depth": pd.array([pd.NA] * n, dtype="Float64"),
        "pooling": pd.array([pd.NA] * n, dtype="string"),
        "reverse_complement": pd.array([False] * n, dtype="boolean"),
        "layer_rule": pd.array(["registry"] * n, dtype="string"),
    }
    for col, value in defaults.items():
        if col not in out.columns:
            out[col] = value
    out["view"] = out["view"].fillna(DEFAULT_VIEW).astype(str)
    return out


def has_views(df: pd.DataFrame) -> bool:
    """Whether `df` holds more than one view of some model (a table without a `view` column holds one)."""
    return "view" in df.columns and bool((df.groupby("model")["view"].nunique() > 1).any())


def view_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, view) with the view columns (`with_view_columns` applied), sorted by model and view."""
    df = with_view_columns(scores)
    return df.drop_duplicates(["model", "view"])[["model", *VIEW_COLUMNS]].sort_values(["model", "view"])


def _same(a: Any, b: Any) -> bool:
    """Equality with NA equal to NA."""
    if pd.isna(a) or pd.isna(b):
        return bool(pd.isna(a) and pd.isna(b))
    return bool(a == b)


def reference_views(views: pd.DataFrame, reference: Mapping[str, Any]) -> dict[str, str]:
    """{model: view id} of each model's reference view.

    views: `view_table` output; reference: {pooling, layer_rule, reverse_complement} (the `analysis.sensitivity
    .reference` setting). The reference view of a model is the one view with that layer rule, pooling and
    reverse-complement flag; a model without such a view (its pooling is not recorded, or the run extracted it
    one way only) falls back to its "default" view, then to its only view of that layer rule and flag. A views
    run has no "registry" rows: there layer rule "registry" means the "fixed" view of the deepest layer (the
    registry's `layer: -1`, the last hidden state, which `layers: all` includes). Raises AnalysisInputError when a
    model has none of these, or several.
    """
    out = {}
    for model, g in views.groupby("model", sort=True):
        rc = g["reverse_complement"] == reference["reverse_complement"]
        base = g[(g["layer_rule"] == reference["layer_rule"]) & rc]
        if base.empty and reference["layer_rule"] == "registry":
            fixed = g[(g["layer_rule"] == "fixed") & rc]
            deepest = fixed["layer"].max() if fixed["layer"].notna().any() else pd.NA
            base = fixed[[_same(v, deepest) for v in fixed["layer"]]]
        pick = base[base["pooling"] == reference["pooling"]]
        if pick.empty:
            pick = g[g["view"] == DEFAULT_VIEW]
        if pick.empty:
            pick = base
        if len(pick) != 1:
            raise AnalysisInputError(
                f"model {model!r}: {'no' if pick.empty else len(pick)} reference view(s) for {dict(reference)} "
                f"among its views {sorted(g['view'])}; set analysis.sensitivity.reference to a view every model has"
            )
        out[str(model)] = str(pick["view"].iloc[0])
    return out


def choice_values(views: pd.DataFrame, choice: str, protocols: list[str], reference: Mapping[str, Any]) -> list[Any]:
    """The alternative values of `choice` present in the run, the reference value left out, sorted.

    pooling: the recorded poolings; layer_rule: "inner_cv" when some view has it ("fixed" names several layers,
    which is the best-layer analysis' question, not one alternative); protocol: the run's other protocols;
    reverse_complement: True when some view has it. Raises AnalysisInputError for an unknown choice.
    """
    if choice == "protocol":
        return sorted(p for p in protocols if p != reference["protocol"])
    if choice not in CHOICES:
        raise AnalysisInputError(f"unknown evaluation choice {choice!r}; expected one of {CHOICES}")
    present = set(views[choice].dropna())
    if choice == "layer_rule":
        present &= {"inner_cv"}
    return sorted((v for v in present if not _same(v, reference[choice])), key=str)


def choice_views(
    views: pd.DataFrame, ref: Mapping[str, str], choice: str, value: Any
) -> tuple[dict[str, str], list[str]]:
    """({model: view id}, models kept as they are) under `choice` = `value`, every other attribute as in the
    model's reference view `ref[model]`.

    A model whose views all share one value of `choice` (a k-mer model has no layer to choose, an encoder without a
    pooling choice) keeps its reference view and is listed second; a model that has other values but not this
    combination is left out of the map. choice "protocol" keeps every reference view (the protocol is a column
    of the rows, not of the view).
    """
    if choice == "protocol":
        return dict(ref), []
    out, fixed = {}, []
    for model, view in ref.items():
        g = views[views["model"] == model]
        r = g[g["view"] == view].iloc[0]
        if g[choice].nunique(dropna=False) <= 1:
            out[model] = view
            fixed.append(model)
            continue
        keep = [a for a in _IDENTITY if a != choice and not (a == "layer" and choice == "layer_rule")]
        match = g[[_same(v, value) for v in g[choice]]]
        for attr in keep:
            if attr == "layer" and r["layer_rule"] != "fixed":
                continue
            match = match[[_same(v, r[attr]) for v in match[attr]]]
        if len(match) == 1:
            out[model] = str(match["view"].iloc[0])
    return out, fixed


def select_views(df: pd.DataFrame, views: Mapping[str, str]) -> pd.DataFrame:
    """The rows of `df` (score or prediction rows, any models) whose (model, view) is in `views` ({model: view id});
    a frame without a `view` column is one default view per model."""
    d = with_view_columns(df) if "view" not in df.columns else df
    want = d["model"].map(dict(views))
    return df[(d["view"] == want).to_numpy()]


def select_view(predictions: pd.DataFrame, view: str) -> pd.DataFrame:
    """The rows of one cell's prediction table of view `view`; a table without a `view` column is the default
    view, returned whole when `view` is "default" and empty otherwise."""
    if "view" not in predictions.columns:
        return predictions if view == DEFAULT_VIEW else predictions.iloc[:0]
    return predictions[predictions["view"].fillna(DEFAULT_VIEW).astype(str) == view]
