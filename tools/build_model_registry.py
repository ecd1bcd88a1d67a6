"""Regenerate config/models.yaml from the shared reference facts plus GENEB's curation.

Run from the repository root: `python tools/build_model_registry.py [--shared ../shared]`. The output is
committed; this script documents how it was made. Facts come from `../shared/reference/geneb_paper/models.tsv`
(the paper's 40 models: official ids, hub ids or other sources, parameter counts, architecture, tokenizer,
the reference extractor's input cap, hidden-state tap, pooling, width and known defects) and
`../shared/reference/registry.yaml` (111 public models: hub ids, sizes, context, pretraining data, loader
notes, licences). The tables below are curation decisions, each with its reason: which GENEB adapter family
serves a model, the transformers range its remote code needs, the paper's reference extraction as each
paper model's default, what GENEB does differently where the reference is known to be wrong, and the
declared matched pairs. config/models.yaml is this script's output: never edit it by hand; change a table here
and rerun (a test compares the committed file with a fresh build).

Where the two sources disagree about a paper model, the verified fact wins and the entry's notes say so:
* the three factors matched-pair derivation compares (architecture family, tokenizer type, pretraining
  domain; geneb.analysis.pairs): `reconcile` takes registry.yaml's value where its record is verified (V),
  the paper's sheet's where it is not (K), and notes the disagreement either way; the run prints each one;
* the hub id: `resolve_hub_id` takes registry.yaml's verified id (GenomeOcean: pGenomeOcean/, not DOEJGI/);
* an input cap above the trained context (extraction.max_tokens > context_tokens) is refused by
  geneb.models.registry.check_registry unless the entry says why (`beyond_trained_context`,
  BEYOND_TRAINED_CONTEXT here).

No hub revision is known for any hub model in these sources, so every hub entry is written as
`source.kind: hub-unpinned` (not runnable; case B24): pinning one is adding `revision: <40-hex commit>` and
changing the kind to `hub`. No commit hash is ever made up here.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

# ---- vocabularies ------------------------------------------------------------------------------------------

# paper `family` column -> GENEB architecture_family (docs/data-dictionary.md)
PAPER_ARCH_FAMILY = {
    "transformer-decoder": "transformer-decoder",
    "transformer-encoder": "transformer-encoder",
    "striped-hyena": "striped-hyena",
    "hyena": "hyena",
    "mamba": "ssm",
    "cnn-transformer": "hybrid",
    "cnn-transformer-moe": "hybrid",
    "hybrid-mamba-moe": "hybrid",
}
PAPER_TOKENIZER = {"character": "single-nucleotide"}

# remote-code transformers ranges (case B19), with their sources
RANGE_DEFAULT = (
    "<5",
    "registry.yaml section 5: remote code of these repos targets transformers 4.2x-4.4x; "
    "transformers 5 breaks trust_remote_code loading (USER_ASKS 12)",
)
RANGE_DNABERT2 = (
    ">=4.28,<4.30",
    "config.json written by 4.28.0; maintainers advise pinning 4.29 because newer "
    "transformers raise a config_class mismatch (registry.yaml, MAGICS-LAB/DNABERT_2 issues)",
)
RANGE_HYENA = (
    ">=4.26,<4.40",
    "CharacterTokenizer clashes with a base-class method from transformers 4.40 unless "
    "the pinned revision carries the upstream fix (case B19)",
)
RANGE_LUCAONE = ("==4.41.2", "LucaOne pins transformers 4.41.2 (registry.yaml section 5)")

# registry.yaml `family` -> (GENEB family, extra extraction, extra load, note)
REGISTRY_FAMILY: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {
    "DNABERT": ("hf-encoder", {}, {}, ""),
    "DNABERT-2": ("hf-encoder", {}, {"hide_modules_on_cpu": ["triton"]}, ""),
    "Nucleotide Transformer v1": ("hf-encoder", {}, {}, ""),
    "Nucleotide Transformer v2": ("hf-encoder", {}, {}, ""),
    "Nucleotide Transformer (plant)": ("hf-encoder", {}, {}, ""),
    "Nucleotide Transformer v3": (
        "unsupported",
        {},
        {},
        "U-Net + transformer remote code kept in another repo "
        "(InstaDeepAI/ntv3_base_model), gated weights; not wired into GENEB yet",
    ),
    "HyenaDNA": ("hyena", {}, {}, ""),
    "Caduceus": ("caduceus", {}, {}, ""),
    "PlantCaduceus": ("caduceus", {}, {}, ""),
    "PlantCAD2": ("caduceus", {}, {}, ""),
    "GPN": ("gpn", {}, {"preimport": ["gpn.model"]}, ""),
    "Evo": ("evo", {}, {}, ""),
    "Evo 2": ("evo2", {}, {}, ""),
    "GENA-LM": ("hf-encoder", {}, {}, ""),
    "GROVER": ("hf-encoder", {}, {}, ""),
    "GENERator": (
        "hf-decoder",
        {},
        {},
        "GENERator's card recommends trimming input to a multiple of 6 (leftovers "
        "become <oov>): set extraction.length_multiple: 6 for the authors' recipe",
    ),
    "GENERanno": ("hf-encoder", {}, {}, ""),
    "MutBERT": ("hf-encoder", {}, {}, ""),
    "Mistral-DNA": ("hf-decoder", {}, {}, ""),
    "Jamba-DNA": (
        "hf-decoder",
        {},
        {},
        "Jamba's fast path needs mamba-ssm; the transformers slow path runs without it",
    ),
    "ModernBERT-DNA": ("hf-encoder", {}, {}, ""),
    "GenomeOcean": ("hf-decoder", {}, {}, ""),
    "gLM2": (
        "hf-encoder",
        {"input_transform": {"kind": "lowercase", "prefix": "<+>"}},
        {},
        "gLM2 reads nucleotides in lowercase after a strand token (<+>)",
    ),
    "METAGENE": ("hf-decoder", {}, {}, ""),
    "Omni-DNA": ("hf-decoder", {}, {}, ""),
    "OmniNA": ("hf-decoder", {}, {}, ""),
    "ProkBERT": ("hf-encoder", {}, {}, ""),
    "SpeciesLM": (
        "unsupported",
        {},
        {},
        "input needs a species token before the overlapping 6-mers; GENEB has no input transform for it yet",
    ),
    "AIDO.DNA": ("unsupported", {}, {}, "loads through GenBio's ModelGenerator package; no GENEB adapter yet"),
    "LucaOne": ("unsupported", {}, {}, "loads through the lucaone package; no GENEB adapter yet"),
    "Genos": (
        "unsupported",
        {},
        {},
        "custom MoE stack, GPU-only in practice (registry.yaml); not wired into GENEB yet",
    ),
    "HybriDNA": (
        "unsupported",
        {},
        {},
        "custom hybrid stack, GPU-only in practice (registry.yaml); not wired into GENEB yet",
    ),
    "eccDNAMamba": ("hf-encoder", {}, {"requires": {"mamba_ssm": "mamba-ssm"}}, "bidirectional Mamba-2 remote code"),
    "Plant DNA LLMs": ("hf-encoder", {}, {}, ""),  # refined per model below
    "Enformer": ("enformer", {}, {}, ""),
    "Borzoi": ("unsupported", {}, {}, "borzoi-pytorch package; no GENEB adapter yet"),
    "AlphaGenome": ("unsupported", {}, {}, "JAX model with gated weights; no GENEB adapter"),
    "GenSLM": ("unsupported", {}, {}, "weights outside the hub (GitHub release); no GENEB adapter"),
    "DNAGPT": ("unsupported", {}, {}, "weights outside the hub; no GENEB adapter"),
    "megaDNA": ("unsupported", {}, {}, "custom MEGABYTE code; hub id unverified"),
    "JanusDNA": ("unsupported", {}, {}, "custom code; weights outside the hub"),
}
PLANT_FAMILY = {"plant-dnagpt-BPE": "hf-decoder", "plant-dnagemma-BPE": "hf-decoder", "plant-dnamamba-BPE": "hf-ssm"}
#: Evo 2 block named in its README for embeddings of the 7B model; other sizes have no established layer
EVO2_LAYER = {"evo2_7b_base": "blocks.28.mlp.l3", "evo2_7b": "blocks.28.mlp.l3"}

# ---- the paper's 40 models: GENEB family and what GENEB changes ---------------------------------------------------

# official id -> curation (family; registry.yaml name it matches when the hub id differs or is absent;
# notes on the reference extractor's defect and what GENEB does instead)
PAPER: dict[str, dict[str, Any]] = {
    "METAGENE-1": {
        "family": "hf-decoder",
        "geneb_changes": "reference averaged padded rows into the mean; GENEB pools over real tokens only",
    },
    "evo-1-131k-base": {
        "family": "evo",
        "package_model_name": "evo-1-131k-base",
        "geneb_changes": "reference kept only batch element 0 of each batch; GENEB embeds every row",
    },
    "GenomeOcean-4B": {"family": "hf-decoder", "registry_name": "GenomeOcean-4B"},
    "GENERator-eukaryote-3b-base": {"family": "hf-decoder"},
    "dna_gpt3b_m": {"family": "unsupported", "registry_name": "DNAGPT", "where": "google-drive (DNAGPT authors)"},
    "nucleotide-transformer-2.5b-multi-species": {
        "family": "hf-encoder",
        "geneb_changes": "reference padded to 1000 tokens; GENEB pads dynamically (identical result with the mask)",
    },
    "LucaOne-default-step36M": {"family": "unsupported"},
    "GENERator-eukaryote-1.2b-base": {"family": "hf-decoder"},
    "Omni-DNA-1B": {"family": "hf-decoder"},
    "agro-nucleotide-transformer-1b": {
        "family": "hf-encoder",
        "geneb_changes": "reference padded to 1024 tokens; GENEB pads dynamically (identical result with the mask)",
    },
    "space": {
        "family": "unsupported",
        "note": "custom SPACE code (species mixture-of-experts Enformer); no GENEB adapter",
    },
    "eccdnamamba_weights": {
        "family": "hf-encoder",
        "registry_name": "eccDNAMamba-1M",
        "geneb_changes": "reference declared no finite input cap, so nothing was truncated; GENEB "
        "needs extraction.max_tokens before it runs this model",
    },
    "GenomeOcean-500M": {"family": "hf-decoder", "registry_name": "GenomeOcean-500M"},
    "gena-lm-bert-large-t2t": {"family": "hf-encoder"},
    "Omni-DNA-300M": {"family": "hf-decoder"},
    "BioFM-265M": {
        "family": "unsupported",
        "note": "BioToken annotation tokenizer from its own package; no GENEB adapter",
        "geneb_changes": "reference dropped the attention mask and indexed valid_count-2 as an absolute row, so "
        "short records in a left-padded batch read a pad row; GENEB would take the last real "
        "non-special token of each row",
    },
    "enformer-official-rough": {
        "family": "enformer",
        "registry_name": "Enformer",
        "geneb_changes": "reference averaged all 896 bins of a prefix-aligned, N-padded window; "
        "GENEB centres the sequence and pools only the bins that cover it",
    },
    "nucleotide-transformer-v2-250m-multi-species": {"family": "hf-encoder"},
    "PlantCaduceus_l32": {
        "family": "caduceus",
        "geneb_changes": "reference declared no finite cap (nothing truncated); GENEB caps at the "
        "trained 512 bp and chunks or truncates by policy; no attention mask is passed",
    },
    "OmniNA-220m": {
        "family": "hf-decoder",
        "geneb_changes": "reference asked for truncation against the tokenizer's 1e30 sentinel, so nothing "
        "was truncated; GENEB applies the 2048-token cap (case B14)",
    },
    "gpt2_gene_multi_v2_ft": {"family": "hf-decoder"},
    "gpt2_gene_v1": {"family": "hf-decoder"},
    "genomics-fm": {
        "family": "unsupported",
        "where": "google-drive (Genomics-FM authors)",
        "note": "custom BERT code; its CPU path raises TypeError (paper notes)",
    },
    "DNABERT-S": {
        "family": "hf-encoder",
        "geneb_changes": "reference omitted trust_remote_code, so the built-in BERT class ran with the Mosaic "
        "checkpoint's tensors missing; GENEB loads the remote code (and refuses an auto_map "
        "checkpoint without it)",
    },
    "dnabert2-no-flashattention": {
        "family": "hf-encoder",
        "registry_name": "DNABERT-2-117M",
        "geneb_changes": "GENEB hides triton while the remote code loads on CPU, forcing the "
        "PyTorch attention path (the paper's 'no-flashattention' variant)",
    },
    "gena-lm-bert-base-t2t-multi": {"family": "hf-encoder"},
    "gena-lm-bert-base": {"family": "hf-encoder", "remote": True},
    "dna_gpt0.1b_h": {"family": "unsupported", "registry_name": "DNAGPT", "where": "google-drive (DNAGPT authors)"},
    "nucleotide-transformer-v2-100m-multi-species": {"family": "hf-encoder"},
    "GROVER": {
        "family": "hf-encoder",
        "note": "tokenizer.json has 610 entries but the checkpoint's vocabulary is 609; GENEB's token-id guard "
        "(case B22) stops the run if id 609 is ever produced",
    },
    "MutBERT": {
        "family": "hf-encoder",
        "geneb_changes": "reference asked for truncation without a finite tokenizer maximum, so long inputs "
        "were not truncated; GENEB applies the 512-token cap",
    },
    "deepgene": {"family": "unsupported", "where": "google-drive (DeepGene authors)"},
    "hyenadna-large-1m-seqlen-hf": {
        "family": "hyena",
        "geneb_changes": "reference left-padded with no mask, so pads reached real positions; "
        "GENEB pads on the right (a causal model cannot see them) and pools real positions (case B02)",
    },
    "nucleotide-transformer-v2-50m-3mer-multi-species": {"family": "hf-encoder"},
    "nucleotide-transformer-v2-50m-multi-species": {"family": "hf-encoder"},
    "hyenadna-medium-160k-seqlen-hf": {
        "family": "hyena",
        "geneb_changes": "reference left-padded with no mask, so pads reached real positions; "
        "GENEB pads on the right (a causal model cannot see them) and pools real positions (case B02)",
    },
    "caduceus-ps_seqlen-131k_d_model-256_n_layer-16": {
        "family": "caduceus",
        "geneb_changes": "reference passed an attention mask the Caduceus forward does not take; "
        "GENEB passes none and batches equal lengths only",
    },
    "JanusDNA_72_w": {
        "family": "unsupported",
        "registry_name": "JanusDNA",
        "where": "harvard-dataverse",
        "geneb_changes": "reference wrapper defaulted to CPU while the model needs CUDA mamba kernels",
    },
    "JanusDNA_72_wo": {
        "family": "unsupported",
        "registry_name": "JanusDNA",
        "where": "harvard-dataverse",
        "geneb_changes": "reference wrapper defaulted to CPU while the model needs CUDA mamba kernels",
    },
    "caduceus-ph_seqlen-1k_d_model-256_n_layer-4_lr-8e-3": {"family": "caduceus"},
}

# remote code for paper models not in registry.yaml (others take registry.yaml's needs_remote_code)
PAPER_REMOTE_DEFAULT = {
    "BioFM-265M": True,
    "space": True,
    "gpt2_gene_multi_v2_ft": False,
    "gpt2_gene_v1": False,
    "genomics-fm": True,
    "deepgene": True,
    "gena-lm-bert-base": True,
}
#: the paper sheet's pretraining data (models.tsv `pretraining_data_unverified`) read into GENEB's domain
#: vocabulary, for all 40 models: the domain of a paper-only model, and the paper's side of the comparison with
#: registry.yaml (`reconcile` below). "unknown" = the sheet does not say (eccDNA names no organism).
PAPER_DOMAIN = {
    "METAGENE-1": "microbial",
    "evo-1-131k-base": "prokaryote",
    "GenomeOcean-4B": "microbial",
    "GENERator-eukaryote-3b-base": "eukaryote",
    "dna_gpt3b_m": "multispecies",
    "nucleotide-transformer-2.5b-multi-species": "multispecies",
    "LucaOne-default-step36M": "multispecies",
    "GENERator-eukaryote-1.2b-base": "eukaryote",
    "Omni-DNA-1B": "multispecies",
    "agro-nucleotide-transformer-1b": "plant",
    "space": "mammal",
    "eccdnamamba_weights": "unknown",
    "GenomeOcean-500M": "microbial",
    "gena-lm-bert-large-t2t": "human",
    "Omni-DNA-300M": "multispecies",
    "BioFM-265M": "human",
    "enformer-official-rough": "mammal",
    "nucleotide-transformer-v2-250m-multi-species": "multispecies",
    "PlantCaduceus_l32": "plant",
    "OmniNA-220m": "multispecies",
    "gpt2_gene_multi_v2_ft": "unknown",
    "gpt2_gene_v1": "unknown",
    "genomics-fm": "unknown",
    "DNABERT-S": "microbial",
    "dnabert2-no-flashattention": "multispecies",
    "gena-lm-bert-base-t2t-multi": "multispecies",
    "gena-lm-bert-base": "human",
    "dna_gpt0.1b_h": "human",
    "nucleotide-transformer-v2-100m-multi-species": "multispecies",
    "GROVER": "human",
    "MutBERT": "human",
    "deepgene": "human",
    "hyenadna-large-1m-seqlen-hf": "human",
    "nucleotide-transformer-v2-50m-3mer-multi-species": "multispecies",
    "nucleotide-transformer-v2-50m-multi-species": "multispecies",
    "hyenadna-medium-160k-seqlen-hf": "human",
    "caduceus-ps_seqlen-131k_d_model-256_n_layer-16": "human",
    "JanusDNA_72_w": "human",
    "JanusDNA_72_wo": "human",
    "caduceus-ph_seqlen-1k_d_model-256_n_layer-4_lr-8e-3": "human",
}
#: per-checkpoint facts where registry.yaml's record covers a whole family and is unverified (K), with the source
PAPER_CONTEXT = {
    "dna_gpt0.1b_h": (
        "4,096 tokens (~24.6 kb)",
        "DNAGPT's code (TencentAILabHealthcare/DNAGPT, dna_gpt/model/dna_gpt.py, "
        "DNAGPT.from_name) builds dna_gpt0.1b_h with max_len 4096 learned positions (non-overlapping 6-mers) "
        "and dna_gpt3b_m with 512; registry.yaml's family-wide '~512 tokens' (unverified) is the 3B model's",
    ),
}
#: why an entry's extraction.max_tokens may exceed its context_tokens (geneb.models.registry.check_registry
#: refuses the overrun otherwise); the two numbers are in the same unit, tokens, in every case listed
BEYOND_TRAINED_CONTEXT = {
    "LucaOne-default-step36M": (
        "the paper's reference cap, 4,096 tokens, is kept as the paper default: both numbers are tokens of LucaOne's "
        "single-nucleotide tokenizer (one token per nucleotide plus 2 special tokens, so ~4,094 nt against the "
        "1,280-token maximum length registry.yaml gives, verified); 4,096 is the checkpoint's "
        "max_position_embeddings (rotary, LucaOne/LucaOne config/lucaone_gplm.json), so the model runs but reads "
        "3.2x beyond that length. Set extraction.max_tokens: 1280 (long_policy chunk_mean) to stay within it"
    ),
}
SUPERVISED = {"enformer-official-rough", "space", "Enformer", "borzoi-replicate-0", "alphagenome"}

# ---- matched pairs: two models that differ in one factor (differs_in), the rest held equal ----------------------

PAIRS: list[dict[str, Any]] = [
    {
        "id": "nt-v2-50m-6mer-vs-3mer",
        "models": ["nucleotide-transformer-v2-50m-multi-species", "nucleotide-transformer-v2-50m-3mer-multi-species"],
        "differs_in": "tokenizer",
        "held_equal": ["architecture", "pretraining_data", "size"],
        "note": "NT-v2 50M on the 850-genome multi-species data: non-overlapping 6-mers vs 3-mers",
    },
    {
        "id": "caduceus-1k-ph-vs-ps",
        "models": [
            "caduceus-ph_seqlen-1k_d_model-256_n_layer-4_lr-8e-3",
            "caduceus-ps_seqlen-1k_d_model-256_n_layer-4_lr-8e-3",
        ],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size", "context"],
        "note": "Caduceus d256 4 layers on hg38: RC augmentation (ph) vs RC-equivariant parameter sharing (ps)",
    },
    {
        "id": "caduceus-131k-ph-vs-ps",
        "models": ["caduceus-ph_seqlen-131k_d_model-256_n_layer-16", "caduceus-ps_seqlen-131k_d_model-256_n_layer-16"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size", "context"],
        "note": "Caduceus d256 16 layers on hg38: RC augmentation (ph) vs RC-equivariant parameter sharing (ps)",
    },
    {
        "id": "hyena-vs-caduceus-1k-tiny",
        "models": ["hyenadna-tiny-1k-seqlen-hf", "caduceus-ph_seqlen-1k_d_model-118_n_layer-4_lr-8e-3"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "context"],
        "note": "hg38, single-nucleotide tokens, 1 kb context, ~0.44M vs ~0.47M parameters: causal Hyena vs bidirectional Mamba",
    },
    {
        "id": "gena-bert-vs-bigbird-t2t",
        "models": ["gena-lm-bert-base-t2t", "gena-lm-bigbird-base-t2t"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size"],
        "note": "GENA-LM base on T2T + 1000G SNPs with the 32k BPE: dense BERT (512 tokens) vs BigBird sparse attention (4096 tokens)",
    },
    {
        "id": "gena-t2t-vs-t2t-multi",
        "models": ["gena-lm-bert-base-t2t", "gena-lm-bert-base-t2t-multi"],
        "differs_in": "pretraining_data",
        "held_equal": ["architecture", "tokenizer", "size"],
        "note": "GENA-LM BERT base: human T2T vs human T2T + multispecies genomes",
    },
    {
        "id": "nt-500m-ref-vs-1000g",
        "models": ["nucleotide-transformer-500m-human-ref", "nucleotide-transformer-500m-1000g"],
        "differs_in": "pretraining_data",
        "held_equal": ["architecture", "tokenizer", "size"],
        "note": "NT v1 500M: human reference genome vs 3,202 genomes of 1000 Genomes",
    },
    {
        "id": "nt-2.5b-1000g-vs-multispecies",
        "models": ["nucleotide-transformer-2.5b-1000g", "nucleotide-transformer-2.5b-multi-species"],
        "differs_in": "pretraining_data",
        "held_equal": ["architecture", "tokenizer", "size"],
        "note": "NT v1 2.5B: 1000 Genomes human genomes vs 850 species",
    },
    {
        "id": "mutbert-variants-vs-ref",
        "models": ["MutBERT", "MutBERT-Human-Ref"],
        "differs_in": "pretraining_data",
        "held_equal": ["architecture", "tokenizer", "size"],
        "note": "MutBERT 86M: human reference with population variant frequencies vs the reference alone",
    },
    {
        "id": "dnabert2-vs-dnabert-s",
        "models": ["dnabert2-no-flashattention", "DNABERT-S"],
        "differs_in": "pretraining_data",
        "held_equal": ["architecture", "tokenizer", "size"],
        "note": "DNABERT-2 117M vs the same backbone after contrastive training on microbial genome pairs",
    },
    {
        "id": "plant-bpe-bert-vs-gpt",
        "models": ["plant-dnabert-BPE", "plant-dnagpt-BPE"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size"],
        "note": "zhangtaolab plant reference genomes, same BPE, ~100M: BERT encoder vs GPT-2 decoder (sizes from a secondary source)",
    },
    {
        "id": "plant-bpe-bert-vs-mamba",
        "models": ["plant-dnabert-BPE", "plant-dnamamba-BPE"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size"],
        "note": "zhangtaolab plant reference genomes, same BPE, ~100M: BERT encoder vs Mamba",
    },
    {
        "id": "plant-bpe-bert-vs-nt",
        "models": ["plant-dnabert-BPE", "plant-nucleotide-transformer-BPE"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer", "size"],
        "note": "zhangtaolab plant reference genomes, same BPE, ~100M: BERT vs ESM-style (NT) encoder",
    },
    {
        "id": "mistral-vs-jamba-dna-hg38",
        "models": ["Mistral-DNA-v1-138M-hg38", "Jamba-DNA-v1-114M-hg38"],
        "differs_in": "architecture",
        "held_equal": ["pretraining_data", "tokenizer"],
        "note": "hg38 with the DNABERT-2 BPE tokenizer: Mixtral MoE decoder (138M) vs Jamba Mamba-attention hybrid (114M); sizes differ by 17%",
    },
]


# ---- builtins and local checkpoints (hand-written) ---------------------------------------------------------------


def builtin_entries() -> dict[str, dict[str, Any]]:
    """The k-mer baselines, the random-init floor and the three local Mistral-DNA checkpoints."""
    out: dict[str, dict[str, Any]] = {}
    for k in (3, 4, 5, 6):
        out[f"kmer-{k}"] = {
            "display": f"{k}-mer frequencies",
            "family": "kmer",
            "source": {"kind": "builtin"},
            "builtin": {"k": k},
            "architecture": "kmer-frequency",
            "architecture_family": "kmer",
            "tokenizer_type": "k-mer",
            "params": 0,
            "pretraining_data": "none (no training)",
            "pretraining_domain": "none",
            "license": "Apache-2.0",
            "notes": "Overlapping k-mer frequency vector (4^k, frequencies sum to 1 over k-mers of ACGT only); a no-training baseline.",
        }
    out["kmer-3to6"] = {
        "display": "3- to 6-mer spectrum",
        "family": "kmer",
        "source": {"kind": "builtin"},
        "builtin": {"k": [3, 4, 5, 6]},
        "architecture": "kmer-frequency",
        "architecture_family": "kmer",
        "tokenizer_type": "k-mer",
        "params": 0,
        "pretraining_data": "none (no training)",
        "pretraining_domain": "none",
        "license": "Apache-2.0",
        "notes": "The 3-, 4-, 5- and 6-mer frequency vectors concatenated (64+256+1024+4096 = 5440 features, each block sums to 1); one no-training baseline covering k = 3..6.",
    }
    out["random-esm-tiny"] = {
        "display": "Random-init NT-style (tiny)",
        "family": "random-init",
        "source": {"kind": "builtin"},
        "builtin": {
            "architecture": "esm",
            "tokenizer": "nt-6mer",
            "init_seed": 0,
            "config": {
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "max_position_embeddings": 1002,
            },
        },
        "architecture": "esm-masked-lm",
        "architecture_family": "transformer-encoder",
        "tokenizer_type": "k-mer",
        "params": 0,
        "params_note": "random weights: nothing was trained",
        "pretraining_data": "none (random initialisation)",
        "pretraining_domain": "none",
        "license": "Apache-2.0",
        "extraction": {
            "pooling": "mean",
            "layer": -1,
            "exclude_special_tokens": True,
            "max_tokens": 1000,
            "long_policy": "chunk_mean",
            "rc": "none",
        },
        "notes": "Seeded random initialisation of an NT-style encoder (6-mer tokens, CLS prefix); the floor a pretrained model must beat.",
    }
    for short, task, desc in (
        ("prom", "prom_core_all", "prom_core_all"),
        ("tf0", "human_tf_0", "human tf_0"),
        ("tf1", "human_tf_1", "human tf_1"),
    ):
        out[f"mistral-dna-1m-ft-{short}"] = {
            "display": f"Mistral-DNA 1M ft-{short}",
            "family": "hf-decoder",
            "source": {
                "kind": "local",
                "path": f"../shared/models/mistral-dna-v1-1m-hg38-finetuned-{short}",
                "origin": "github.com/raphaelmourad/LLM-for-genomics-training@92a45fe",
                "base_hub_id": "RaphaelMourad/Mistral-DNA-v1-1M-hg38",
            },
            "architecture": "mixtral-causal-lm",
            "architecture_family": "transformer-decoder",
            "tokenizer_type": "bpe",
            "tokenizer": "DNABERT-2 BPE (vocab 4096); adds [CLS] ... [SEP]",
            "params": 720000,
            "context_tokens": 256,
            "pretraining_data": f"human reference genome hg38, then fine-tuned on GUE {desc}",
            "pretraining_domain": "human",
            "license": "Apache-2.0",
            "trust_remote_code": False,
            "extraction": {
                "pooling": "mean",
                "layer": -1,
                "exclude_special_tokens": False,
                "max_tokens": 256,
                "long_policy": "chunk_mean",
                "rc": "none",
                "embedding_dim": 64,
            },
            "trained_on_tasks": [f"gue_{task}", f"leannmlindsey_GUE_{task}"],
            "registry_name": "Mistral-DNA-v1-1M-hg38",
            "verified": "V",
            "notes": "Real checkpoint (Mixtral sparse MoE, hidden 64, 4 layers, 8 experts, 1 per token); its sequence-"
            "classification head (score.weight) is unused. Fine-tuned on a GUE task: flagged as contaminated "
            "for that task. Special tokens are pooled (exclude_special_tokens: false), like the paper's reference.",
        }
    return out


#: further hand-written entries (a model in neither shared source, e.g. a new checkpoint of a known family),
#: written out as they stand after the generated ones; docs/adding-a-model.md shows the fields
EXTRA_MODELS: dict[str, dict[str, Any]] = {}


# ---- parsing -----------------------------------------------------------------------------------------------------

_UNIT = {"K": 1e3, "M": 1e6, "B": 1e9}


def parse_params(text: Any) -> int | None:
    """'~86M' -> 86000000; '1.2B (0.33B active)' -> 1200000000; 'unverified', '25M / 250M' -> None."""
    s = str(text).strip()
    if "/" in s.split("(")[0]:
        return None
    m = re.match(r"^~?\s*([0-9]+(?:\.[0-9]+)?)\s*([KMB])\b", s)
    return int(round(float(m.group(1)) * _UNIT[m.group(2)])) if m else None


def parse_tokens(text: Any) -> int | None:
    """'512 tokens (~512 bp)' -> 512; '16,384 tokens' -> 16384; anything not stated in tokens -> None."""
    m = re.match(r"^\s*([0-9][0-9,]*)\s+tokens\b", str(text))
    return int(m.group(1).replace(",", "")) if m else None


def arch_family_of(architecture: str) -> str:
    a = architecture.lower()
    if "stripedhyena" in a.replace(" ", ""):
        return "striped-hyena"
    if a.startswith("hyena"):
        return "hyena"
    if "hybrid" in a:
        return "hybrid"
    if "mamba" in a:
        return "ssm"
    if a.startswith("cnn"):
        return "cnn"
    if "decoder" in a:
        return "transformer-decoder"
    if "encoder" in a or "transformer" in a:
        return "transformer-encoder"
    return "unknown"


def tokenizer_type_of(tokenizer: str) -> str:
    t = tokenizer.lower()
    for key, value in (
        ("mixed", "mixed"),
        ("one-hot", "one-hot"),
        ("codon", "codon"),
        ("bpe", "bpe"),
        ("sentencepiece", "bpe"),
        ("mer", "k-mer"),
        ("single nucleotide", "single-nucleotide"),
        ("char", "single-nucleotide"),
        ("byte", "single-nucleotide"),
    ):
        if key in t:
            return value
    return "unknown"


def clean_hub_id(hf_id: Any) -> tuple[str | None, bool]:
    """(hub id, verified?) from registry.yaml's hf_id ('x/y (unverified)' -> ('x/y', False))."""
    if not hf_id:
        return None, False
    s = str(hf_id)
    return s.split(" (")[0].strip(), "unverified" not in s


