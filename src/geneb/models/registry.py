"""The model registry (config/models.yaml): loading, validation, and each model's resolved extraction
settings, whose hash names the embedding cache folder (docs/data-dictionary.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from geneb.provenance import stable_hash

#: extraction defaults where a registry entry is silent (docs/adding-a-model.md)
DEFAULT_EXTRACTION: dict[str, Any] = {
    "pooling": "mean",
    "layer": -1,
    "exclude_special_tokens": True,
    "max_tokens": None,
    "long_policy": "chunk_mean",
    "rc": "none",
    "dtype": "auto",
}


class RegistryError(ValueError):
    """A registry problem: unknown model, schema violation."""


def load_registry(path: str | Path, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read config/models.yaml; validate it against `schema` (JSON schema) when given.

    Raises RegistryError naming the model and field for a schema violation.
    """
    data = yaml.safe_load(Path(path).read_text())
    if schema is not None:
        import jsonschema

        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            where = "/".join(map(str, e.path)) or "(top level)"
            raise RegistryError(f"{path}: {where}: {e.message}")
    return data


def model_spec(registry: dict[str, Any], model: str) -> dict[str, Any]:
    """The registry entry of `model`; raises RegistryError with close matches if unknown."""
    models = registry["models"]
    if model not in models:
        import difflib

        close = difflib.get_close_matches(model, list(models), n=3)
        raise RegistryError(f"model {model!r} is not in the registry" + (f"; did you mean {close}?" if close else ""))
    return models[model]


def extraction_settings(registry: dict[str, Any], model: str, alphabet: dict[str, Any]) -> dict[str, Any]:
    """Everything about `model` that changes its embeddings (not execution knobs): identity, source,
    builtin construction, resolved extraction options, and the alphabet policy. Stable JSON-able dict."""
    spec = model_spec(registry, model)
    extraction = {**DEFAULT_EXTRACTION, **spec.get("extraction", {})}
    return {
        "model": model,
        "family": spec["family"],
        "source": spec["source"],
        "builtin": spec.get("builtin", {}),
        "trust_remote_code": bool(spec.get("trust_remote_code", False)),
        "extraction": extraction,
        "alphabet": dict(sorted(alphabet.items())),
    }


def extraction_hash(settings: dict[str, Any]) -> str:
    """12-hex hash of `extraction_settings(...)`: the cache folder name; any change gives a new path."""
    return stable_hash(settings)
