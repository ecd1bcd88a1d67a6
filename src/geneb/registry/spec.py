"""Typed registry entries: one `ModelSpec` per model of config/models.yaml, built once by
`geneb.registry.load.load_registry` (the only reader of that file) and passed on.

Frozen dataclasses, one per section of an entry (field meanings: docs/data-dictionary.md, "Inputs: the model
registry"; the JSON schema workflow/schemas/models.schema.yaml is checked first, so `from_mapping` only maps
validated data onto fields). `as_dict()` gives back exactly the mapping an object was built from, keys that
were absent stay absent: the extraction settings built from these objects, and so their hash, are those of
the YAML entry (docs/data-dictionary.md, embedding cache folder). Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
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
FOLDER_KINDS = ("local", "external", "download")


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
        return self.path if self.kind in FOLDER_KINDS else None

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


#: the facts about a model the analyses use (`geneb.analysis.inputs.metadata.model_frame` reads these keys)
FACT_KEYS = (
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
    zero-shot scorers): None = the family's default (`geneb.registry.scoring`). twin: {of, seed} of a random-init
    twin (`geneb.registry.twins`), None for any other entry. The other fields are descriptive."""

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
        return {key: getattr(self, key) for key in FACT_KEYS}

    @property
    def env_name(self) -> str:
        """The env its extraction runs in: `env`, or the default env when the entry names none."""
        return self.env or DEFAULT_ENV