def remote_load(spec_name: str, key: str, needs_remote: bool) -> dict[str, Any]:
    """The load section for a remote-code model: its transformers range and the range's source."""
    if not needs_remote:
        return {}
    rng = RANGE_DEFAULT
    if spec_name in ("DNABERT-2", "DNABERT-2-117M", "DNABERT-S"):
        rng = RANGE_DNABERT2
    elif spec_name.startswith("hyenadna") or key.startswith("hyenadna"):
        rng = RANGE_HYENA
    elif spec_name == "LucaOne":
        rng = RANGE_LUCAONE
    return {"transformers": rng[0], "transformers_note": rng[1]}


# ---- assembly ----------------------------------------------------------------------------------------------------


def registry_entry(e: dict[str, Any], key: str) -> dict[str, Any]:
    """A GENEB entry for one registry.yaml record (not a paper model)."""
    fam, ext_extra, load_extra, note = REGISTRY_FAMILY[e["family"]]
    fam = PLANT_FAMILY.get(key, fam)
    hub, hub_ok = clean_hub_id(e.get("hf_id"))
    remote = bool(e["needs_remote_code"])
    extraction: dict[str, Any] = {
        "pooling": "mean",
        "layer": -1,
        "exclude_special_tokens": True,
        "max_tokens": parse_tokens(e["max_length"]),
        "long_policy": "chunk_mean",
        "rc": "none",
    }
    extraction.update(ext_extra)
    if e["family"] == "DNABERT":
        extraction["input_transform"] = {"kind": "overlapping-kmers", "k": int(e["name"].split("-")[1])}
    if fam == "evo2":
        if key in EVO2_LAYER:
            extraction["layer"] = EVO2_LAYER[key]
        else:
            fam, note = (
                "unsupported",
                "which Evo 2 block gives the best embeddings is not established for this size (evo2 #124); set family evo2 and a module name as layer to run it",
            )
    if fam == "enformer":
        extraction.pop("max_tokens")
    load = {**load_extra, **remote_load(e["name"], key, remote)}
    if fam in ("evo", "evo2"):
        load["package_model_name"] = key
    if e["family"] == "Caduceus" and "-ps_" in key:
        note = (
            note + "; " if note else ""
        ) + "RC-equivariant: the hidden size is 2 x d_model (forward and RC channels)"
    entry: dict[str, Any] = {
        "display": e["name"],
        "family": fam,
        "source": (
            {"kind": "hub-unpinned", "hub_id": hub}
            if hub and hub_ok
            else {
                "kind": "external",
                "where": f"hub id unverified: {e.get('hf_id')}" if hub else "not on the hub (see notes)",
            }
        ),
        "architecture": e["architecture"],
        "architecture_family": arch_family_of(e["architecture"]),
        "tokenizer_type": tokenizer_type_of(e["tokenizer"]),
        "tokenizer": e["tokenizer"],
        "params": parse_params(e["params"]),
        "params_note": str(e["params"]),
        "context_tokens": parse_tokens(e["max_length"]),
        "context": str(e["max_length"]),
        "pretraining_data": e["pretraining_data"],
        "pretraining_domain": e["domain"],
        "license": e["license"],
        "trust_remote_code": remote,
        "load": load,
        "extraction": extraction,
        "trained_on_tasks": [],
        "registry_name": e["name"],
        "verified": str(e["verified"]).split(" ")[0],
        "loading_notes": " ".join(str(e["loader_notes"]).split()),
    }
    if key in SUPERVISED or e["name"] in SUPERVISED:
        entry["supervised"] = True
    if note:
        entry["notes"] = note
    return _tidy(entry)


