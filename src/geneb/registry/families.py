"""Model families: which adapter loads an entry, with which defaults, what it needs installed, its
random-init twin, and the zero-shot scorers that apply to it.

What an entry needs installed, checked without importing it: optional packages and a remote code's
transformers range (transformers version skew). Torch-free: the registry and the pre-flight call these while
planning.

Model families: which adapter loads a registry entry, with which defaults. Adapters load lazily.

A family is data: the adapter's entry point as a "module:function" string (imported only when a model of
that family is built, so a k-mer job never imports torch and an Evo entry never imports `evo` unless run),
the extraction defaults the family implies (causal or not, attention mask or not), and the optional
packages it needs ({import name: pip package}), which are checked before loading with an error that names
the model and the package. Adding a model of a known family is one registry entry; a new family is one
entry here plus one adapter module (docs/adding-a-model.md).

Random-init twins: a model's own architecture and tokenizer with seeded random weights, the control that shows
whether pretraining helps at all (the same network, extraction and probe; only the weights differ).

A twin is a registry entry like any other, made from its model's entry:

* implicitly, as `<model>-twin` (seed 0) for every entry that can be re-initialised (`add_implicit_twins`, run by
  the registry's reader, so every reader of the registry knows them), which is what config `twins: true` adds to
  a run for each of its models;
* explicitly, `<id>: {twin_of: <model>, twin_seed: <int>}` in a registry file (optional `display`, `notes`).

The twin keeps its model's family, source (for the configuration, tokenizer and remote code; the weights are
never read), extraction options and parameter count, and records `twin: {of, seed}`, which enters the extraction
settings and so the cache key. Its facts say what it is: pretraining data none, no language-model head (a random
head scores nothing). The encoder builds the network from the configuration with `torch.manual_seed(seed)` then
the model class's own initialisation (`geneb.encoders.loading`), so one seed and one torch version give one
set of weights, whose hash is in the encoder's identity.

Families GENEB re-initialises: the transformers families (hf-encoder, hf-decoder, hf-ssm, hyena with its remote
code, caduceus, gpn), whose classes build from their configuration. `twin_refusal` says why any other cannot.

Which zero-shot scorers apply to a registry model: its language-model head (`lm_head`) and its `scoring:` list,
each with the family's default when the entry says nothing (docs/data-dictionary.md, "Inputs: the model registry").

* `lm_head`: masked | causal | none, the head the checkpoint's architecture has (the paper's 40 models carry
  the fact and its source, `lm_head_source`; otherwise the family's `Family.lm_head`).
* `scoring`: the scorers among `_SCORERS` (`llr`: the language model's log-likelihood ratio,
  geneb.zeroshot.llr; `embedding`: distances between ref and alt embeddings, every model). Default: both for a
  model with a head whose family GENEB can load a head for (the transformers families), else `embedding` only;
  `llr` is never a default without a head.

Torch-free.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from geneb.core.errors import MissingPackageError, TransformersVersionError
from geneb.registry.spec import ExtractionSettings, SettingsLike


def check_transformers_range(model: str, spec: str | None, installed: str | None = None) -> None:
    """Raise TransformersVersionError when `installed` (default: the installed transformers) is outside the
    PEP 440 range `spec` (e.g. ">=4.26,<4.30") that the registry declares for `model`. spec None passes."""
    if not spec:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    if installed is None:
        from importlib import metadata

        installed = metadata.version("transformers")
    try:
        ok = Version(installed) in SpecifierSet(spec)
    except InvalidSpecifier as err:
        raise ValueError(f"model {model}: transformers range {spec!r} is not a valid version specifier") from err
    if not ok:
        raise TransformersVersionError(
            f"model {model} declares transformers {spec}, but {installed} is installed; its remote code is "
            "known to break outside that range: run it in an environment with a matching transformers"
        )


def require_modules(model: str, modules: Mapping[str, str] | None) -> None:
    """Check that every import name in `modules` ({import name: pip package}) can be imported, without
    importing it. Raises MissingPackageError naming the model, the package and the install command."""
    for module, package in (modules or {}).items():
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise MissingPackageError(
                f"model {model} needs the optional package {package!r} (import {module}), which is not installed; "
                f"install it with `pip install {package}` in the extraction environment"
            )


@dataclass(frozen=True)
class Family:
    """One adapter family. entry: "module:function" returning an Encoder (or None: no adapter yet).
    extraction: defaults merged under the registry entry's `extraction`. requires: {import name: pip
    package}. uses_torch: whether building it imports torch. dtypes: the compute dtypes its adapter runs in
    (None: every one of `settings.COMPUTE_DTYPES`; `dtype: auto` resolves to the first where that rule's is
    not among them). notes: loading notes for docs and errors. lm_head: the language-model head a model of the
    family has unless its entry says (`lm_head`): causal for the decoder families, masked for Caduceus and GPN,
    none elsewhere (an hf-encoder checkpoint is often a bare backbone; the entry says when it keeps a head)."""

    entry: str | None
    extraction: dict[str, Any] = field(default_factory=dict)
    requires: dict[str, str] = field(default_factory=dict)
    uses_torch: bool = True
    notes: str = ""
    dtypes: tuple[str, ...] | None = None
    lm_head: str = "none"


_HF = "geneb.encoders.families.hf:from_settings"

FAMILIES: dict[str, Family] = {
    "kmer": Family(
        "geneb.encoders.families.kmer:from_settings", uses_torch=False, notes="overlapping k-mer frequencies; no model"
    ),
    "shortcut": Family(
        "geneb.encoders.families.shortcut:from_settings",
        uses_torch=False,
        notes="shortcut features (length, GC, mono-/di-/trinucleotide composition, CpG o/e); no model, CPU only",
    ),
    "random-init": Family(
        "geneb.encoders.families.random_init:from_settings",
        notes="seeded random-init NT/ESM-style encoder built from a config",
    ),
    "hf-encoder": Family(
        _HF,
        {"causal": False},
        notes="bidirectional transformers encoder (ESM/NT, BERT, ModernBERT, BigBird, remote-code BERTs)",
    ),
    "hf-decoder": Family(
        _HF,
        {"causal": True},
        notes="causal transformers decoder (Llama, Mistral, Mixtral, GPT-NeoX, GPT-2, OLMo)",
        lm_head="causal",
    ),
    "hf-ssm": Family(
        _HF,
        {"causal": True},
        notes="causal state-space model in transformers (Mamba); takes an attention mask",
        lm_head="causal",
    ),
    "hyena": Family(
        _HF,
        {"causal": True, "attention_mask": False},
        notes="HyenaDNA -hf remote code: a causal long convolution with no attention mask; right padding "
        "is invisible to real positions, so batches are padded on the right and pooled over real tokens",
        lm_head="causal",
    ),
    "caduceus": Family(
        _HF,
        {"causal": False, "attention_mask": False},
        {"mamba_ssm": "mamba-ssm"},
        notes="Caduceus / PlantCaduceus remote code: bidirectional Mamba, no attention mask, so only "
        "equal-length sequences share a batch; needs mamba-ssm CUDA kernels. RC: -ps checkpoints are "
        "RC-equivariant by parameter sharing (hidden = 2 x d_model, forward and RC channel halves; "
        "mean pooling of an RC input swaps the halves), -ph ones were trained with RC augmentation, "
        "for which the authors average forward and RC embeddings (rc: average)",
        lm_head="masked",
    ),
    "biofm": Family(
        "geneb.encoders.families.biofm:from_settings",
        {"causal": True},
        notes="BioFM (m42-health): a transformers Mistral decoder read with GENEB's BioToken tokenizer "
        "(biofm-eval's AnnotationTokenizer rules: one token per letter, [CLS] ... [SEP]); padded on the right "
        "with the attention mask, so `last` pooling without special tokens is each row's last nucleotide",
    ),
    "gpn": Family(
        _HF,
        {"causal": False},
        {"gpn": "gpn"},
        notes="GPN: `import gpn.model` registers its classes with AutoModel (no remote code)",
        lm_head="masked",
    ),
    "evo": Family(
        "geneb.encoders.families.evo:from_settings",
        {"causal": True, "attention_mask": False},
        {"evo": "evo-model"},
        notes="Evo 1 / 1.5 through the evo-model package: StripedHyena returns logits, so the unembedding "
        "is replaced by the identity to read the final hidden states (evo-design/evo #32)",
    ),
    "evo2": Family(
        "geneb.encoders.families.evo:from_settings_evo2",
        {"causal": True, "attention_mask": False},
        {"evo2": "evo2"},
        notes="Evo 2 through the evo2 package (Vortex): embeddings from a named block via "
        "return_embeddings/layer_names; the layer must be a module name",
    ),
    "enformer": Family(
        "geneb.encoders.families.enformer:from_settings",
        {},
        {"enformer_pytorch": "enformer-pytorch"},
        notes="Enformer through enformer-pytorch: a fixed 196,608-bp one-hot window, 896 x 128-bp output "
        "bins of width 3072; GENEB centres the sequence and pools the bins that cover it",
        dtypes=("float32",),  # the adapter runs the package's model as loaded, in float32
    ),
    "genomics-fm": Family(
        "geneb.encoders.families.genomics_fm:from_settings",
        {"causal": False},
        notes="Genomics-FM from the authors' checkpoint folder: GENEB's own MosaicBERT-style module (fused Wqkv, "
        "gated-GELU MLP, ALiBi), input [CLS] [BPE] [ALIBI] tokens [SEP] as in pretraining; no remote code",
    ),
    "deepgene": Family(
        "geneb.encoders.families.deepgene:from_settings",
        {"causal": False},
        notes="DeepGene from the authors' checkpoint folder in transformers' RoFormerModel (checked key mapping, "
        "rotary table checked against the authors' formula), input [CLS] [SEP] tokens; no remote code",
    ),
    "space": Family(
        "geneb.encoders.families.space:from_settings",
        notes="SPACE (species mixture-of-experts Enformer) in GENEB's own module, read from the checkpoint's "
        "config.json and weights (no remote code): a 131,072-bp one-hot window, 896 x 128-bp output bins of "
        "width 3072, run as load.species (default human); GENEB centres the sequence and pools the bins that "
        "cover it",
        dtypes=("float32",),  # the module runs in float32, as the reference
    ),
    "dnagpt": Family(
        "geneb.encoders.families.dnagpt:from_settings",
        {"causal": True, "attention_mask": False},
        notes="DNAGPT (TencentAILabHealthcare/DNAGPT): GENEB's own module and k-mer tokenizer from the authors' "
        "code, reading the authors' <name>.pth from a local folder; a causal decoder without a padding mask, "
        "padded on the right; the <R> species token before every chunk (docs/adapters/dnagpt.md)",
    ),
    "lucaone": Family(
        "geneb.encoders.families.lucaone:from_settings",
        {"causal": False},
        {"lucaone": "lucaone"},
        notes="LucaOne (LucaGPLM) through its checkpoint's remote code after `import lucaone`: one gene+protein "
        "vocabulary, nucleotides as digits (seq_type gene), [CLS]/[SEP], token type 0, rotary positions, "
        "attention mask",
    ),
    "janusdna": Family(
        "geneb.encoders.families.janusdna:from_settings",
        {"causal": False, "attention_mask": False},
        notes="JanusDNA (Harvard Dataverse Lightning checkpoints) on GENEB's native torch network: two causal "
        "Mamba/attention/MoE streams fused by a final attention; no padding mask anywhere, so only "
        "equal-length sequences share a batch; no Mamba kernels, runs in the default env on CPU or GPU",
        dtypes=("float32",),  # the native selective scan is checked in float32 only; the model has 2M parameters
    ),
    "python": Family(
        "geneb.encoders.families.python_encoder:from_settings",
        notes="the user's own encoder: `load.entry` names a factory (a .py file, a module or an entry point of the "
        "group geneb.encoders) called with `load.options`, returning an object whose `embed(list[str])` gives one "
        "vector per sequence; GENEB chunks rows over its `max_length` and runs the load-time checks "
        "(geneb.registry.python_entry)",
        dtypes=("float32",),  # the object computes in what it likes; GENEB stores float32, one cache on CPU and GPU
    ),
    "precomputed": Family(
        "geneb.extract.precomputed:from_settings",
        uses_torch=False,
        notes="vectors computed elsewhere: <source.path>/<task>/<split>.npy in the order of the task's source rows, "
        "or <source.path>/<task>.h5 in GENEB's cache layout; checked and copied into the cache by the extraction "
        "job (geneb.extract.precomputed)",
    ),
    "unsupported": Family(None, notes="no GENEB adapter yet (custom package or weights outside the hub)"),
}


def family(name: str, *, model: str = "?") -> Family:
    """The Family called `name`; raises ValueError naming the model and the known families."""
    if name not in FAMILIES:
        raise ValueError(f"model {model}: unknown family {name!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[name]


def build(settings: SettingsLike, **execution: Any) -> Any:
    """Build the encoder of resolved `settings` (the mapping of registry.extraction_settings, typed here once
    as `ExtractionSettings` and passed to the family's adapter) with execution knobs (device, batch_size,
    progress). Imports the adapter module only now. Before it, weights from outside the hub (source kinds external,
    download) are unpacked or downloaded into their folder when it is not there yet (`weights_fetch.ensure_weights`).
    Raises ValueError for a family without an adapter, MissingPackageError (naming model and package) for a
    missing optional package, and WeightsError for weights that cannot be built (geneb.registry.weights)."""
    settings = ExtractionSettings.of(settings)
    model = settings.model
    fam = family(settings.family, model=model)
    if fam.entry is None:
        raise ValueError(f"model {model}: family {settings.family!r} has no GENEB adapter ({fam.notes})")
    require_modules(model, {**fam.requires, **(settings.load.requires or {})})
    from geneb.registry.weights import ensure_weights

    ensure_weights(settings)  # weights from outside the hub: unpack or download them once into their folder
    module, func = fam.entry.split(":")
    return getattr(importlib.import_module(module), func)(settings, **execution)


#: the id suffix of an implicit twin
_TWIN_SUFFIX = "-twin"
#: what an explicit twin entry may set itself (the rest comes from its model's entry)
_TWIN_ENTRY_KEYS = ("twin_of", "twin_seed", "display", "notes")
#: the adapter of the families whose networks build from their configuration (`AutoModel.from_config`)
_HF_ENTRY = "geneb.encoders.families.hf:from_settings"
#: the facts of the model's entry a twin does not inherit (they describe the trained weights)
_NOT_INHERITED = ("paper", "trained_on_tasks", "lm_head", "lm_head_source", "scoring", "registry_name", "verified")


def _twin_id(model: str) -> str:
    """The id of `model`'s implicit twin."""
    return f"{model}{_TWIN_SUFFIX}"


