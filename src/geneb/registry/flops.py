"""Analytic cost of a registered model: parameters, forward FLOPs per 1 kb of input, embedding width.

FLOPs count a multiply-add as 2 (the convention of the sources below and of `torch.utils.flop_counter`), for one
forward pass over one sequence (batch 1), no LM head (GENEB reads hidden states). A sequence longer than the model's
context is cut into windows of `context_tokens` (chunk_mean); each window pays its own attention term.

Per family (`Architecture.kind`), per token of a window of `n_ctx` tokens, summed over the `n_layer` layers:

* transformer (encoder or decoder, dense or mixture-of-experts): `2 N_active + 4 n_layer n_ctx d_attn`. The first
  term is Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", section 2.1, Table 1): a forward pass costs
  2 FLOPs per non-embedding parameter a token meets; with experts, N_active counts the router and the top-k experts
  only. The second is the attention's quadratic term counting both the logits (QK^T) and the weighted sum of the
  values, 2 + 2 per (layer, position pair, attention channel), as in Hoffmann et al. 2022 ("Training
  Compute-Optimal Large Language Models", Appendix F); Kaplan's Table 1 writes the logits' half, 2 n_layer n_ctx
  d_attn. A causal model is counted over the full n_ctx x n_ctx matrix, as dense kernels compute it.
* hyena (HyenaDNA; Poli et al. 2023, "Hyena Hierarchy", section 3): per layer and token `2 (order+1) d^2` (input
  projection) + `2 d^2` (output projection) + `2 k (order+1) d` (short depthwise filter, k taps) + `4 d d_inner`
  (MLP) + the implicit filter network, evaluated once per position per sequence (`2 (e f + n_inner f^2 + f d
  (order-1))`), + the FFT long convolution, `(order-1) d` channels of an FFT convolution of length 2 n_ctx: three
  real FFTs of `2.5 n log2 n` FLOPs each (half a complex Cooley-Tukey FFT's `5 n log2 n`). `torch.utils.flop_counter`
  counts no FFT, so `Flops.fft` is reported apart.
* mamba (Mamba-1 block; Gu & Dao 2023, "Mamba", section 3 and Figure 3): per layer and token, with d_inner = expand
  d, dt_rank = ceil(d / 16), `2 d 2 d_inner` (input projection) + `2 k d_inner` (causal conv, k = 4) + `2 d_inner
  (dt_rank + 2 d_state)` (x projection) + `2 dt_rank d_inner` (dt projection) + `9 d_inner d_state` (the selective
  scan: discretisation, state update and readout; the paper's O(B L D N)) + `2 d_inner d` (output projection);
  bidirectional models (Caduceus BiMamba) twice.
* params-only (architectures not modelled term by term: StripedHyena, CNN and U-Net hybrids, MoE hybrids without a
  config): `2 N` per token (Kaplan et al. 2020), N the registry's parameter count; the `formula` column says so.
* none (k-mer counts, shortcut features): 0 model FLOPs.

Where the layers and width come from (`Architecture.source`): a local checkpoint's config.json or a builtin's config
(exact); numbers in the registry's id or architecture text ("12L/768d", "hidden 1280", "d_model-256_n_layer-16",
"l24-d0768"); else the width is the registry's embedding width and the depth Kaplan's `N ~ 12 n_layer d^2` solved
for n_layer (section 2.1), named "estimated". Tokens per base from the tokenizer type (`tokens_per_base`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from geneb.registry.spec import ModelSpec

#: bases per BPE token where the model's own tokenizer is not at hand: measured with the real DNABERT-2 tokenizer
#: (4.5 and 5.0 bases per token) and GENA-LM's (5.4 and 6.0) on 500 training rows each of gue_prom_core_all and
#: gue_emp_h3__devtrain (../shared/models/tokenizers; `tokens_per_base`)
BPE_BASES_PER_TOKEN = 5.0
#: HyenaDNA's filter settings where no config is at hand (the released checkpoints' config.json: order 2,
#: filter_order 64, emb_dim 5, 2 inner MLPs, short filter 3, d_inner 4 d)
_HYENA_DEFAULTS = {"hyena_order": 2, "filter_order": 64, "emb_dim": 5, "num_inner_mlps": 2, "short_filter_order": 3}
#: HyenaDNA checkpoints (n_layer, d_model) from the released configs (Nguyen et al. 2023, Table A1)
_HYENA_SIZES = {
    "tiny-1k": (2, 128),
    "tiny-1k-seqlen-d256": (2, 256),
    "tiny-16k": (2, 128),
    "small-32k": (4, 256),
    "medium-160k": (8, 256),
    "medium-450k": (8, 256),
    "large-1m": (8, 256),
}
_GATED_TYPES = ("llama", "mistral", "mixtral", "qwen", "gemma", "olmo")
KINDS = ("transformer", "hyena", "mamba", "params-only", "none")


@dataclass(frozen=True)
class Architecture:
    """What the FLOP formulas need of one model (module docstring). Counts are None where unknown; `source` says
    where n_layer and d_model came from ("config.json", "builtin config", "registry text", "estimated: ...")."""

    model: str
    kind: str
    params: float | None
    n_layer: int | None
    d_model: int | None
    tokens_per_base: float
    context_tokens: int | None
    source: str
    d_ff: int | None = None
    d_kv: int | None = None
    gated: bool = False
    n_experts: int = 1
    experts_active: int = 1
    vocab: int | None = None
    bidirectional: bool = False
    hyena: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain mapping (hyena settings as a dict)."""
        out = asdict(self)
        out["hyena"] = dict(self.hyena)
        return out