def reg_verified(reg: dict[str, Any] | None) -> bool:
    """registry.yaml's `verified: V ...` (checked against the model card or repo files); K is not."""
    return bool(reg) and str(reg.get("verified", "")).strip().upper().startswith("V")


#: the factors matched-pair derivation compares (geneb.analysis.pairs.FACTORS), as named in the notes
FACT_LABEL = {
    "architecture_family": "architecture family",
    "tokenizer_type": "tokenizer type",
    "pretraining_domain": "pretraining domain",
}


def reconcile(
    field: str, paper_value: str, paper_text: str, reg: dict[str, Any] | None, reg_value: str, reg_text: str
) -> tuple[str, str | None]:
    """One pair-derivation factor of a paper model: (value, note on a disagreement or None).

    The paper's sheet (models.tsv) and registry.yaml are compared as GENEB classifies them. Agreement,
    or "unknown" on one side (that source does not say), takes the known value. On a disagreement a verified (V)
    registry record wins: it was checked against the model card or the repository's files, while the paper's
    sheet was filled in by hand (PlantCaduceus_l32's tokenizer was copied as bpe there). An unverified (K) record
    loses to the sheet, which names the exact checkpoint the paper ran (registry.yaml's DNAGPT record covers the
    0.1B human and the 3B multi-species models at once). Either way the note names both sources.
    """
    if reg is None or reg_value in ("unknown", "", None) or reg_value == paper_value:
        return paper_value, None
    if paper_value in ("unknown", "", None):
        return reg_value, None
    label = FACT_LABEL[field]
    paper_says = paper_value if paper_text in ("", paper_value) else f"{paper_value} ({paper_text})"
    both = (
        f"{label}: models.tsv says {paper_says}, registry.yaml says {reg_value} ({reg_text}, "
        f"verified {str(reg.get('verified', '?')).split(' ')[0]})"
    )
    if reg_verified(reg):
        return reg_value, both + "; the verified registry.yaml value is used"
    return paper_value, both + "; registry.yaml is unverified there, so the paper's record of this checkpoint is used"


