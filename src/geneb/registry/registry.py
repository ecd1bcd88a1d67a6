"""The typed model registry `Registry` and the user's extra registry files beside GENEB's.

The typed model registry: `Registry` (the entries of config/models.yaml as `ModelSpec` objects, read once by
`geneb.registry.load.load_registry`), its errors, and the lookup of one entry. Torch-free.

Runnable means GENEB can build the model now (`geneb.registry.load`); the resolved extraction settings of an
entry and their hash, which names the embedding cache folder, are `geneb.registry.load`; the cross-field
and env checks are `geneb.registry.load` (docs/data-dictionary.md, "Inputs: the model registry").

User registry files beside GENEB's (config key `registry_extra:`): each holds only the user's entries; they are
merged with the shipped config/models.yaml, an id given by two files refused naming both. Torch-free.

The merged mapping is written once per run to one file (`write_merged_sheet`) that the run's jobs and analyses read
as their model sheet, so every reader of the registry sees the same entries (docs/adding-a-model.md, "A registry
file of your own").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from geneb.core.integrity import write_text_atomic
from geneb.registry.families import implicit_parent, twin_refusal
from geneb.registry.spec import MatchedPair, ModelSpec, SpecError
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
        implicit twin `<model>-twin` of an entry that cannot have one (`geneb.registry.families`)."""
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


#: the file of a run's merged registry, under its results_dir
MERGED_SHEET = "registry/models.yaml"


def sheet_label(path: str | os.PathLike[str], extra: Sequence[str | os.PathLike[str]]) -> str:
    """How an error names the registry: the shipped file, then each extra file ("a.yaml + b.yaml")."""
    return " + ".join(str(p) for p in (path, *extra))


def merge_extra(
    data: dict[str, Any], path: str | os.PathLike[str], extras: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Add the `models` entries and `matched_pairs` of each extra registry mapping (file name, parsed mapping, in
    order) to `data`, the shipped registry parsed from `path`, in place. Raises RegistryError for an id an extra
    file gives that the shipped registry or an earlier extra file gives too, naming the id and both files."""
    owner = {str(model): str(path) for model in data["models"]}
    for name, extra in extras:
        for model, spec in extra["models"].items():
            if str(model) in owner:
                raise RegistryError(
                    f"registry_extra: model {model!r} of {name} is already an entry of {owner[str(model)]}; "
                    "give it another id (an extra file adds models, it does not replace them)"
                )
            owner[str(model)] = name
            data["models"][model] = spec
        pairs = extra.get("matched_pairs")
        if pairs:
            data["matched_pairs"] = [*(data.get("matched_pairs") or []), *pairs]


def write_merged_sheet(data: Mapping[str, Any], results_dir: str | os.PathLike[str]) -> str:
    """Write the merged registry mapping (as parsed, python entry paths made absolute, before pins and weights) to
    `<results_dir>/registry/models.yaml` when its content changed (so its mtime reruns nothing), atomically;
    returns its path."""
    out = Path(results_dir) / MERGED_SHEET
    text = "# written by GENEB from config/models.yaml and the config's registry_extra files: do not edit\n"
    text += yaml.safe_dump(dict(data), sort_keys=False)
    if not out.is_file() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out, text)
    return str(out)