def implicit_parent(model: str) -> str | None:
    """The model an implicit twin id names (`x-twin` -> `x`), None for any other id."""
    return model[: -len(_TWIN_SUFFIX)] if model.endswith(_TWIN_SUFFIX) and len(model) > len(_TWIN_SUFFIX) else None


def twin_refusal(entry: Mapping[str, Any]) -> str | None:
    """Why the registry entry `entry` (a raw mapping) has no random-init twin, None when it can have one."""
    if entry.get("twin"):
        return "it is a random-init twin itself"
    family = str(entry.get("family"))
    if family == "random-init":
        return "it is random-init already"
    if family in ("kmer", "shortcut"):
        return f"family {family} has no trained weights to re-initialise"
    if family in ("python", "precomputed"):
        return f"family {family}: GENEB does not build the network (user code or vectors computed elsewhere)"
    fam = FAMILIES.get(family)
    if fam is None or fam.entry != _HF_ENTRY:
        return f"family {family}: GENEB's adapter for it loads trained weights only (no build from a configuration)"
    return None


def _twin_entry(
    parent: str, parent_entry: Mapping[str, Any], seed: int = 0, own: Mapping[str, Any] | None = None
) -> dict:
    """The registry entry (raw mapping) of the twin of `parent` (whose raw entry is `parent_entry`) at `seed`;
    `own`: what an explicit twin entry sets itself (display, notes). Raises ValueError naming the model when
    `twin_refusal` refuses it."""
    refusal = twin_refusal(parent_entry)
    if refusal is not None:
        raise ValueError(f"model {parent} has no random-init twin: {refusal}")
    own = dict(own or {})
    entry = {k: v for k, v in parent_entry.items() if k not in _NOT_INHERITED}
    entry.update(
        display=own.get("display") or f"{parent_entry.get('display', parent)} (random-init twin)",
        twin={"of": parent, "seed": int(seed)},
        pretraining_data=f"none: random-init twin of {parent} (its configuration and tokenizer, weights from seed {seed})",
        pretraining_domain="none",
        lm_head="none",
        lm_head_source="a random-init twin: its head is random",
        notes=own.get("notes")
        or f"GENEB-made control: {parent}'s architecture with seeded random weights; nothing was trained.",
    )
    entry.pop("supervised", None)
    return entry