def resolve_hub_id(
    paper_hub: str, reg: dict[str, Any] | None, verified_orgs: dict[str, set[str]]
) -> tuple[str, str | None]:
    """The hub id of a paper model whose models.tsv source is a hub id: (hub id, note or None).

    registry.yaml's hub id wins when it differs and is verified, either on its own record (V) or because every
    verified record of its family lives under the same organisation (GenomeOcean-500M is K, but the verified
    GenomeOcean-100M and -4B are under pGenomeOcean/); that id is what `geneb pin-revisions` asks the hub for.
    """
    hub, hub_ok = clean_hub_id(reg.get("hf_id")) if reg else (None, False)
    if not hub or not hub_ok or hub == paper_hub:
        return paper_hub, None
    org = hub.split("/")[0]
    if reg_verified(reg):
        why = f"registry.yaml's record is verified ({reg['verified']})"
    elif org in verified_orgs.get(reg["family"], set()):
        why = (
            f"registry.yaml's record is unverified ({reg['verified']}), but every verified {reg['family']} record "
            f"is under {org}/, so the family is kept under one organisation"
        )
    else:
        return (
            paper_hub,
            f"registry.yaml lists the hub id as {hub} (unverified there); models.tsv's {paper_hub} is used",
        )
    note = f"hub id {hub} from registry.yaml, not models.tsv's {paper_hub}: {why}"
    if reg["family"] == "GenomeOcean":
        note += (
            "; the GenomeOcean README lists the checkpoints as pGenomeOcean/... but links them to "
            "huggingface.co/DOEJGI/..., so DOEJGI looks like the organisation's later name, which the hub "
            "redirects to; check that the pinned commit is the same under both names"
        )
    return hub, note


