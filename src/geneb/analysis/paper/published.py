"""The published GENEB results (the paper's 40 models) converted into GENEB's score-table format.

Input: the reference folder `geneb_paper/` (per_task_results.tsv, benchmark_spec.json, models.tsv,
leaderboard_category_mcc.tsv). Output rows follow `results/tables/scores.parquet` (docs/data-dictionary.md)
with protocol `geneb-paper`, `seed = -1` ("mean over the paper's 5 seeds, as published"), `source =
"published"`, CI and sizes unknown (NaN), and the sha256 of the file they came from in `origin`.

The paper's model ids are the official `model_id`s (e.g. `evo-1-131k-base`); its task ids are the official
task ids, which `config/tasks.tsv` lists as the `paper` task set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from geneb import __version__
from geneb.analysis.inputs.metadata import model_frame
from geneb.analysis.inputs.metadata import registry as read_registry
from geneb.core.categories import CATEGORIES
from geneb.core.provenance import file_sha256
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import PUBLISHED_SEED, SCHEMA_VERSION, AnalysisInputError, check_scores, with_code_revision

PROTOCOL = "geneb-paper"


def _need(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.exists():
        raise AnalysisInputError(f"published results: {path} not found (expected the geneb_paper reference folder)")
    return path


def load_spec(folder: str | Path) -> dict[str, Any]:
    """The official benchmark definition (`benchmark_spec.json`)."""
    return json.loads(_need(Path(folder), "benchmark_spec.json").read_text())


def import_published(folder: str | Path) -> pd.DataFrame:
    """Read `per_task_results.tsv` into a validated score table (see module docstring).

    Returns one row per (model, regime, task, metric), metrics MCC, Acc, F1 as published (5-seed means).
    Raises AnalysisInputError for a task that is not in the benchmark spec or a missing file.
    """
    folder = Path(folder)
    path = _need(folder, "per_task_results.tsv")
    spec = load_spec(folder)
    category = {t["id"]: t["category"] for t in spec["tasks"]}
    raw = pd.read_csv(path, sep="\t")
    unknown = sorted(set(raw["task_id"]) - set(category))
    if unknown:
        raise AnalysisInputError(f"{path}: tasks not in benchmark_spec.json: {unknown[:5]}")
    out = pd.DataFrame(
        {
            "schema_version": SCHEMA_VERSION,
            "protocol": PROTOCOL,
            "model": raw["model_id"].astype(str),
            "task": raw["task_id"].astype(str),
            "category": raw["task_id"].map(category),
            "regime": raw["regime"].astype(str),
            "seed": PUBLISHED_SEED,
            "metric": raw["metric"].astype(str),
            "value": raw["value"].astype(float),
            "ci_low": np.nan,
            "ci_high": np.nan,
            "n_train": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "n_test": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "source": "published",
            "origin": f"geneb_paper/per_task_results.tsv sha256:{file_sha256(str(path))}",
            "harness_version": spec.get("harness_version", ""),
            "geneb_version": __version__,
        }
    )
    return with_code_revision(check_scores(out, what=str(path)).reset_index(drop=True))


def _registry_by_hub(registry: str | Path | None) -> dict[str, dict[str, Any]]:
    if registry is None or not Path(registry).exists():
        return {}
    entries = yaml.safe_load(Path(registry).read_text()) or []
    return {str(e["hf_id"]).lower(): e for e in entries if isinstance(e, dict) and e.get("hf_id")}


def published_model_meta(
    folder: str | Path, models_yaml: str | Path | None = None, registry: str | Path | None = None
) -> pd.DataFrame:
    """Model metadata (`metadata.model_frame` columns) of the paper's 40 models, indexed by official model_id.

    From `models.tsv`: display (leaderboard name), params (`params_current`: the count the paper's scale
    analysis used), params_first_release (`params_early_meta`, where the first release differs), architecture,
    architecture_family (`family`), tokenizer_type, pretraining_data. `pretraining_domain` comes from the
    GENEB registry entry whose `paper.model_id` is the official id, else from the shared reference registry
    (`registry.yaml`, by hub id), else "unknown".
    """
    folder = Path(folder)
    tsv = pd.read_csv(_need(folder, "models.tsv"), sep="\t")
    own: dict[str, ModelSpec] = {}
    if models_yaml is not None and Path(models_yaml).exists():
        for spec in read_registry(models_yaml).models.values():
            if spec.paper_model_id:
                own[spec.paper_model_id] = spec
    hub = _registry_by_hub(registry)
    records = {}
    for _, r in tsv.iterrows():
        mid = str(r["geneb_model_id"])
        domain = (
            (own[mid].pretraining_domain if mid in own else None)
            or (hub.get(str(r["hub_id_or_source"]).lower()) or {}).get("domain")
            or "unknown"
        )
        early = r["params_early_meta"]
        records[mid] = {
            "display": r["leaderboard_display"],
            "params": r["params_current"],
            "params_paper": early if pd.notna(early) else np.nan,
            "architecture": r["architecture"],
            "architecture_family": r["family"],
            "tokenizer_type": r["tokenizer"],
            "pretraining_data": r["pretraining_data_unverified"],
            "pretraining_domain": domain,
            "trained_on_tasks": (),
            "paper": {"model_id": mid},
        }
    return model_frame(records)


def published_leaderboard(folder: str | Path) -> pd.DataFrame:
    """The official leaderboard (`leaderboard_category_mcc.tsv`), the 40 official models only, long format:
    model, regime, category (13 + "macro"), value (4 decimals, as published)."""
    lb = pd.read_csv(_need(Path(folder), "leaderboard_category_mcc.tsv"), sep="\t")
    lb = lb[lb["official_40"] == "yes"].rename(columns={"model_id": "model", "macro_MCC": "macro"})
    return lb.melt(
        id_vars=["model", "regime"], value_vars=[*CATEGORIES, "macro"], var_name="category", value_name="value"
    )
