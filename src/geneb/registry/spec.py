"""Typed registry entries: one `ModelSpec` per model of config/models.yaml, with its typed extraction settings
and views (layers, poolings, reverse complement).

Typed registry entries: one `ModelSpec` per model of config/models.yaml, built once by
`geneb.registry.load.load_registry` (the only reader of that file) and passed on.

Frozen dataclasses, one per section of an entry (field meanings: docs/data-dictionary.md, "Inputs: the model
registry"; the JSON schema workflow/schemas/models.schema.yaml is checked first, so `from_mapping` only maps
validated data onto fields). `as_dict()` gives back exactly the mapping an object was built from, keys that
were absent stay absent: the extraction settings built from these objects, and so their hash, are those of
the YAML entry (docs/data-dictionary.md, embedding cache folder). Torch-free.

Views: the layers, poolings and reverse-complement settings one forward pass per chunk embeds at once.

A run without a `views:` section in the config has one view per model, the registry's own (layer, pooling, rc):
its extraction settings, cache path and vectors are today's. With `views:`, the settings of every model carry a
resolved `views` entry (absolute hidden-state indices, the poolings and rc values), so the settings hash, the
cache folder and the extraction rerun key name the views; one HDF5 file per (model, task) holds them all
(`geneb.extract.step`). Torch-free: the workflow resolves and checks views while it plans.

Layers are hidden-state indices as in transformers: 0 = the embedding output, i = the output of block i, so a model
of n blocks has n + 1 of them, 0 .. n, and the registry's `layer: -1` (the last hidden state) is index n. A
requested layer is an integer (negative counts from the end: -1 = n), a relative depth d (a float strictly between 0
and 1, or a string "NN%" for any depth including "0%" and "100%": round(d x n); the config's numbers are
normalised, 1.0 becomes 1, so a float 0.0 or 1.0 would read as a layer index), or `all`. Poolings: mean, max, last (the last pooled position of the row's last chunk), cls (alias first: the
first position of the row's first chunk, the model's prefix token; refused for causal models, where it has seen
nothing but itself). Encoders without token states (k-mer counts) have no layers and one pooling, the spectrum
itself (pooling "mean": the mean of the one-hot k-mer indicators); they get one view per rc value.

Typed extraction settings: one `ExtractionSettings` per (model, alphabet), built once by
`geneb.registry.families.build` from the mapping `geneb.registry.load.extraction_settings` resolves, and passed
to the family adapters, which read attributes.

The mapping stays the form the settings travel in (Snakemake params, the HDF5 extraction key, the settings
hash); `ExtractionSettings.from_dict(d).as_dict() == d` exactly, keys that were absent stay absent, so
nothing that travels changes. Field meanings: docs/adding-a-model.md ("Extraction options") and
docs/data-dictionary.md. Torch-free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from geneb.core.envs import DEFAULT_ENV
from geneb.registry.python_entry import FACT_DEFAULTS, PYTHON, USER_FAMILIES


class SpecError(ValueError):
    """A registry entry that does not fit the typed spec (an unknown key; the message names model and key)."""


def _build(cls: type, data: Mapping[str, Any], where: str, **extra: Any) -> Any:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise SpecError(f"{where}: unknown keys {unknown}")
    return cls(**{k: _frozen(v) for k, v in data.items()}, **extra)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _present(obj: Any) -> dict[str, Any]:
    """The fields of `obj` that were given (not None), lists as lists: the mapping it was built from."""
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj) if getattr(obj, f.name) is not None}


#: every `source.kind` a registry entry may have (`Source`)
SOURCE_KINDS = ("builtin", "local", "hub", "hub-unpinned", "external", "download")
#: the source kinds whose adapter reads a local folder at `source.path` (for external and download, the folder
#: `geneb.registry.weights` resolves: the user's own, or a cache folder it unpacked or downloaded)
_FOLDER_KINDS = ("local", "external", "download")


@dataclass(frozen=True)
class Source:
    """Where the weights come from. kind: builtin | local | hub | hub-unpinned | external | download. hub_id and
    revision (a 40-hex commit for kind hub); path (kind local; kind external: the folder, archive or file the
    config key `model_weights` points at; relative paths resolve against the working directory); origin,
    base_hub_id, where, url, fetch: provenance and fetch instructions (kind download: url is what is fetched);
    expect: relative paths the weights folder must hold; sha256: the 64-hex checksum of the archive or single
    file (required for kind download); file_sha256: {relative path: sha256} of files in the folder; unpack
    (kind download: unpack the archive; default by its suffix) and filename (the downloaded file's name):
    the folder's layout (docs/adding-a-model.md, "Weights outside the hub"). Set only in extraction settings
    (`extraction.extraction_settings`, `weights.settings_source`): fingerprint, the content fingerprint of a
    folder; file, the user's archive or file a cache folder is built from."""

    kind: str
    hub_id: str | None = None
    revision: str | None = None
    path: str | None = None
    origin: str | None = None
    base_hub_id: str | None = None
    where: str | None = None
    url: str | None = None
    fetch: str | None = None
    expect: tuple[str, ...] | None = None
    sha256: str | None = None
    file_sha256: Mapping[str, str] | None = None
    unpack: bool | None = None
    filename: str | None = None
    file: str | None = None
    fingerprint: str | None = None

    @property
    def folder(self) -> str | None:
        """The local folder an adapter loads from: `path` for kinds local, external and download, else None."""
        return self.path if self.kind in _FOLDER_KINDS else None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, model: str = "?") -> Source:
        """Build from a registry `source:` mapping; raises SpecError for an unknown key or no `kind`."""
        if not isinstance(data, Mapping) or "kind" not in data:
            raise SpecError(f"model {model}: source needs a kind, got {data!r}")
        return _build(cls, data, f"model {model}: source")

    def as_dict(self) -> dict[str, Any]:
        """The `source:` mapping (absent keys absent)."""
        return _present(self)