def paper_entry(
    row: pd.Series,
    reg: dict[str, Any] | None,
    verified_orgs: dict[str, set[str]] | None = None,
    log: list[str] | None = None,
) -> dict[str, Any]:
    """A GENEB entry for one of the paper's models, with the paper's reference extraction as default."""
    mid = row["geneb_model_id"]
    cur = PAPER[mid]
    fam = cur["family"]
    src_text = str(row["hub_id_or_source"])
    remote = bool(reg["needs_remote_code"]) if reg else PAPER_REMOTE_DEFAULT.get(mid, cur.get("remote", False))
    if cur.get("remote") is not None:
        remote = bool(cur["remote"])
    cap = str(row["extractor_max_input"])
    pooling_ref = str(row["pooling_reference"])
    pooling = {"cls-token": "cls", "penultimate-valid-token": "last"}.get(pooling_ref, "mean")
    extraction: dict[str, Any] = {
        "pooling": pooling,
        "layer": -1,
        "exclude_special_tokens": pooling_ref == "penultimate-valid-token",
        "max_tokens": parse_tokens(cap),
        "long_policy": "truncate",
        "rc": "none",
        "embedding_dim": int(row["emb_dim"]) if str(row["emb_dim"]).isdigit() else None,
    }
    if mid == "PlantCaduceus_l32":
        extraction["max_tokens"] = 512
    load: dict[str, Any] = {}
    if reg:
        load.update(REGISTRY_FAMILY[reg["family"]][2])
    load.update(remote_load(reg["name"] if reg else mid, mid, remote))
    if cur.get("package_model_name"):
        load["package_model_name"] = cur["package_model_name"]
    if fam == "enformer":
        extraction.pop("max_tokens")
        load["window_bp"] = 196608
    notes = [n for n in (cur.get("note"), REGISTRY_FAMILY[reg["family"]][3] if reg else None) if n]
    fact_notes: list[str] = []
    if "/" in src_text and " " not in src_text:
        hub_id, hub_note = resolve_hub_id(src_text, reg, verified_orgs or {})
        source: dict[str, Any] = {"kind": "hub-unpinned", "hub_id": hub_id}
        fact_notes += [hub_note] if hub_note else []
    else:
        source = {"kind": "external", "where": cur.get("where", src_text)}
    # the three factors of matched-pair derivation: the paper's sheet against registry.yaml (reconcile)
    arch_family, n1 = reconcile(
        "architecture_family",
        PAPER_ARCH_FAMILY[row["family"]],
        f"{row['family']}",
        reg,
        arch_family_of(reg["architecture"]) if reg else "",
        reg["architecture"] if reg else "",
    )
    tokenizer_type, n2 = reconcile(
        "tokenizer_type",
        PAPER_TOKENIZER.get(row["tokenizer"], row["tokenizer"]),
        row["tokenizer"],
        reg,
        tokenizer_type_of(reg["tokenizer"]) if reg else "",
        reg["tokenizer"] if reg else "",
    )
    domain, n3 = reconcile(
        "pretraining_domain",
        PAPER_DOMAIN[mid],
        row["pretraining_data_unverified"],
        reg,
        reg["domain"] if reg else "",
        reg["pretraining_data"] if reg else "",
    )
    fact_notes += [n for n in (n1, n2, n3) if n]
    data_from_paper = reg is None or (domain != reg["domain"] and domain == PAPER_DOMAIN[mid])
    context_text = str(reg["max_length"]) if reg else cap
    if mid in PAPER_CONTEXT:
        context_text, why = PAPER_CONTEXT[mid]
        fact_notes.append(f"context {context_text}: {why}")
    if mid in BEYOND_TRAINED_CONTEXT:
        fact_notes.append("extraction.max_tokens exceeds context_tokens on purpose (beyond_trained_context)")
    notes += fact_notes
    if log is not None:
        log += [f"{mid}: {n}" for n in fact_notes]
    notes.append(
        "default extraction = the paper's reference (last hidden state, its pooling with special tokens "
        "included, its input cap, truncation beyond it, no RC)"
    )
    paper = {
        "model_id": mid,
        "display": row["leaderboard_display"],
        "name": row["model_paper_name_v4"],
        "source": src_text,
        "params": int(row["params_current"]),
        "reference_extraction": {
            "max_input": cap,
            "hidden_tap": row["hidden_tap_reference"],
            "pooling": pooling_ref,
            "embedding_dim": extraction["embedding_dim"],
        },
    }
    if isinstance(row["reference_extractor_notes"], str) and row["reference_extractor_notes"].strip():
        paper["reference_defects"] = row["reference_extractor_notes"].strip()
    if cur.get("geneb_changes"):
        paper["geneb_changes"] = cur["geneb_changes"]
    entry: dict[str, Any] = {
        "display": row["leaderboard_display"],
        "family": fam,
        "source": source,
        "architecture": row["architecture"],
        "architecture_family": arch_family,
        "tokenizer_type": tokenizer_type,
        "tokenizer": reg["tokenizer"] if reg else row["tokenizer"],
        "params": int(row["params_current"]),
        "params_paper": int(row["params_early_meta"])
        if str(row["params_early_meta"]).strip() not in ("", "nan")
        else None,
        "context_tokens": parse_tokens(context_text),
        "context": context_text,
        "beyond_trained_context": BEYOND_TRAINED_CONTEXT.get(mid),
        "pretraining_data": row["pretraining_data_unverified"] if data_from_paper else reg["pretraining_data"],
        "pretraining_domain": domain,
        "license": reg["license"] if reg else "unknown (not in the shared registry)",
        "trust_remote_code": remote,
        "load": load,
        "extraction": extraction,
        "trained_on_tasks": [],
        "paper": paper,
        "registry_name": reg["name"] if reg else None,
        "verified": str(reg["verified"]).split(" ")[0] if reg else None,
        "loading_notes": " ".join(str(reg["loader_notes"]).split()) if reg else None,
        "notes": "; ".join(notes),
    }
    if mid in SUPERVISED:
        entry["supervised"] = True
    return _tidy(entry)


