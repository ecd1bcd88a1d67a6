"""A model's run card, shared by the leaderboard site's model page (`geneb.site.sections.model_page`) and the
comparison report (`geneb.report.compare`): how the model was run, read from the run's own records.

* the registry facts (`_REGISTRY_FACTS`: parameter count, architecture, tokenizer, declared pretraining data, ...);
* per settings hash of its embedding files (the score table's recorded inputs, `scores_inputs.json`,
  resources/embeddings/{model}/{settings hash}/...), the extraction key (`geneb.extract.cache.read_key`): the
  settings hash, the weights' source (kind, hub revision or path, the factory of a python entry, the content
  fingerprint), the weights' sha256 as loaded, compute dtype, model class and the package versions;
* the score table's probe provenance (`_PROBE_PROVENANCE`: embedding key hash, protocol config hash, GENEB version
  and commit, scikit-learn / numpy / scipy versions).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.analysis.inputs import MODEL_COLUMNS
from geneb.extract.cache import CacheError, read_key

#: score-table columns that state how a model's probes were made (the same in every row of a model, or listed)
_PROBE_PROVENANCE = (
    "embedding_key_hash",
    "embedding_compute_dtype",
    "config_hash",
    "geneb_version",
    "geneb_commit",
    "geneb_dirty",
    "sklearn_version",
    "numpy_version",
    "scipy_version",
)
#: the registry facts a run card states: the model frame's columns (models.parquet) but the first-release count
_REGISTRY_FACTS = tuple(c for c in MODEL_COLUMNS if c != "params_first_release")


def recorded_inputs(inputs: Mapping[str, Any], prefix: str, suffix: str) -> list[Path]:
    """The files a score table's input record (`scores_inputs.json`: {root, files: {relative path: ...}}) lists
    under `prefix` ending in `suffix`, as paths under its root; [] when the root is not recorded or gone."""
    root = inputs.get("root")
    if not root or not Path(root).is_dir():
        return []
    files = sorted(str(f) for f in inputs.get("files", {}))
    return [Path(root) / f for f in files if f.startswith(prefix) and f.endswith(suffix)]


def embedding_files(inputs: Mapping[str, Any], model: str) -> list[Path]:
    """`model`'s embedding files among a score table's recorded inputs (`recorded_inputs`)."""
    return recorded_inputs(inputs, f"resources/embeddings/{model}/", ".h5")


def extraction_records(files: list[Path]) -> list[dict[str, Any]]:
    """One record per settings hash of the embedding files `files` (resources/embeddings/{model}/{settings
    hash}/{task}/...): settings_hash, family, source (kind, path / hub id, revision, fingerprint), weights_sha256,
    weights_format, weights_dtype, compute_dtype, model_class, extraction, package_versions, the number of files and
    the first file read; a file whose key cannot be read gives a record with `error`. [] for no files."""
    by_hash: dict[str, list[Path]] = {}
    for f in files:
        by_hash.setdefault(f.parent.parent.name, []).append(f)
    out = []
    for xhash, paths in sorted(by_hash.items()):
        record: dict[str, Any] = {"settings_hash": xhash, "files": len(paths), "file": str(paths[0])}
        try:
            key = read_key(paths[0])
        except (CacheError, OSError) as err:
            record["error"] = f"extraction key not readable: {err}"
            out.append(record)
            continue
        settings = key.get("settings", {})
        encoder = key.get("encoder", {})
        record.update(
            settings_hash=key.get("settings_hash", xhash),
            family=settings.get("family"),
            source=settings.get("source", {}),
            load={k: v for k, v in (settings.get("load") or {}).items() if k in ("entry", "entry_sha256")},
            weights_sha256=encoder.get("weights_sha256"),
            weights_format=encoder.get("weights_format"),
            weights_dtype=encoder.get("weights_dtype"),
            compute_dtype=encoder.get("compute_dtype"),
            model_class=encoder.get("model_class") or encoder.get("adapter"),
            extraction=settings.get("extraction", {}),
            package_versions=key.get("package_versions", {}),
        )
        out.append(record)
    return out


def extraction_facts(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of one `extraction_records` record, flattened to text (label: value)."""
    src = rec.get("source") or {}
    ext = rec.get("extraction") or {}
    pv = rec.get("package_versions") or {}
    load = rec.get("load") or {}
    return {
        "settings hash": rec.get("settings_hash"),
        "family": rec.get("family"),
        "source": ", ".join(f"{k}: {v}" for k, v in src.items() if v not in (None, "", {}, [])),
        "factory": ", ".join(f"{k}: {v}" for k, v in load.items() if v) or None,
        "weights sha256 (as loaded)": rec.get("weights_sha256"),
        "weights format / dtype": " / ".join(
            str(x) for x in (rec.get("weights_format"), rec.get("weights_dtype")) if x
        ),
        "compute dtype": rec.get("compute_dtype"),
        "model class": rec.get("model_class"),
        "extraction": ", ".join(
            f"{k}={v}" for k, v in ext.items() if k in ("layer", "pooling", "max_tokens", "rc", "long_policy")
        ),
        "environment": ", ".join(f"{k} {v}" for k, v in sorted(pv.items())),
        "embedding files": f"{rec.get('files')} (first: {rec.get('file')})",
        "error": rec.get("error"),
    }


def probe_provenance(scores: pd.DataFrame | None, model: str) -> dict[str, str]:
    """{column: distinct values, comma-joined} of PROBE_PROVENANCE over `model`'s rows of the score table
    `scores` ({} without one, or without rows of the model)."""
    if scores is None:
        return {}
    rows = scores[scores["model"] == model]
    return {
        c: ", ".join(sorted({str(v) for v in rows[c].dropna()}))
        for c in _PROBE_PROVENANCE
        if c in rows.columns and len(rows)
    }


def registry_facts(models: pd.DataFrame, model: str) -> dict[str, Any]:
    """The REGISTRY_FACTS of `model` in a models frame (models.parquet, or `metadata.model_frame` reset to a
    `model` column); {} when the model is not in it."""
    if models is None or not len(models) or "model" not in models.columns:
        return {}
    row = models[models["model"] == model]
    if row.empty:
        return {}
    r = row.iloc[0]
    return {k: r[k] for k in _REGISTRY_FACTS if k in row.columns}