@dataclass(frozen=True)
class Load:
    """How the checkpoint is loaded (registry `load:`). transformers: PEP 440 range the remote code works
    with; requires: {import name: pip package} checked before loading; preimport: modules imported first;
    hide_modules_on_cpu: modules hidden on CPU; package_model_name: the checkpoint name of a model package
    (Evo); window_bp: a fixed input window (bp); species: the species a multi-species supervised model runs as
    (SPACE: its species token and expert router, human or mouse); code_revision: 40-hex commit of remote code in another
    repository; config_overrides: {config key: value} set on the checkpoint's config before the model is built
    (an upstream config defect, e.g. Mistral-Codon's `pad_token_id`), without editing the files. Family python
    (`geneb.registry.python_entry`): entry, the factory (`<file.py or module>:<factory>`, or an entry point's
    name); options, the mapping the factory is called with; cpu_only, the encoder runs on CPU only (its jobs ask
    for no GPU); entry_sha256, set only in extraction settings: the fingerprint of the entry's code (and the helpers
    it imports from its folder); options_sha256, set only in extraction settings: {option: sha256 of the file or
    folder it names} (`geneb.registry.python_entry.option_fingerprints`)."""

    transformers: str | None = None
    transformers_note: str | None = None
    requires: Mapping[str, str] | None = None
    preimport: tuple[str, ...] | None = None
    hide_modules_on_cpu: tuple[str, ...] | None = None
    package_model_name: str | None = None
    window_bp: int | None = None
    species: str | None = None
    code_revision: str | None = None
    config_overrides: Mapping[str, Any] | None = None
    entry: str | None = None
    options: Mapping[str, Any] | None = None
    cpu_only: bool | None = None
    entry_sha256: str | None = None
    options_sha256: Mapping[str, str] | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, model: str = "?") -> Load:
        """Build from a registry `load:` mapping (None: nothing); raises SpecError for an unknown key."""
        return _build(cls, data or {}, f"model {model}: load")

    def as_dict(self) -> dict[str, Any]:
        """The `load:` mapping (absent keys absent)."""
        return _present(self)


