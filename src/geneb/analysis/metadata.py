"""Model and task metadata for the analyses, read from the registry (config/models.yaml) with plain yaml and
the catalogue (config/tasks.tsv) with `geneb.tasks.catalogue.read_catalogue` (field meanings:
docs/data-dictionary.md, "Inputs"). The registry is read for its metadata only: unlike
`geneb.models.registry.load_registry`, entries need no family or source (the analyses never extract).

The analyses need, per model: display name, parameter count (the paper's count where it differs),
architecture family, tokenizer type, pretraining data and domain, and the tasks it was trained on
(contamination); per task: category, taxon group and the paper task with the same data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from geneb.models.registry import PAIR_FACTORS
from geneb.scores import AnalysisInputError
from geneb.tasks.catalogue import CatalogueError, read_catalogue

#: columns of a model-metadata frame (index: model id)
MODEL_COLUMNS: tuple[str, ...] = (
    "display",
    "params",
    "params_paper",
    "params_used",
    "architecture",
    "architecture_family",
    "tokenizer_type",
    "pretraining_data",
    "pretraining_domain",
    "trained_on_tasks",
    "paper_model_id",
)


def _number(value: Any) -> float:
    if value is None or value == "":
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise AnalysisInputError(f"parameter count {value!r} is not a number") from err


def model_frame(records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Build a model-metadata frame from {model id: fields}; missing fields become NaN/'unknown'/().

    `params_used` is `params_paper` where set, else `params` (the count the paper's scale analysis used).
    Raises AnalysisInputError for a non-numeric parameter count.
    """
    rows = []
    for model, spec in records.items():
        params = _number(spec.get("params"))
        paper = _number(spec.get("params_paper"))
        rows.append(
            {
                "model": model,
                "display": spec.get("display") or model,
                "params": params,
                "params_paper": paper,
                "params_used": paper if np.isfinite(paper) else params,
                "architecture": spec.get("architecture") or "unknown",
                "architecture_family": spec.get("architecture_family") or "unknown",
                "tokenizer_type": spec.get("tokenizer_type") or "unknown",
                "pretraining_data": spec.get("pretraining_data") or "",
                "pretraining_domain": spec.get("pretraining_domain") or "unknown",
                "trained_on_tasks": tuple(spec.get("trained_on_tasks") or ()),
                "paper_model_id": (spec.get("paper") or {}).get("model_id", ""),
            }
        )
    frame = pd.DataFrame(rows, columns=["model", *MODEL_COLUMNS])
    return frame.set_index("model")


def load_registry(path: str | Path) -> dict[str, Any]:
    """The parsed registry YAML; raises AnalysisInputError when it has no `models` mapping."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise AnalysisInputError(f"{path}: expected a mapping with a `models` mapping")
    return data


def load_model_meta(path: str | Path) -> pd.DataFrame:
    """Model metadata frame (see `model_frame`) of every model in config/models.yaml."""
    return model_frame(load_registry(path)["models"])


def declared_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The registry's top-level `matched_pairs` list ({id, models: [a, b], differs_in, held_equal, note}).

    Raises AnalysisInputError for an entry without exactly two models or with an unknown `differs_in`.
    """
    return _checked_pairs(load_registry(path), path)


def _checked_pairs(registry: dict[str, Any], path: str | Path) -> list[dict[str, Any]]:
    pairs = registry.get("matched_pairs") or []
    for p in pairs:
        if len(p.get("models", [])) != 2:
            raise AnalysisInputError(f"{path}: matched pair {p.get('id')!r} must list exactly two models")
        if p.get("differs_in") not in PAIR_FACTORS:
            raise AnalysisInputError(
                f"{path}: matched pair {p.get('id')!r}: differs_in must be architecture, tokenizer or "
                f"pretraining_data, not {p.get('differs_in')!r}"
            )
    return pairs


def paper_pairs(path: str | Path) -> list[dict[str, Any]]:
    """The declared matched pairs whose two models are both among the paper's models, with the models
    renamed to their official ids (`paper.model_id`), for analysing the published results."""
    registry = load_registry(path)
    models = registry["models"]
    out = []
    for p in _checked_pairs(registry, path):
        ids = [(models.get(m, {}).get("paper") or {}).get("model_id") for m in p["models"]]
        if all(ids):
            out.append({**p, "models": ids})
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
