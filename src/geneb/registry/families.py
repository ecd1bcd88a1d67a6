"""Model families: which adapter loads a registry entry, with which defaults. Adapters load lazily.

A family is data: the adapter's entry point as a "module:function" string (imported only when a model of
that family is built, so a k-mer job never imports torch and an Evo entry never imports `evo` unless run),
the extraction defaults the family implies (causal or not, attention mask or not), and the optional
packages it needs ({import name: pip package}), which are checked before loading with an error that names
the model and the package. Adding a model of a known family is one registry entry; a new family is one
entry here plus one adapter module (docs/adding-a-model.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from geneb.registry.requirements import require_modules
from geneb.registry.settings import ExtractionSettings, SettingsLike


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
    from geneb.registry.weights_fetch import ensure_weights

    ensure_weights(settings)  # weights from outside the hub: unpack or download them once into their folder
    module, func = fam.entry.split(":")
    return getattr(importlib.import_module(module), func)(settings, **execution)
