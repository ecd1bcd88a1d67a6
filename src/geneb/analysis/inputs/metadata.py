"""Model and task metadata for the analyses: the registry (config/models.yaml) through its one reader,
`geneb.registry.load.load_registry` (typed `ModelSpec` entries, validated as the workflow validates them),
and the catalogue (config/tasks.tsv) with `geneb.tasks.catalogue.read_catalogue` (field meanings:
docs/data-dictionary.md, "Inputs").

The analyses need, per model: display name, parameter count (the paper's count where it differs),
architecture family, tokenizer type, pretraining data and domain, and the tasks it was trained on
(contamination); per task: category, taxon group and the paper task with the same data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.registry.load import load_registry as _load_registry
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import AnalysisInputError
from geneb.tasks.catalogue import CatalogueError, read_catalogue

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
PARAM_COUNTS = ("current", "first_release")


def with_param_count(meta: pd.DataFrame, param_count: str) -> pd.DataFrame:
    """`meta` with the column `params_used`: the parameter count every analysis uses (scale, reversals,
    derived matched pairs). "current": `params` (the paper's choice: the current counts of `models.tsv`
    reproduce its Spearman rho 0.573 and 0.694 exactly); "first_release": `params_first_release` where
    recorded, else `params`. Raises AnalysisInputError for another value."""
    if param_count not in PARAM_COUNTS:
        raise AnalysisInputError(f"analysis.scale.param_count must be one of {list(PARAM_COUNTS)}, not {param_count!r}")
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