@dataclass(frozen=True)
class MatchedPair:
    """A declared matched pair (registry `matched_pairs`): two models that differ in one factor
    (`differs_in`: architecture | tokenizer | pretraining_data) with `held_equal` factors the same."""

    id: str
    models: tuple[str, ...]
    differs_in: str
    held_equal: tuple[str, ...] = ()
    note: str = ""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> MatchedPair:
        """Build from one `matched_pairs` item; raises SpecError for an unknown key."""
        return _build(cls, data, f"matched pair {data.get('id')!r}")

    def as_dict(self) -> dict[str, Any]:
        """{id, models: [a, b], differs_in, held_equal, note}, as the analyses take it."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


#: the facts about a model the analyses use (`geneb.analysis.inputs.model_frame` reads these keys)
_FACT_KEYS = (
    "display",
    "params",
    "params_paper",
    "architecture",
    "architecture_family",
    "tokenizer_type",
    "pretraining_data",
    "pretraining_domain",
    "trained_on_tasks",
    "paper",
    "twin",
)


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. id: the registry key; family: the adapter family (geneb.registry.families);
    source: `Source`; builtin: construction settings of a builtin (e.g. {"k": 3}); trust_remote_code: run
    the checkpoint's own code (pinned revision and `load.transformers` required); env: the runtime environment
    its extraction runs in (`envs/<env>.yaml`; None = the default env, `geneb.core.envs.DEFAULT_ENV`; not in the
    extraction settings: an env is how a model runs, not what it computes); load: `Load`; extraction:
    the entry's own extraction options (the family's and GENEB's defaults fill the rest:
    `extraction.resolved_extraction`). params (count of parameters, None unknown), params_paper (the count
    the paper's scale analysis used), context_tokens (trained maximum input, tokens), trained_on_tasks
    (task ids seen in training: contamination), paper (the paper's record, with `model_id`): facts the
    analyses and resource requests read. lm_head (masked | causal | none, with lm_head_source) and scoring (the
    zero-shot scorers): None = the family's default (`geneb.registry.families`). twin: {of, seed} of a random-init
    twin (`geneb.registry.families`), None for any other entry. The other fields are descriptive."""

    id: str
    family: str
    source: Source
    display: str | None = None
    builtin: Mapping[str, Any] | None = None
    architecture: str | None = None
    architecture_family: str | None = None
    tokenizer_type: str | None = None
    tokenizer: str | None = None
    params: int | float | None = None
    params_note: str | None = None
    params_paper: int | None = None
    context_tokens: int | None = None
    beyond_trained_context: str | None = None
    context: str | None = None
    pretraining_data: str | None = None
    pretraining_domain: str | None = None
    license: str | None = None
    trust_remote_code: bool | None = None
    lm_head: str | None = None
    lm_head_source: str | None = None
    scoring: tuple[str, ...] | None = None
    env: str | None = None
    load: Load = field(default_factory=Load)
    extraction: Mapping[str, Any] | None = None
    trained_on_tasks: tuple[str, ...] = ()
    supervised: bool | None = None
    paper: Mapping[str, Any] | None = None
    registry_name: str | None = None
    verified: str | None = None
    loading_notes: str | None = None
    notes: str | None = None
    twin: Mapping[str, Any] | None = None

    @classmethod
    def from_mapping(cls, model: str, data: Mapping[str, Any]) -> ModelSpec:
        """Build the spec of registry entry `model` from its (schema-validated) mapping. Raises SpecError
        naming the model for an unknown key, or a missing family or source. An entry of a user family
        (`python_entry.USER_FAMILIES`) may leave out its display name (default: the id) and facts
        (`python_entry.FACT_DEFAULTS`), and a python entry its source (default: kind builtin)."""
        if isinstance(data, Mapping) and data.get("family") in USER_FAMILIES:
            data = {"display": model, **FACT_DEFAULTS, **data}
            if data["family"] == PYTHON:
                data.setdefault("source", {"kind": "builtin"})
        if not isinstance(data, Mapping) or "family" not in data or "source" not in data:
            raise SpecError(f"model {model}: an entry needs a family and a source")
        rest = {k: v for k, v in data.items() if k not in ("source", "load", "trained_on_tasks")}
        return _build(
            cls,
            rest,
            f"model {model}",
            id=model,
            source=Source.from_mapping(data["source"], model=model),
            load=Load.from_mapping(data.get("load"), model=model),
            trained_on_tasks=tuple(data.get("trained_on_tasks") or ()),
        )

    @property
    def paper_model_id(self) -> str:
        """The paper's official id of this model ("" when it is not one of the paper's models)."""
        return str((self.paper or {}).get("model_id", "") or "")

    def facts(self) -> dict[str, Any]:
        """The analyses' facts (FACT_KEYS) as a mapping, absent ones None (`metadata.model_frame`)."""
        return {key: getattr(self, key) for key in _FACT_KEYS}

    @property
    def env_name(self) -> str:
        """The env its extraction runs in: `env`, or the default env when the entry names none."""
        return self.env or DEFAULT_ENV


#: the poolings a view may name (`first` is read as `cls`)
_VIEW_POOLINGS = ("mean", "max", "last", "cls")
_POOLING_ALIASES = {"first": "cls"}
#: the view id of every score row of a run without `views:`
DEFAULT_VIEW_ID = "default"
#: the view id of the rows whose layer the inner-CV layer rule chose (per pooling and rc; `layer` names the choice)
INNER_CV_LAYER = "cv"
#: the config keys of a model's depth, in the order they are tried (transformers' names for the block count)
_DEPTH_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