@dataclass(frozen=True)
class Flops:
    """Forward FLOPs of one sequence: `dense` (weights x tokens), `attention` (the n_ctx^2 term), `filter` (Hyena's
    implicit filter network), `fft` (Hyena's FFT convolution, not counted by torch's flop counter), `scan` (Mamba's
    selective scan); `total` is their sum, `counted` the part `torch.utils.flop_counter` sees (total - fft - scan)."""

    dense: float = 0.0
    attention: float = 0.0
    filter: float = 0.0
    fft: float = 0.0
    scan: float = 0.0

    @property
    def total(self) -> float:
        return self.dense + self.attention + self.filter + self.fft + self.scan

    @property
    def counted(self) -> float:
        return self.dense + self.attention + self.filter


def tokens_per_base(tokenizer_type: str | None, tokenizer: str | None = None) -> float:
    """Model tokens per input base of a tokenizer (registry `tokenizer_type`, `tokenizer` text): 1 for single
    nucleotides, one-hot and overlapping k-mers; 1/k for non-overlapping k-mers (k read from the text, e.g.
    "6-mer non-overlapping"; 6 when absent, the Nucleotide Transformer's); 1/3 for codons; 1 / BPE_BASES_PER_TOKEN
    for BPE and other learned vocabularies. 0 for a model without tokens (none)."""
    kind = (tokenizer_type or "").lower()
    text = (tokenizer or "").lower()
    if kind in ("single-nucleotide", "one-hot", "char"):
        return 1.0
    if kind == "none":
        return 0.0
    if kind == "codon":
        return 1 / 3
    if kind == "k-mer":
        if "overlapping" in text and "non-overlapping" not in text:
            return 1.0
        found = re.search(r"(\d+)-mer", text)
        return 1 / int(found.group(1)) if found else 1 / 6
    return 1 / BPE_BASES_PER_TOKEN


def _registry_numbers(spec: ModelSpec) -> tuple[int | None, int | None]:
    """(n_layer, d_model) written in the model's id or architecture text, (None, None) where not."""
    text = f"{spec.id} {spec.architecture or ''} {spec.notes or ''}"
    layers = width = None
    for pattern, group in (
        (r"(\d+)L/(\d+)d", (1, 2)),
        (r"d_model-(\d+)_n_layer-(\d+)", (2, 1)),
        (r"-l(\d+)-d0*(\d+)", (1, 2)),
        (r"(\d+) layers, hidden (\d+)", (1, 2)),
    ):
        found = re.search(pattern, text)
        if found:
            return int(found.group(group[0])), int(found.group(group[1]))
    found = re.search(r"hidden (\d+)", text)
    if found:
        width = int(found.group(1))
    found = re.search(r"(\d+) layers", text)
    if found:
        layers = int(found.group(1))
    return layers, width


def _kind(spec: ModelSpec) -> str:
    fam = (spec.architecture_family or "").lower()
    if fam in ("kmer", "shortcut") or spec.family in ("kmer", "shortcut"):
        return "none"
    if fam.startswith("transformer"):
        return "transformer"
    if fam == "hyena":
        return "hyena"
    text = f"{spec.id} {spec.architecture or ''}".lower()
    if fam == "ssm" and ("mamba" in text or "caduceus" in text):
        return "mamba"
    return "params-only"