def expand_twin_entries(models: dict[str, Any]) -> list[str]:
    """Replace each explicit twin entry (`twin_of`) of the registry's `models` mapping, in place, by its full
    entry (`_twin_entry`). Returns the problems, each naming the entry: an unknown `twin_of`, a key a twin cannot
    set, a model that cannot have a twin."""
    problems = []
    for name, entry in list(models.items()):
        if not isinstance(entry, Mapping) or "twin_of" not in entry:
            continue
        parent = str(entry["twin_of"])
        extra = sorted(set(entry) - set(_TWIN_ENTRY_KEYS))
        if extra:
            problems.append(f"model {name}: a twin entry sets only {list(_TWIN_ENTRY_KEYS)}, not {extra}")
            continue
        if parent not in models or "twin_of" in (models[parent] or {}):
            problems.append(f"model {name}: twin_of {parent!r} is not a (non-twin) entry of the registry")
            continue
        try:
            models[name] = _twin_entry(parent, models[parent], int(entry.get("twin_seed", 0)), entry)
        except ValueError as err:
            problems.append(f"model {name}: {err}")
    return problems


def add_implicit_twins(models: dict[str, Any]) -> None:
    """Add, in place, the implicit twin `<model>-twin` (seed 0) of every entry of the registry's `models` mapping
    that can have one (`twin_refusal`) and has no entry of that id already (an explicit entry of the same id
    wins). Run after validation: a twin entry is made of its model's validated fields."""
    for name, entry in list(models.items()):
        if twin_refusal(entry) is None and _twin_id(name) not in models:
            models[_twin_id(name)] = _twin_entry(name, entry)