class ViewError(ValueError):
    """A `views:` request a model cannot serve (layer beyond its depth, a pooling it cannot do, an empty list); the
    message names the model and the valid choices."""


@dataclass(frozen=True)
class View:
    """One view of a model's embeddings. layer: absolute hidden-state index (None: the encoder has no layers);
    pooling: mean | max | last | cls; reverse_complement: average with the reverse strand's vector."""

    layer: int | None
    pooling: str
    reverse_complement: bool

    @property
    def id(self) -> str:
        """The stable view id, e.g. "L12|mean|rc0" ("L-" for an encoder without layers)."""
        return view_id(self.layer, self.pooling, self.reverse_complement)


def view_id(layer: int | str | None, pooling: str, reverse_complement: bool) -> str:
    """ "L<layer>|<pooling>|rc<0|1>"; layer None -> "L-" (no layers), a string (e.g. INNER_CV_LAYER) as given."""
    return f"L{'-' if layer is None else layer}|{pooling}|rc{int(bool(reverse_complement))}"


@dataclass(frozen=True)
class ViewSet:
    """The resolved views of one model (the `views` entry of its extraction settings). layers: absolute
    hidden-state indices, ascending, or () for an encoder without layers; poolings; reverse_complement: the rc
    values, False first; n_layers: the model's block count (None without layers). With more than one layer, the
    probe also scores the layer the inner-CV rule chooses (`geneb.probe.views`)."""

    layers: tuple[int, ...]
    poolings: tuple[str, ...]
    reverse_complement: tuple[bool, ...]
    n_layers: int | None

    def views(self) -> list[View]:
        """Every (layer, pooling, rc) combination, rc outermost (one strand's pass serves all its views)."""
        layers: Sequence[int | None] = self.layers or (None,)
        return [View(layer, p, rc) for rc in self.reverse_complement for p in self.poolings for layer in layers]

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able mapping that goes into the extraction settings (and so into the settings hash)."""
        return {
            "layers": list(self.layers),
            "poolings": list(self.poolings),
            "reverse_complement": list(self.reverse_complement),
            "n_layers": self.n_layers,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ViewSet:
        """The inverse of `as_dict`. Raises KeyError for a missing key."""
        return cls(
            layers=tuple(int(x) for x in data["layers"]),
            poolings=tuple(str(x) for x in data["poolings"]),
            reverse_complement=tuple(bool(x) for x in data["reverse_complement"]),
            n_layers=None if data["n_layers"] is None else int(data["n_layers"]),
        )


def layer_depth(layer: int | None, n_layers: int | None) -> float | None:
    """layer / n_layers in [0, 1] (None without layers or an unknown depth)."""
    if layer is None or not n_layers:
        return None
    return float(layer) / float(n_layers)


def absolute_layer(layer: int, n_layers: int | None) -> int | None:
    """The absolute hidden-state index of a registry layer index (-1 -> n_layers); None when -1 and the depth is
    unknown."""
    if layer >= 0:
        return int(layer)
    return None if n_layers is None else n_layers + 1 + int(layer)


def model_depth(settings: Mapping[str, Any]) -> int | None:
    """The block count of a model from its resolved extraction settings, torch-free: a builtin's `config`, or the
    `config.json` of a local folder (`source.path`). None when it cannot be known without loading (a hub model, a
    config without a depth key) or the model has no layers (no torch family)."""
    builtin = settings.get("builtin") or {}
    cfg = builtin.get("config") if isinstance(builtin, Mapping) else None
    if not isinstance(cfg, Mapping):
        path = (settings.get("source") or {}).get("path")
        cfg = None
        if path and (Path(path) / "config.json").is_file():
            cfg = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    for key in _DEPTH_KEYS:
        value = (cfg or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _resolve_layer(item: Any, n: int, model: str) -> list[int]:
    valid = f"valid: 0 .. {n}, -{n + 1} .. -1, a depth strictly between 0 and 1 or 'NN%', or all"
    if item == "all":
        return list(range(n + 1))
    if isinstance(item, str) and item.endswith("%"):
        try:
            item = float(item[:-1]) / 100.0
        except ValueError:
            raise ViewError(f"model {model}: views.layers item {item!r} is not a layer ({valid})") from None
        if not 0.0 <= item <= 1.0:
            raise ViewError(f"model {model}: relative depth {item} is outside [0, 1] ({valid})")
        return [int(round(item * n))]
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        raise ViewError(f"model {model}: views.layers item {item!r} is not a layer ({valid})")
    if isinstance(item, float):
        if not 0.0 <= item <= 1.0:
            raise ViewError(f"model {model}: relative depth {item} is outside [0, 1] ({valid})")
        return [int(round(item * n))]
    index = item if item >= 0 else n + 1 + item
    if not 0 <= index <= n:
        raise ViewError(f"model {model}: layer {item} is beyond its depth ({n} blocks, {n + 1} hidden states; {valid})")
    return [int(index)]


def resolve_views(
    request: Mapping[str, Any],
    *,
    model: str,
    token_states: bool,
    n_layers: int | None,
    causal: bool,
    registry_layer: int | str,
    registry_pooling: str,
) -> ViewSet:
    """Resolve a `views:` request for one model. request: the config section (keys layers, poolings,
    reverse_complement; absent keys: the registry's layer, the registry's pooling, [false]).
    token_states: whether the encoder has per-token hidden states (False: k-mer counts); n_layers: its block count
    (`model_depth`); causal: its extraction's `causal`; registry_layer / registry_pooling: its registry settings.

    Raises ViewError naming the model and the valid choices for: an empty list; a layer beyond the depth; a depth
    that is unknown when planning (a hub model: name the layers in a registry entry of a local copy instead) or a
    layer given by module name; cls/first pooling of a causal model (its first token has seen only itself) or an
    unknown pooling.
    """
    for key in ("layers", "poolings", "reverse_complement"):
        value = request.get(key)
        if isinstance(value, (list, tuple)) and not value:
            raise ViewError(f"model {model}: views.{key} is empty; give at least one value or leave the key out")
    rc_request = request.get("reverse_complement", [False])
    rc = sorted({bool(x) for x in (rc_request if isinstance(rc_request, (list, tuple)) else [rc_request])})
    if not token_states:  # k-mer counts: no layers, the one pooling of the spectrum
        return ViewSet((), ("mean",), tuple(rc), None)
    poolings: list[str] = []
    for item in request.get("poolings") or [registry_pooling]:
        name = _POOLING_ALIASES.get(str(item), str(item))
        if name not in _VIEW_POOLINGS:
            raise ViewError(f"model {model}: unknown pooling {item!r}; valid: mean, max, last, cls (first)")
        if name == "cls" and causal:
            valid = ", ".join(p for p in _VIEW_POOLINGS if p != "cls")
            raise ViewError(
                f"model {model}: pooling {item!r} reads the first token, which in this causal model has seen only "
                f"itself (no CLS summary token); valid poolings for it: {valid}"
            )
        if name not in poolings:
            poolings.append(name)
    if isinstance(registry_layer, str):
        raise ViewError(
            f"model {model}: its layer is a module name ({registry_layer!r}); views.layers needs hidden-state "
            "indices, so leave this model out of a views run"
        )
    layers_request = request.get("layers", [registry_layer])
    items = layers_request if isinstance(layers_request, (list, tuple)) else [layers_request]
    if n_layers is None:
        raise ViewError(
            f"model {model}: its depth is not known before loading (no config.json in a local folder); views.layers "
            "cannot be checked when planning: run it from a local copy (source kind local)"
        )
    layers = sorted({index for item in items for index in _resolve_layer(item, n_layers, model)})
    return ViewSet(tuple(layers), tuple(poolings), tuple(rc), n_layers)


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
_SETTINGS_KEYS = ("model", "family", "source", "builtin", "trust_remote_code", "load", "extraction", "alphabet")


@dataclass(frozen=True)
class ExtractionSettings:
    """Everything about a model that changes its embeddings (`extraction.extraction_settings`). model: the
    registry id; family: the adapter family; source: `Source` (a local folder carries its content
    fingerprint); builtin: construction settings of a builtin ({"k": 3}, a random-init config); load:
    `Load`; extraction: `Extraction`; alphabet: the alphabet policy the inputs were checked with; views: the
    resolved `views:` of the run (`geneb.registry.spec.ViewSet`), None (and absent from the mapping, so the
    settings hash of a run without views is unchanged) for the registry's single view; twin: {of, seed} of a
    random-init twin (`geneb.registry.families`; absent from the mapping for any other model)."""

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
    _keys: tuple[str, ...] = field(default=_SETTINGS_KEYS, repr=False, compare=False)

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