def _from_hf_config(spec: ModelSpec, cfg: dict[str, Any], source: str, kind: str) -> Architecture:
    """An Architecture from a Hugging Face config.json mapping (transformer or HyenaDNA keys)."""
    tpb = tokens_per_base(spec.tokenizer_type, spec.tokenizer)
    context = spec.context_tokens or cfg.get("max_position_embeddings") or cfg.get("max_seq_len")
    if cfg.get("model_type") == "hyenadna" or "d_inner" in cfg and "n_layer" in cfg:
        hyena = {k: int(cfg.get(k, v)) for k, v in _HYENA_DEFAULTS.items()}
        return Architecture(
            spec.id, "hyena", spec.params, int(cfg["n_layer"]), int(cfg["d_model"]), tpb,
            int(cfg.get("max_seq_len") or context or 0) or None, source, d_ff=int(cfg["d_inner"]),
            vocab=int(cfg.get("vocab_size", 0)) or None, hyena=tuple(sorted(hyena.items())),
        )  # fmt: skip
    d = int(cfg["hidden_size"])
    heads = int(cfg.get("num_attention_heads", 1))
    head_dim = int(cfg.get("head_dim") or d // heads)
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    model_type = str(cfg.get("model_type", ""))
    gated = model_type.startswith(_GATED_TYPES) or "glu" in str(cfg.get("hidden_act", "")).lower()
    return Architecture(
        spec.id, kind, spec.params, int(cfg["num_hidden_layers"]), d, tpb, int(context) if context else None, source,
        d_ff=int(cfg.get("intermediate_size") or 4 * d), d_kv=kv_heads * head_dim, gated=gated,
        n_experts=int(cfg.get("num_local_experts") or 1), experts_active=int(cfg.get("num_experts_per_tok") or 1),
        vocab=int(cfg.get("vocab_size", 0)) or None,
    )  # fmt: skip


def local_config(spec: ModelSpec) -> tuple[dict[str, Any] | None, str]:
    """(config mapping, its source) of a model whose architecture is at hand: a local folder's config.json (the
    first found under it), or a builtin's `config` (random-init twins); (None, "") otherwise."""
    if spec.source.kind == "local" and spec.source.path:
        found = sorted(Path(spec.source.path).rglob("config.json"))
        if found:
            return json.loads(found[0].read_text(encoding="utf-8")), "config.json"
    if spec.builtin and isinstance(spec.builtin.get("config"), dict):
        return dict(spec.builtin["config"]), "builtin config"
    return None, ""


def architecture(spec: ModelSpec) -> Architecture:
    """The model's Architecture (module docstring: config first, then the registry's text, then an estimate)."""
    kind = _kind(spec)
    tpb = tokens_per_base(spec.tokenizer_type, spec.tokenizer)
    if kind == "none":
        return Architecture(spec.id, kind, 0, None, None, tpb, None, "no neural network")
    cfg, source = local_config(spec)
    if cfg is not None and kind in ("transformer", "hyena"):
        return _from_hf_config(spec, cfg, source, kind)
    layers, width = _registry_numbers(spec)
    source = "registry text"
    if kind == "hyena" and (layers is None or width is None):
        size = next((v for k, v in sorted(_HYENA_SIZES.items(), key=lambda kv: -len(kv[0])) if k in spec.id), None)
        if size is not None:
            layers, width, source = size[0], size[1], "HyenaDNA released configs (Nguyen et al. 2023)"
    emb = (spec.extraction or {}).get("embedding_dim")
    width = width or (int(emb) if emb else None)
    params = float(spec.params) if spec.params else None
    if kind in ("transformer", "mamba") and layers is None and width and params:
        per_layer = 12 * width**2 if kind == "transformer" else 6 * width**2  # Mamba-1 block, expand 2: ~6 d^2
        layers = max(1, round(params / per_layer))
        source = f"estimated: width from the registry, n_layer from N ~ {per_layer // width**2} n_layer d^2"
    hyena = tuple(sorted(_HYENA_DEFAULTS.items())) if kind == "hyena" else ()
    text = f"{spec.id} {spec.architecture or ''}".lower()
    bidirectional = kind == "mamba" and ("caduceus" in text or "bidirectional" in text)
    context = spec.context_tokens
    if kind != "params-only" and (layers is None or width is None):
        kind, source = "params-only", "layers or width unknown"
    return Architecture(
        spec.id, kind, params, layers, width, tpb, context, source, d_ff=4 * width if width else None,
        bidirectional=bidirectional, hyena=hyena,
    )  # fmt: skip


def _transformer_dense(a: Architecture) -> float:
    """Non-embedding parameters a token meets (N_active): attention projections, the top-k experts' FFN, router."""
    assert a.n_layer is not None and a.d_model is not None
    d, d_kv = a.d_model, a.d_kv or a.d_model
    attn = d * (d + 2 * d_kv) + d * d
    ffn = a.experts_active * (3 if a.gated else 2) * d * (a.d_ff or 4 * d)
    router = d * a.n_experts if a.n_experts > 1 else 0
    return float(a.n_layer * (attn + ffn + router))


def _window_flops(a: Architecture, n: int) -> Flops:
    """Forward FLOPs of one window of n tokens (module docstring)."""
    if a.kind == "none" or n <= 0:
        return Flops()
    if a.kind == "params-only":
        return Flops(dense=2.0 * (a.params or 0.0) * n)
    assert a.n_layer is not None and a.d_model is not None
    L, d = a.n_layer, a.d_model
    if a.kind == "transformer":
        if a.params and a.d_kv is None and a.n_experts == 1 and a.source.startswith("estimated"):
            dense = 2.0 * a.params * n  # estimated depth: Kaplan's 2N on the registry's count
        else:
            dense = 2.0 * _transformer_dense(a) * n
        return Flops(dense=dense, attention=4.0 * L * n * n * d)
    if a.kind == "hyena":
        h = dict(a.hyena)
        order, f, e, inner, k = (h[x] for x in ("hyena_order", "filter_order", "emb_dim", "num_inner_mlps",
                                                "short_filter_order"))  # fmt: skip
        per_token = 2 * (order + 1) * d * d + 2 * d * d + 2 * k * (order + 1) * d + 4 * d * (a.d_ff or 4 * d)
        filt = 2 * (e * f + inner * f * f + f * d * (order - 1))
        m = 2 * n
        fft = (order - 1) * d * 3 * 2.5 * m * math.log2(m)
        return Flops(dense=float(L * per_token * n), filter=float(L * filt * n), fft=float(L * fft))
    # mamba
    di, state, rank = 2 * d, 16, math.ceil(d / 16)
    per_token = 2 * d * 2 * di + 2 * 4 * di + 2 * di * (rank + 2 * state) + 2 * rank * di + 2 * di * d
    directions = 2 if a.bidirectional else 1
    return Flops(dense=float(directions * L * per_token * n), scan=float(directions * L * 9 * di * state * n))


def forward_flops(a: Architecture, n_tokens: int) -> Flops:
    """Forward FLOPs of one sequence of `n_tokens` model tokens, in windows of `context_tokens` (the last one
    shorter; one window when the context is unknown). Raises ValueError for a negative token count."""
    if n_tokens < 0:
        raise ValueError(f"model {a.model}: n_tokens {n_tokens} < 0")
    window = a.context_tokens or n_tokens or 1
    full, rest = divmod(int(n_tokens), int(window))
    parts = [_window_flops(a, int(window))] * full + ([_window_flops(a, rest)] if rest else [])
    return Flops(*(sum(getattr(p, name) for p in parts) for name in ("dense", "attention", "filter", "fft", "scan")))


def flops_per_kb(a: Architecture, kb: float = 1.0) -> Flops:
    """Forward FLOPs of one sequence of `kb` kilobases (tokens = round(1000 kb x tokens_per_base))."""
    return forward_flops(a, round(1000 * kb * a.tokens_per_base))


def formula(a: Architecture) -> str:
    """The formula behind a model's FLOPs, one line with its source (module docstring)."""
    return {
        "transformer": "2 N_active + 4 n_layer n_ctx d per token (Kaplan et al. 2020 Table 1; Hoffmann et al. 2022 App. F)",
        "hyena": "projections + MLP + implicit filter + FFT conv 3 x 2.5 n log2 n (Poli et al. 2023 section 3)",
        "mamba": "Mamba-1 block projections + 9 d_inner d_state scan per token (Gu & Dao 2023 section 3)",
        "params-only": "2 N per token (Kaplan et al. 2020); the architecture's own terms not modelled",
        "none": "no neural network: 0",
    }[a.kind]


def analytic_rows(registry: Any) -> list[dict[str, Any]]:
    """One row per registered model (`geneb.registry.registry.Registry`): `model`, `paper` (a paper model),
    `kind`, `params`, `n_layer`, `d_model`, `embedding_dim` (the registry's, else d_model), `tokens_per_base`,
    `context_tokens`, `flops_per_kb` (total), `flops_per_kb_counted` (without FFT and scan terms), `formula` and
    `arch_source` (where n_layer and d_model came from)."""
    rows = []
    for name, spec in registry.models.items():
        a = architecture(spec)
        per_kb = flops_per_kb(a)
        emb = (spec.extraction or {}).get("embedding_dim") or a.d_model
        rows.append(
            {
                "model": name,
                "paper": bool(spec.paper),
                "kind": a.kind,
                "params": a.params,
                "n_layer": a.n_layer,
                "d_model": a.d_model,
                "embedding_dim": int(emb) if emb else None,
                "tokens_per_base": a.tokens_per_base,
                "context_tokens": a.context_tokens,
                "flops_per_kb": per_kb.total,
                "flops_per_kb_counted": per_kb.counted,
                "formula": formula(a),
                "arch_source": a.source,
            }
        )
    return rows
