"""The typed model registry: `Registry` (the entries of config/models.yaml as `ModelSpec` objects, read once by
`geneb.registry.load.load_registry`), its errors, and the lookup of one entry. Torch-free.

Runnable means GENEB can build the model now (`geneb.registry.runnable`); the resolved extraction settings of an
entry and their hash, which names the embedding cache folder, are `geneb.registry.extraction`; the cross-field
and env checks are `geneb.registry.checks` (docs/data-dictionary.md, "Inputs: the model registry").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geneb.registry.spec import MatchedPair, ModelSpec, SpecError
from geneb.registry.twins import implicit_parent, twin_refusal
from geneb.registry.weights import DEFAULT_WEIGHTS_DIR


class RegistryError(ValueError):
    """A registry problem: unknown model, schema violation, inconsistent entry."""


class NotRunnableError(RegistryError):
    """The model is in the registry for its metadata but cannot be extracted (reason in the message)."""


@dataclass(frozen=True)
class Registry:
    """The model registry, read once (`load_registry`). models: {id: ModelSpec} in file order; pairs: the
    declared matched pairs; raw: the validated mapping as read (pins and `model_weights` paths applied), for
    Snakemake's schema check and tests of the file itself; code takes the typed objects. weights_dir: the cache
    folder of external archives and downloads (config `execution.weights_dir`; geneb.registry.weights)."""

    models: Mapping[str, ModelSpec]
    pairs: tuple[MatchedPair, ...]
    raw: Mapping[str, Any]
    weights_dir: str = DEFAULT_WEIGHTS_DIR

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, weights_dir: str | Path | None = None) -> Registry:
        """Type an already parsed and validated registry mapping ({"models": {...}, "matched_pairs": [...]}).
        Raises RegistryError naming the model for an entry that does not fit the typed spec."""
        try:
            models = {name: ModelSpec.from_mapping(name, spec) for name, spec in (data.get("models") or {}).items()}
            pairs = tuple(MatchedPair.from_mapping(p) for p in data.get("matched_pairs") or ())
        except SpecError as err:
            raise RegistryError(str(err)) from err
        return cls(models=models, pairs=pairs, raw=data, weights_dir=str(weights_dir or DEFAULT_WEIGHTS_DIR))

    def spec(self, model: str) -> ModelSpec:
        """The entry of `model`; raises RegistryError with close matches if unknown, naming the reason for the
        implicit twin `<model>-twin` of an entry that cannot have one (`geneb.registry.twins`)."""
        parent = implicit_parent(model)
        if model not in self.models and parent is not None and parent in self.models:
            raise RegistryError(
                f"model {model!r}: {parent} has no random-init twin: {twin_refusal(self.raw['models'][parent])}"
            )
        if model not in self.models:
            import difflib

            close = difflib.get_close_matches(model, list(self.models), n=3)
            raise RegistryError(
                f"model {model!r} is not in the registry" + (f"; did you mean {close}?" if close else "")
            )
        return self.models[model]


def as_registry(registry: Registry | Mapping[str, Any]) -> Registry:
    """`registry` itself, or a parsed registry mapping typed with `Registry.from_mapping` (tests and tools
    that build entries in code; no schema check)."""
    return registry if isinstance(registry, Registry) else Registry.from_mapping(registry)


def model_spec(registry: Registry | Mapping[str, Any], model: str) -> ModelSpec:
    """The typed entry of `model` (`Registry.spec`); raises RegistryError with close matches if unknown."""
    return as_registry(registry).spec(model)