def _twins_of(models: list[str], refusal: Any) -> tuple[list[str], list[str]]:
    """The twin ids of `models` (in their order) and, for each model that has none, a line naming it and why;
    `refusal(model)`: the reason it cannot have one, or None. A model that is a twin itself is skipped silently,
    as is a twin already in `models`."""
    twins, skipped = [], []
    for model in models:
        if implicit_parent(model) is not None and implicit_parent(model) in models:
            continue
        reason = refusal(model)
        if reason is None:
            if _twin_id(model) not in models:
                twins.append(_twin_id(model))
        elif reason != "it is a random-init twin itself":
            skipped.append(f"{model}: {reason}")
    return twins, skipped


def with_twins(models: list[str], raw_models: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Config `twins: true`: `models` followed by the twin of each that can have one (`_twins_of`; `raw_models`:
    the registry's raw entries), and the log lines: one naming the models without one and why (none when every
    model has one)."""
    twins, skipped = _twins_of(models, lambda m: twin_refusal(raw_models[m]))
    return [*models, *twins], (["twins: no random-init twin for " + "; ".join(skipped)] if skipped else [])


#: the zero-shot scorers a registry entry may list under `scoring:`
_SCORERS: tuple[str, ...] = ("llr", "embedding")
#: the `lm_head` values
_LM_HEADS: tuple[str, ...] = ("masked", "causal", "none")
#: the adapter entry whose families can load a language-model head (geneb.zeroshot.llr)
_HEAD_LOADER_ENTRY = "geneb.encoders.families.hf:from_settings"


def resolved_lm_head(entry: Mapping[str, Any]) -> str:
    """The entry's `lm_head`, or its family's default ("none" for an unknown family)."""
    head = entry.get("lm_head")
    if head is not None:
        return str(head)
    fam = FAMILIES.get(str(entry.get("family")))
    return fam.lm_head if fam is not None else "none"


def _default_scoring(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """("llr", "embedding") for a model with a head whose family loads heads, else ("embedding",)."""
    fam = FAMILIES.get(str(entry.get("family")))
    loads_head = fam is not None and fam.entry == _HEAD_LOADER_ENTRY
    return ("llr", "embedding") if loads_head and resolved_lm_head(entry) != "none" else ("embedding",)


def resolved_scoring(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The entry's `scoring:` list, or `_default_scoring`."""
    given = entry.get("scoring")
    return tuple(str(s) for s in given) if given is not None else _default_scoring(entry)


def scoring_problems(model: str, entry: Mapping[str, Any]) -> list[str]:
    """Every problem of the entry's `lm_head` / `scoring` (for check_registry): an unknown head or scorer (named
    with the value), an empty list, and `llr` for a model whose lm_head is none."""
    where = f"model {model}"
    problems: list[str] = []
    head = entry.get("lm_head")
    if head is not None and head not in _LM_HEADS:
        problems.append(f"{where}: lm_head {head!r} is not one of {list(_LM_HEADS)}")
    given = entry.get("scoring")
    if given is None:
        return problems
    if not isinstance(given, (list, tuple)) or not given:
        return [*problems, f"{where}: scoring must be a non-empty list of {list(_SCORERS)}, got {given!r}"]
    for name in given:
        if name not in _SCORERS:
            problems.append(f"{where}: scoring names an unknown scorer {name!r} (known: {list(_SCORERS)})")
    if "llr" in given and resolved_lm_head(entry) == "none":
        problems.append(
            f"{where}: scoring lists llr but the model has no language-model head (lm_head none"
            f"{'' if head is not None else ', the default of family ' + repr(entry.get('family'))}); set lm_head or "
            "drop llr"
        )
    return problems
