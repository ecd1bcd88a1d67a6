"""Typed extraction settings: one `ExtractionSettings` per (model, alphabet), built once by
`geneb.registry.families.build` from the mapping `geneb.registry.extraction.extraction_settings` resolves, and passed
to the family adapters, which read attributes.

The mapping stays the form the settings travel in (Snakemake params, the HDF5 extraction key, the settings
hash); `ExtractionSettings.from_dict(d).as_dict() == d` exactly, keys that were absent stay absent, so
nothing that travels changes. Field meanings: docs/adding-a-model.md ("Extraction options") and
docs/data-dictionary.md. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from geneb.registry.spec import Load, Source
from geneb.registry.views import ViewSet

#: the compute dtypes an extraction can run in (`extraction.dtype`, besides auto)
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
#: what `dtype: auto` means on each device class: the one rule, applied when the extraction settings are resolved
#: (`extraction.extraction_settings`), so the settings hash names the dtype that runs
AUTO_DTYPE = {"cpu": "float32", "cuda": "bfloat16"}


def device_class(device: str) -> str | None:
    """ "cpu" for cpu, "cuda" for cuda / cuda:N, None for auto (the job decides: not known when planning).
    Raises ValueError for anything else."""
    if device == "cpu":
        return "cpu"
    if device == "cuda" or device.startswith("cuda:"):
        return "cuda"
    if device == "auto":
        return None
    raise ValueError(f"unknown device {device!r}; expected cpu, cuda, cuda:N or auto")


def _keys_of(data: Mapping[str, Any], cls: type, where: str) -> tuple[str, ...]:
    names = [f.name for f in fields(cls) if not f.name.startswith("_")]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}")
    return tuple(data)


def _given(obj: Any) -> dict[str, Any]:
    """The fields of `obj` named in its `_keys` (the keys it was built from), in that order."""
    return {k: getattr(obj, k) for k in obj._keys}


@dataclass(frozen=True)
class InputTransform:
    """What the tokenizer reads instead of the sequence (`extraction.input_transform`): kind
    overlapping-kmers (k), lowercase (an optional strand token `prefix`) or codons (space-separated frame-0
    codons; with `length_multiple: 3`)."""

    kind: str
    k: int | None = None
    prefix: str | None = None
    _keys: tuple[str, ...] = field(default=("kind", "k", "prefix"), repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, model: str = "?") -> InputTransform:
        keys = _keys_of(data, cls, f"model {model}: extraction.input_transform")
        return cls(**dict(data), _keys=keys)

    def as_dict(self) -> dict[str, Any]:
        return _given(self)


@dataclass(frozen=True)
class Extraction:
    """The resolved extraction options (`extraction:`; defaults are GENEB's, `extraction.DEFAULT_EXTRACTION`).
    pooling: mean | max | cls | last; layer: hidden-state index (-1 last) or a module name; max_tokens: the
    input cap in tokens (None: from the model's files); long_policy: chunk_mean | truncate | error; rc: none
    | average | concat; dtype, nonfinite: the compute dtype policy; padding_side, attention_mask, causal,
    bucket_by_length: batching; length_multiple: trim rows to a multiple of it; input_transform;
    embedding_dim: the width the pooled vector must have; storage_dtype: float32 | float16 on disk; unk_policy:
    count | error, what to do with UNK tokens (not in the settings hash: `extraction.extraction_hash`); chunking:
    how a row over the cap is cut (balanced, `chunking.chunk_bounds`: the one algorithm, named in the settings
    hash so that caches made by another one, the greedy chunks before it, are extracted again)."""

    pooling: str = "mean"
    layer: int | str = -1
    exclude_special_tokens: bool = True
    max_tokens: int | None = None
    long_policy: str = "chunk_mean"
    rc: str = "none"
    dtype: str = "auto"
    nonfinite: str = "error"
    padding_side: str = "right"
    attention_mask: bool | str = "auto"
    causal: bool = False
    length_multiple: int | None = None
    input_transform: InputTransform | None = None
    embedding_dim: int | None = None
    storage_dtype: str = "float32"
    bucket_by_length: bool | str = "auto"
    unk_policy: str = "count"
    chunking: str = "balanced"
    _keys: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, model: str = "?") -> Extraction:
        """Build from an `extraction` mapping; absent keys take the defaults (and stay absent in `as_dict`).
        Raises ValueError naming the model for an unknown key."""
        keys = _keys_of(data, cls, f"model {model}: extraction")
        values = dict(data)
        if isinstance(values.get("input_transform"), Mapping):
            values["input_transform"] = InputTransform.from_dict(values["input_transform"], model=model)
        return cls(**values, _keys=keys)

    def as_dict(self) -> dict[str, Any]:
        """The `extraction` mapping: the keys it was built from (every field when built directly)."""
        keys = self._keys if self._keys is not None else tuple(f.name for f in fields(self) if f.name != "_keys")
        out = {k: getattr(self, k) for k in keys}
        if isinstance(out.get("input_transform"), InputTransform):
            out["input_transform"] = out["input_transform"].as_dict()
        return out


#: the top-level keys of resolved settings, in the order `extraction.extraction_settings` writes them
SETTINGS_KEYS = ("model", "family", "source", "builtin", "trust_remote_code", "load", "extraction", "alphabet")


@dataclass(frozen=True)
class ExtractionSettings:
    """Everything about a model that changes its embeddings (`extraction.extraction_settings`). model: the
    registry id; family: the adapter family; source: `Source` (a local folder carries its content
    fingerprint); builtin: construction settings of a builtin ({"k": 3}, a random-init config); load:
    `Load`; extraction: `Extraction`; alphabet: the alphabet policy the inputs were checked with; views: the
    resolved `views:` of the run (`geneb.registry.views.ViewSet`), None (and absent from the mapping, so the
    settings hash of a run without views is unchanged) for the registry's single view; twin: {of, seed} of a
    random-init twin (`geneb.registry.twins`; absent from the mapping for any other model)."""

    model: str
    family: str
    extraction: Extraction
    source: Source = field(default_factory=lambda: Source(kind="builtin"))
    builtin: Mapping[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False
    load: Load = field(default_factory=Load)
    alphabet: Mapping[str, Any] = field(default_factory=dict)
    views: ViewSet | None = None
    twin: Mapping[str, Any] | None = None
    _keys: tuple[str, ...] = field(default=SETTINGS_KEYS, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExtractionSettings:
        """Type a resolved settings mapping (model, family and extraction required). Raises KeyError for a
        missing required key, ValueError / SpecError naming the model for an unknown key."""
        model = str(data["model"])
        keys = _keys_of(data, cls, f"model {model}: extraction settings")
        return cls(
            model=model,
            family=data["family"],
            extraction=Extraction.from_dict(data["extraction"], model=model),
            source=Source.from_mapping(data["source"], model=model) if "source" in data else Source(kind="builtin"),
            builtin=dict(data.get("builtin") or {}),
            trust_remote_code=bool(data.get("trust_remote_code", False)),
            load=Load.from_mapping(data.get("load"), model=model),
            alphabet=dict(data.get("alphabet") or {}),
            views=ViewSet.from_dict(data["views"]) if data.get("views") is not None else None,
            twin=dict(data["twin"]) if data.get("twin") is not None else None,
            _keys=keys,
        )

    @classmethod
    def of(cls, settings: ExtractionSettings | Mapping[str, Any]) -> ExtractionSettings:
        """`settings` itself, or a resolved settings mapping typed with `from_dict`."""
        return settings if isinstance(settings, ExtractionSettings) else cls.from_dict(settings)

    def as_dict(self) -> dict[str, Any]:
        """The resolved settings mapping it was built from, exactly (what travels and is hashed)."""
        out: dict[str, Any] = {}
        for key in self._keys:
            value = getattr(self, key)
            if key in ("source", "load", "extraction"):
                value = value.as_dict()
            elif key in ("builtin", "alphabet") or (key == "twin" and value is not None):
                value = dict(value)
            elif key == "views":
                value = None if value is None else value.as_dict()
            out[key] = value
        return out


#: what the adapters and `adapters.build` take: typed settings, or the resolved mapping (typed on the way in)
SettingsLike = ExtractionSettings | Mapping[str, Any]