def _tidy(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop empty optional fields (None, {}) so the YAML stays readable; required fields stay."""
    keep = {
        "params",
        "display",
        "family",
        "source",
        "architecture_family",
        "tokenizer_type",
        "pretraining_domain",
        "license",
    }
    out = {k: v for k, v in entry.items() if k in keep or v not in (None, {}, "")}
    if "extraction" in out:
        out["extraction"] = {k: v for k, v in out["extraction"].items() if v is not None or k == "max_tokens"}
    return out


def build(shared: Path, log: list[str] | None = None, existing: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole registry document; `log` collects each place where the paper's sheet and registry.yaml
    disagree and which value was taken (the same text as the entry's notes). existing: the current
    config/models.yaml document; its entries the tool does not generate (models users added by hand, one YAML
    entry each: docs/adding-a-model.md) are kept, after the generated ones, in their order."""
    reg = yaml.safe_load((shared / "reference" / "registry.yaml").read_text())
    by_hub = {clean_hub_id(e["hf_id"])[0].lower(): e for e in reg if e.get("hf_id")}
    by_name = {e["name"]: e for e in reg}
    verified_orgs: dict[str, set[str]] = {}  # registry family -> hub organisations of its verified records
    for e in reg:
        hub, hub_ok = clean_hub_id(e.get("hf_id"))
        if hub and hub_ok and reg_verified(e):
            verified_orgs.setdefault(e["family"], set()).add(hub.split("/")[0])
    paper = pd.read_csv(shared / "reference" / "geneb_paper" / "models.tsv", sep="\t", dtype=str, keep_default_na=False)
    models = builtin_entries()
    used: set[str] = set()
    for _, row in paper.iterrows():
        mid = row["geneb_model_id"]
        cur = PAPER[mid]
        match = (
            by_name.get(cur["registry_name"])
            if cur.get("registry_name")
            else by_hub.get(str(row["hub_id_or_source"]).lower())
        )
        if match is not None:
            used.add(match["name"])
        models[mid] = paper_entry(row, match, verified_orgs, log)
    for e in reg:
        if e["name"] in used:
            continue
        hub, _ = clean_hub_id(e.get("hf_id"))
        key = hub.split("/")[-1] if hub else e["name"]
        if key in models:
            raise SystemExit(f"registry key collision: {key}")
        models[key] = registry_entry(e, key)
    for key, entry in EXTRA_MODELS.items():
        if key in models:
            raise SystemExit(f"EXTRA_MODELS key collision: {key}")
        models[key] = entry
    generated = set(models)
    for key, entry in ((existing or {}).get("models") or {}).items():
        if key not in generated:
            models[key] = entry
    pairs = list(PAIRS) + [p for p in (existing or {}).get("matched_pairs") or [] if p not in PAIRS]
    return {"schema_version": 1, "matched_pairs": pairs, "models": models}


HEADER = """\
# GENEB model registry. Validated against workflow/schemas/models.schema.yaml plus the cross-field checks of
# geneb.models.registry.check_registry; field meanings in docs/data-dictionary.md ("Inputs: the model registry");
# adding a model: docs/adding-a-model.md.
#
# Built by tools/build_model_registry.py from ../shared/reference (the paper's models.tsv and registry.yaml) and
# GENEB's curation tables in that script: change those entries in the script and rerun it (a test checks they are
# its output). To ADD a model, append one entry at the end of `models:` (and, optionally, a matched pair): the
# tool keeps entries and pairs it does not generate when it reruns. Hub commits are pinned separately, in
# config/model_revisions.yaml (`geneb pin-revisions`).
#
# Runnable entries: the builtins, local folders that exist, and hub ids pinned to a 40-hex commit
# (source.kind: hub). No commit is known for any hub model in the shared sources, so those are
# `hub-unpinned` and refused until someone pins them (case B24). Paper models (with a `paper:` section)
# default to the paper's reference extraction; `paper.geneb_changes` says where GENEB fixes a known defect.
"""


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # shared lists are written out, not as &id001 anchors
        return True


def render(doc: dict[str, Any]) -> str:
    """The text of config/models.yaml for `doc` (header included)."""
    return HEADER + yaml.dump(
        doc, Dumper=_NoAliases, sort_keys=False, width=120, allow_unicode=True, default_flow_style=None
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default="../shared", type=Path)
    ap.add_argument("--out", default="config/models.yaml", type=Path)
    args = ap.parse_args()
    log: list[str] = []
    existing = yaml.safe_load(args.out.read_text()) if args.out.exists() else None
    doc = build(args.shared, log, existing)
    args.out.write_text(render(doc))
    print(f"wrote {args.out}: {len(doc['models'])} models, {len(doc['matched_pairs'])} matched pairs")
    print(f"models.tsv vs registry.yaml: {len(log)} resolved disagreement(s)")
    for line in log:
        print(f"  {line}")


if __name__ == "__main__":
    main()
