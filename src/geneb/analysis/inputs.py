"""What the analyses read: the score-table contract and its reduction to cells, which view (layer, pooling,
protocol) a row comes from, model and task metadata, the models analysed, and the context an analysis sees.

Views and evaluation choices: which embedding view of a model a score or prediction row comes from, the
reference view every leaderboard uses, and the alternative views the sensitivity analysis swaps in.

A *view* is one way of turning a model's forward pass into a vector: a hidden-state layer, a pooling and whether
the reverse complement was averaged in. Score and prediction rows of a run with a `views:` section carry the
columns _VIEW_COLUMNS (docs/data-dictionary.md, stage 3): `view` (the id, "default" in a run without views),
`layer` (absolute 0-based hidden-state index, NA without layers), `layer_depth` (layer / n_layers in [0, 1]),
`pooling`, `reverse_complement`, `layer_rule` ("registry", "fixed" or "inner_cv"). A table without them (older
runs, published results) is a single default view (`_with_view_columns`).

An *evaluation choice* is one of these attributes (or the probe protocol) changed for every model at once, the
others held at the reference (`analysis.sensitivity.reference`). `choice_views` maps each model to the view that
differs from its reference view in that attribute alone.

The score-table contract the analyses read, and its reduction to one value per (model, task, regime).

`results/tables/scores.parquet` (docs/data-dictionary.md, stage 4) is long format: one row per (protocol,
model, task, regime, seed, metric). The analyses work on the seed mean of one metric (MCC by default) per
(protocol, model, task, regime): a *cell*. Published results (`source = "published"`) arrive already averaged
over the paper's five seeds and carry `seed = -1`.

Model and task metadata for the analyses: the registry (config/models.yaml) through its one reader,
`geneb.registry.load.load_registry` (typed `ModelSpec` entries, validated as the workflow validates them),
and the catalogue (config/tasks.tsv) with `geneb.tasks.catalogue.read_catalogue` (field meanings:
docs/data-dictionary.md, "Inputs").

The analyses need, per model: display name, parameter count (the paper's count where it differs),
architecture family, tokenizer type, pretraining data and domain, and the tasks it was trained on
(contamination); per task: category, taxon group and the paper task with the same data.

The models analysed: their registry metadata as the analyses used it (the `models` table).

What the analyses read: the score-table contract and its reduction to cells, model and task metadata, and the
`models` table of the models analysed.

What an analysis sees: the run, one protocol of it, or one (protocol, regime) of that protocol.

`geneb.analysis.run.run_analyses` builds these and hands one to each registered analysis
(`geneb.analysis.registry`) of the matching scope. Each context has a `summary` dict, the part of
analysis_summary.json for its scope (run: the top level; protocol: `protocols[p]`; regime:
`protocols[p].regimes[r]`), into which an analysis writes its headline numbers. Importing this module loads
nothing heavy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.registry.load import load_registry as _load_registry
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import CELL_KEYS, AnalysisInputError
from geneb.tasks.catalogue import CatalogueError, read_catalogue

#: the columns that say which view a row comes from
_VIEW_COLUMNS: tuple[str, ...] = ("view", "layer", "layer_depth", "pooling", "reverse_complement", "layer_rule")
#: the view id of a run without `views:`
DEFAULT_VIEW = "default"
#: the evaluation choices the sensitivity analysis varies, in report order
CHOICES: tuple[str, ...] = ("pooling", "layer_rule", "protocol", "reverse_complement")
#: the attributes that identify a view of one model (layer only matters under the rule "fixed")
_IDENTITY = ("layer_rule", "layer", "pooling", "reverse_complement")


def _with_view_columns(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with every _VIEW_COLUMNS column, the absent ones filled as the one default view: view "default",
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
    """One row per (model, view) with the view columns (`_with_view_columns` applied), sorted by model and view."""
    df = _with_view_columns(scores)
    return df.drop_duplicates(["model", "view"])[["model", *_VIEW_COLUMNS]].sort_values(["model", "view"])


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
    d = _with_view_columns(df) if "view" not in df.columns else df
    want = d["model"].map(dict(views))
    return df[(d["view"] == want).to_numpy()]


def select_view(predictions: pd.DataFrame, view: str) -> pd.DataFrame:
    """The rows of one cell's prediction table of view `view`; a table without a `view` column is the default
    view, returned whole when `view` is "default" and empty otherwise."""
    if "view" not in predictions.columns:
        return predictions if view == DEFAULT_VIEW else predictions.iloc[:0]
    return predictions[predictions["view"].fillna(DEFAULT_VIEW).astype(str) == view]


def cell_scores(scores: pd.DataFrame, metric: str = "MCC", protocol: str | None = None) -> pd.DataFrame:
    """One row per (protocol, model, task, category, regime): the seed mean of `metric`.

    scores: a validated score table (`check_scores`). Returns columns CELL_KEYS + [value, n_seeds, source],
    sorted by the keys, and the spread over seeds where the table has it (`SEED_SPREAD`: sd, Student-t interval,
    min, max of the seed values; one value per cell in a score table). `protocol` keeps only that protocol. Raises
    AnalysisInputError when no row is left.
    """
    df = scores[scores["metric"] == metric]
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if df.empty:
        raise AnalysisInputError(f"no {metric} rows" + (f" for protocol {protocol!r}" if protocol else ""))
    spread: dict[str, Any] = {c: (c, "first") for c in SEED_SPREAD if c in df.columns}
    if "finetune_status" in df.columns:  # "collapsed" when any run of the cell collapsed (geneb.tables.collapse)
        spread["finetune_status"] = ("finetune_status", _cell_status)
    out = (
        df.groupby(list(CELL_KEYS), sort=True, observed=True)
        .agg(value=("value", "mean"), n_seeds=("seed", "nunique"), source=("source", "first"), **spread)
        .reset_index()
    )
    return out


def _cell_status(status: pd.Series) -> str:
    """A cell's `finetune_status` from its runs': "collapsed" when any is, else the first ("ok", or "" for a
    probe cell)."""
    values = status.fillna("").astype(str)
    return "collapsed" if (values == "collapsed").any() else (str(values.iloc[0]) if len(values) else "")


#: the spread over seeds a cell carries when its score rows have it (`cell_scores`; docs/data-dictionary.md)
SEED_SPREAD: tuple[str, ...] = ("seed_sd", "seed_ci_low", "seed_ci_high", "seed_min", "seed_max")


def task_matrix(cells: pd.DataFrame, regime: str, protocol: str | None = None) -> pd.DataFrame:
    """Wide (n_models, n_tasks) frame of cell values for one regime; NaN where a model lacks a task.

    Index: model (sorted); columns: task (sorted). Raises AnalysisInputError when `cells` has several
    protocols and none is chosen, or when nothing is left.
    """
    df = cells[cells["regime"] == regime]
    if protocol is not None:
        df = df[df["protocol"] == protocol]
    if df["protocol"].nunique() > 1:
        raise AnalysisInputError(f"cells hold protocols {sorted(df['protocol'].unique())}; choose one")
    if df.empty:
        raise AnalysisInputError(f"no cells for regime {regime!r}" + (f", protocol {protocol!r}" if protocol else ""))
    return df.pivot(index="model", columns="task", values="value").sort_index().sort_index(axis=1)


def task_categories(cells: pd.DataFrame) -> pd.Series:
    """Series task -> category (one category per task, as `check_scores` guarantees)."""
    return cells.drop_duplicates("task").set_index("task")["category"].sort_index()


def frame_sha256(df: pd.DataFrame, length: int = 12) -> str:
    """First `length` hex digits of a sha256 over a frame's contents (row order and column names included).

    Used as the provenance of an analysis input: two tables with equal hashes hold the same values.
    """
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:length]


#: columns of a model-metadata frame (index: model id)
MODEL_COLUMNS: tuple[str, ...] = (
    "display",
    "params",
    "params_first_release",
    "architecture",
    "architecture_family",
    "tokenizer_type",
    "pretraining_data",
    "pretraining_domain",
    "trained_on_tasks",
    "paper_model_id",
    "twin_of",
)


def _number(value: Any) -> float:
    if value is None or value == "":
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise AnalysisInputError(f"parameter count {value!r} is not a number") from err


def model_frame(records: Mapping[str, ModelSpec | Mapping[str, Any]]) -> pd.DataFrame:
    """Build a model-metadata frame from {model id: ModelSpec} (a registry's `models`) or {model id: fields}
    (records of other sources, e.g. the published models); missing fields become NaN/'unknown'/().

    `params` is the model's current parameter count, `params_first_release` the count of its first release
    where the registry records a different one (registry field `params_paper`, NaN elsewhere); which of the
    two the analyses use is the setting `analysis.scale.param_count` (`with_param_count`).
    Raises AnalysisInputError for a non-numeric parameter count.
    """
    rows = []
    for model, entry in records.items():
        spec = entry.facts() if isinstance(entry, ModelSpec) else entry
        params = _number(spec.get("params"))
        first = _number(spec.get("params_paper"))
        rows.append(
            {
                "model": model,
                "display": spec.get("display") or model,
                "params": params,
                "params_first_release": first,
                "architecture": spec.get("architecture") or "unknown",
                "architecture_family": spec.get("architecture_family") or "unknown",
                "tokenizer_type": spec.get("tokenizer_type") or "unknown",
                "pretraining_data": spec.get("pretraining_data") or "",
                "pretraining_domain": spec.get("pretraining_domain") or "unknown",
                "trained_on_tasks": tuple(spec.get("trained_on_tasks") or ()),
                "paper_model_id": (spec.get("paper") or {}).get("model_id", ""),
                "twin_of": (spec.get("twin") or {}).get("of", ""),  # a random-init twin's model, "" otherwise
            }
        )
    frame = pd.DataFrame(rows, columns=["model", *MODEL_COLUMNS])
    return frame.set_index("model")


#: `analysis.scale.param_count` -> how `params_used` is taken from a model-metadata frame
_PARAM_COUNTS = ("current", "first_release")


def with_param_count(meta: pd.DataFrame, param_count: str) -> pd.DataFrame:
    """`meta` with the column `params_used`: the parameter count every analysis uses (scale, reversals,
    derived matched pairs). "current": `params` (the paper's choice: the current counts of `models.tsv`
    reproduce its Spearman rho 0.573 and 0.694 exactly); "first_release": `params_first_release` where
    recorded, else `params`. Raises AnalysisInputError for another value."""
    if param_count not in _PARAM_COUNTS:
        raise AnalysisInputError(
            f"analysis.scale.param_count must be one of {list(_PARAM_COUNTS)}, not {param_count!r}"
        )
    used = meta["params"]
    if param_count == "first_release":
        used = meta["params_first_release"].where(np.isfinite(meta["params_first_release"]), meta["params"])
    return meta.assign(params_used=used.astype(float))


def registry(path: str | Path) -> Registry:
    """The typed registry (`geneb.registry.load.load_registry`); raises AnalysisInputError for a file that
    is not a valid registry (the message names the file, model and field)."""
    try:
        return _load_registry(path)
    except RegistryError as err:
        raise AnalysisInputError(str(err)) from err


def load_model_meta(path: str | Path) -> pd.DataFrame:
    """Model metadata frame (see `model_frame`) of every model in config/models.yaml."""
    return model_frame(registry(path).models)


def declared_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The registry's top-level `matched_pairs` list ({id, models: [a, b], differs_in, held_equal, note}),
    checked by the registry reader (two distinct registry models, a known `differs_in`). Raises
    AnalysisInputError for an invalid registry."""
    return [p.as_dict() for p in registry(path).pairs]


def paper_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The declared matched pairs whose two models are both among the paper's models, with the models
    renamed to their official ids (`paper.model_id`), for analysing the published results."""
    reg = registry(path)
    out = []
    for p in reg.pairs:
        ids = [reg.models[m].paper_model_id for m in p.models]
        if all(ids):
            out.append({**p.as_dict(), "models": ids})
    return out


def load_task_meta(path: str | Path) -> pd.DataFrame:
    """The task catalogue as strings indexed by task id (`geneb.tasks.catalogue.read_catalogue`); raises
    AnalysisInputError on duplicate ids or when the columns task/category/taxon_group are missing."""
    try:
        df = read_catalogue(path)
    except CatalogueError as err:
        raise AnalysisInputError(str(err)) from err
    for col in ("task", "category", "taxon_group"):
        if col not in df.columns:
            raise AnalysisInputError(f"{path}: column {col!r} missing")
    for col in ("task_set", "geneb_task_id", "same_split_as_geneb"):
        if col not in df.columns:
            df[col] = ""
    return df


def entries(items: list[dict[str, Any]] | None, what: str) -> dict[str, str]:
    """Turn a config list of {model, reason} into {model: reason}; a reason is required.

    Raises AnalysisInputError naming `what` for an entry without a model or a reason.
    """
    out: dict[str, str] = {}
    for item in items or []:
        if not isinstance(item, dict) or not item.get("model") or not str(item.get("reason", "")).strip():
            raise AnalysisInputError(f"{what}: every entry needs a model and a reason, got {item!r}")
        out[str(item["model"])] = str(item["reason"])
    return out


@dataclass
class RunContext:
    """The whole run: inputs, settings and the cells every analysis reads.

    used: the seed-mean cells left after the contamination policy (`run.prepare_cells`); their CI columns are
    overwritten by the test-row bootstrap as the regimes are analysed, so run-scope analyses (which run last)
    see the bootstrap CIs. board: the leaderboard of `used`. scores and `used` hold each model's reference view
    (`choices.reference_views`); view_scores: every view's rows (None when the run has one view per model), for
    the analyses that compare views; predictions_root: `results/predictions` (None: no per-row predictions).
    """

    scores: pd.DataFrame
    model_meta: pd.DataFrame
    task_meta: pd.DataFrame | None
    declared_pairs: list[dict[str, Any]]
    settings: dict[str, Any]
    used: pd.DataFrame
    contaminated: pd.DataFrame
    board: pd.DataFrame
    view_scores: pd.DataFrame | None = None
    predictions_root: Path | None = None
    summary: dict[str, Any] = field(default_factory=lambda: {"protocols": {}})

    @property
    def confidence(self) -> float:
        """The level of every bootstrap interval (settings.confidence)."""
        return float(self.settings["confidence"])

    @property
    def n_resamples(self) -> int:
        """Bootstrap replicates (settings.bootstrap.n_resamples)."""
        return int(self.settings["bootstrap"]["n_resamples"])

    @property
    def seed(self) -> int:
        """The seed every random draw derives from (settings.bootstrap.seed)."""
        return int(self.settings["bootstrap"]["seed"])


@dataclass
class ProtocolContext:
    """One protocol of the run: its cells and (when there are any) its per-row predictions."""

    run: RunContext
    protocol: str
    cells: pd.DataFrame
    predictions: dict[tuple[str, str], Any]
    summary: dict[str, Any] = field(default_factory=lambda: {"regimes": {}})


@dataclass
class RegimeContext:
    """One (protocol, regime): the model x task matrix and the bootstrap replicates shared by the analyses.

    matrix: model x task cell values; complete: its models without a missing task; rows: test-row replicates
    (B, models, tasks) of `complete`, or None without predictions; replicates: the paired category
    replicates (`bootstrap.category_replicates`) of `complete`, or None with fewer than 2 complete models;
    wide: the leaderboard's model x (categories + macro) view; macro: the models' macro MCC (NaN dropped); ranked:
    {column (category or macro): the paired replicates over the models the leaderboard ranks there}
    (`ranking.ranked_replicates`; columns with fewer than 2 ranked models left out), what the rank intervals and the
    recommendation use, so that a rank, its interval and the best model come from the same models.
    """

    protocol: ProtocolContext
    regime: str
    matrix: pd.DataFrame
    complete: pd.DataFrame
    rows: Any
    replicates: Any
    wide: pd.DataFrame
    macro: pd.Series
    summary: dict[str, Any] = field(default_factory=dict)
    ranked: dict[str, Any] = field(default_factory=dict)

    @property
    def run(self) -> RunContext:
        """The run this regime belongs to."""
        return self.protocol.run

    @property
    def tag(self) -> dict[str, str]:
        """{protocol, regime}: the columns every regime-scope table gets."""
        return {"protocol": self.protocol.protocol, "regime": self.regime}


def _models_table(model_meta: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The metadata of `models` as analysed (a model missing from the registry keeps its id as display name
    and unknown fields); `trained_on_tasks` joined with ';'."""
    rows = []
    for m in models:
        r = model_meta.loc[m].to_dict() if m in model_meta.index else {"display": m}
        r["trained_on_tasks"] = ";".join(r.get("trained_on_tasks", ()) or ())
        rows.append({"model": m, **r})
    return pd.DataFrame(rows)


def models_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `models`: the metadata of every model of the score table."""
    return {"models": _models_table(ctx.model_meta, sorted(ctx.scores["model"].unique()))}
