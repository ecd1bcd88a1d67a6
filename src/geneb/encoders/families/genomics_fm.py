"""Genomics-FM: GENEB's own torch backbone and its adapter.

Genomics-FM's backbone as GENEB's own torch module, with the checkpoint's tensor names (minus `bert.`), from
terry-r123/Genomics-FM at commit edc9f16b2d146f07092c038b2187b72960b178ea (`genomics_fm/bert_layers.py`): a
MosaicBERT variant with a fused Wqkv projection, post-LN blocks, a gated-GELU MLP and ALiBi attention biases,
computed on padded tensors (equal to the authors' unpad/pad path at every real position). The adapter
(tokenizer, config and weight reading) is `geneb.encoders.families.genomics_fm`.

Genomics-FM (terry-r123/Genomics-FM) behind the shared token-model engine, with GENEB's own module.

Facts used, all from terry-r123/Genomics-FM at commit edc9f16b2d146f07092c038b2187b72960b178ea:

* Model (`genomics_fm/bert_layers.py`, `BertForMaskedLM` over `BertModel(add_pooling_layer=False)`): a
  MosaicBERT variant, not transformers' BERT: one fused `attention.self.Wqkv` projection (q, k, v in that order,
  heads inside each), post-LN blocks (`attention.output.dense` + `LayerNorm(x + input)`), a gated-GELU MLP
  (`mlp.gated_layers` without bias giving [gate | value], exact GELU on the gate, `mlp.wo`, `mlp.layernorm(x +
  residual)`), word + token-type embeddings (+ a learned `position_embeddings` table used only when
  `use_alibi` is false), and ALiBi attention biases (Mosaic's slopes, `|i - j|` distances) added to the
  `(1 - mask) * -10000` padding bias when `use_alibi` is true. transformers' `BertModel` has other tensors
  (separate query/key/value, intermediate/output dense, no GLU), so GENEB writes this module itself with the
  checkpoint's own tensor names (minus the `bert.` prefix) and computes attention on padded tensors, which
  equals the authors' unpad/pad path at every real position.
* Checkpoint (`examples/srun_pretrain.py`): `model.save_pretrained(...)` and `tokenizer.save_pretrained(...)`
  of transformers 4.x on torch 1.7, so a folder with `config.json` (the `BertConfig` subclass of
  `genomics_fm/configuration_bert.py`: BERT keys plus `alibi_starting_size`) and `pytorch_model.bin`; the
  README links the folder on Google Drive (drive.google.com/drive/folders/17-MQdeD9G-F7uiuHWWMdP50MmgJvpJb9).
* Tokenizer: the BPE tokenizer `genomics_fm/tokenizer_bpe/tokenizer.json` (4,096 tokens, [UNK] [CLS] [SEP]
  [PAD] [MASK] = 0..4, Whitespace pre-tokenizer, [CLS] seq [SEP] template) to which pretraining adds the special
  tokens [BPE] [KMER] [ALIBI] [APE] (ids 4096..4099, in that order), then encodes "[BPE][ALIBI]" + sequence with
  special tokens, so each input is [CLS] [BPE] [ALIBI] tokens [SEP], and the forward runs with
  `use_alibi=args.use_alibi`, an argparse `type=bool` flag defaulting to True (any value given is True).
  GENEB does the same: prefix [CLS] [BPE] [ALIBI], suffix [SEP], ALiBi on; adding the four tokens is a no-op
  when the folder's tokenizer.json (saved by the authors) already has them.
* Reference defect (models.tsv reference_extractor_notes): `BertEmbeddings.forward` evaluates
  `int(input_ids.device.index)`, None on CPU, so the official code raises TypeError there; GENEB's module has
  no such line and runs on CPU and GPU alike. The authors' Triton flash-attention kernel (fp16) is not used:
  attention is the PyTorch path of the same file, in GENEB's compute dtype.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from torch import nn

from geneb.core.errors import ModelLoadError
from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork
from geneb.encoders.loading import (
    CONFIG_NAME,
    TOKENIZER_NAME,
    FolderTokenizerEncoder,
    load_mapped,
    model_folder,
    read_json,
    read_state_dict,
    require_file,
)
from geneb.registry.spec import ExtractionSettings


def _alibi_slopes(n_heads: int) -> list[float]:
    """Per-head ALiBi slopes as MosaicBERT computes them (bert_layers.py `_get_alibi_head_slopes`): a geometric
    series from 2^(-8/n) for a power-of-two n, else the closest power of two's series plus every other slope of
    the series for twice that."""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(closest) + _alibi_slopes(2 * closest)[0::2][: n_heads - closest]


def _alibi_bias(n_heads: int, length: int, *, device: Any = None, dtype: Any = None) -> torch.Tensor:
    """ALiBi bias (1, heads, length, length): -slope_h * |i - j| (bert_layers.py `rebuild_alibi_tensor`; its
    cached table sliced to `length` equals this one, which depends only on |i - j|)."""
    pos = torch.arange(length, device=device)
    distance = (pos[None, :] - pos[:, None]).abs()
    slopes = torch.tensor(_alibi_slopes(n_heads), device=device, dtype=torch.float32)
    return (slopes[:, None, None] * -distance[None]).unsqueeze(0).to(dtype or torch.float32)


class _Embeddings(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        hidden = cfg["hidden_size"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], hidden, padding_idx=cfg["pad_token_id"])
        self.token_type_embeddings = nn.Embedding(cfg["type_vocab_size"], hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=cfg["layer_norm_eps"])
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], hidden)

    def forward(self, input_ids: torch.Tensor, use_alibi: bool) -> torch.Tensor:
        types = torch.zeros_like(input_ids)
        out = self.word_embeddings(input_ids) + self.token_type_embeddings(types)
        if not use_alibi:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            out = out + self.position_embeddings(positions)[None]
        return self.LayerNorm(out)


class _SelfAttention(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.heads = cfg["num_attention_heads"]
        self.head_size = cfg["hidden_size"] // self.heads
        self.Wqkv = nn.Linear(cfg["hidden_size"], 3 * cfg["hidden_size"])

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = self.Wqkv(x).view(b, t, 3, self.heads, self.head_size)  # 'b s (t h d) -> b s t h d'
        q, k, v = (qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3))  # (b, h, s, d)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size) + bias
        out = torch.softmax(scores, dim=-1) @ v
        return out.permute(0, 2, 1, 3).reshape(b, t, self.heads * self.head_size)


class _SelfOutput(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["hidden_size"])
        self.LayerNorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class _Attention(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.self = _SelfAttention(cfg)
        self.output = _SelfOutput(cfg)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return self.output(self.self(x, bias), x)


class _GatedMLP(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.inner = cfg["intermediate_size"]
        self.gated_layers = nn.Linear(cfg["hidden_size"], 2 * self.inner, bias=False)
        self.wo = nn.Linear(self.inner, cfg["hidden_size"])
        self.layernorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gated_layers(x)
        h = nn.functional.gelu(h[..., : self.inner], approximate="none") * h[..., self.inner :]
        return self.layernorm(self.wo(h) + x)


class _Layer(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.attention = _Attention(cfg)
        self.mlp = _GatedMLP(cfg)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.attention(x, bias))


class _Encoder(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(cfg) for _ in range(cfg["num_hidden_layers"]))


class GenomicsFMModel(nn.Module):
    """The Genomics-FM backbone (bert_layers.py `BertModel` without pooler), tensor names as in the checkpoint
    minus `bert.`. cfg: the config.json values (see `_CONFIG_KEYS`). use_alibi: ALiBi biases and no position
    table (how pretraining ran), else the learned position table and no ALiBi.

    forward(input_ids (B, T) long, attention_mask (B, T) 0/1, output_hidden_states) -> {"last_hidden_state":
    (B, T, hidden), "hidden_states": the embedding output then each block's, n_layers + 1 tensors, when asked}.
    Padded positions give finite values that no real position attends to (bias -10000, as the authors')."""

    def __init__(self, cfg: dict[str, Any], *, use_alibi: bool = True) -> None:
        super().__init__()
        self.cfg = dict(cfg)
        self.use_alibi = use_alibi
        self.embeddings = _Embeddings(cfg)
        self.encoder = _Encoder(cfg)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, output_hidden_states: bool = False
    ) -> dict[str, Any]:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.embeddings(input_ids, self.use_alibi)
        bias = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -10000.0  # (B, 1, 1, T)
        if self.use_alibi:
            heads = self.cfg["num_attention_heads"]
            bias = bias + _alibi_bias(heads, input_ids.shape[1], device=h.device, dtype=h.dtype)
        states = [h]
        for layer in self.encoder.layer:
            h = layer(h, bias)
            states.append(h)
        out: dict[str, Any] = {"last_hidden_state": h}
        if output_hidden_states:
            out["hidden_states"] = tuple(states)
        return out


_log = logging.getLogger(__name__)

_SOURCE = "github.com/terry-r123/Genomics-FM@edc9f16b2d146f07092c038b2187b72960b178ea"
#: where the weights and tokenizer come from (named in load errors)
_GET = (
    "download the Genomics-FM checkpoint folder (config.json, pytorch_model.bin) from the authors' Google Drive "
    "(drive.google.com/drive/folders/17-MQdeD9G-F7uiuHWWMdP50MmgJvpJb9, linked from the README of "
    f"{_SOURCE}); if it has no tokenizer.json, copy genomics_fm/tokenizer_bpe/tokenizer.json of that repository"
)
#: special tokens pretraining adds to the BPE tokenizer, in this order (srun_pretrain.py)
_ADDED_TOKENS = ("[BPE]", "[KMER]", "[ALIBI]", "[APE]")
#: prompt tokens pretraining puts before every BPE sequence: tokenizer prompt, position prompt
_PROMPTS = ("[BPE]", "[ALIBI]")
#: the checkpoint's wrapper prefix (BertForMaskedLM.bert)
_PREFIX = "bert."


#: config.json keys the module is built from; an absent key takes transformers' BertConfig default (the authors'
#: config class is a BertConfig subclass, configuration_bert.py), so the authors' code would build the same
_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
    "pad_token_id",
)


def _read_config(raw: dict[str, Any], *, model: str) -> dict[str, Any]:
    """The module config from config.json's mapping: CONFIG_KEYS, absent ones from transformers' BertConfig
    defaults (logged). Raises ModelLoadError naming the model for a width that the heads do not divide."""
    from transformers import BertConfig

    defaults = BertConfig()
    absent = [k for k in _CONFIG_KEYS if k not in raw]
    if absent:
        _log.info("model %s: config.json lacks %s; BertConfig defaults used", model, absent)
    cfg = {k: raw.get(k, getattr(defaults, k)) for k in _CONFIG_KEYS}
    if cfg["pad_token_id"] is None:
        cfg["pad_token_id"] = 0
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise ModelLoadError(
            f"model {model}: config.json hidden_size {cfg['hidden_size']} is not a multiple of "
            f"num_attention_heads {cfg['num_attention_heads']}"
        )
    return cfg


class GenomicsFMEncoder(FolderTokenizerEncoder):
    """Genomics-FM from a local checkpoint folder (`source.kind: local`: config.json, pytorch_model.bin or
    model.safetensors, tokenizer.json). Input per chunk: [CLS] [BPE] [ALIBI] tokens [SEP], ALiBi on (the
    module docstring). Raises ModelLoadError for a missing file, a config/weights mismatch or an unreadable
    pickle, and WeightsNotLoadedError for missing or unused tensors, each naming the model."""

    def _load(self) -> LoadedNetwork:
        folder = model_folder(self.settings, get=_GET)
        raw = read_json(require_file(folder, CONFIG_NAME, model=self.model_id, get=_GET), model=self.model_id)
        tokenizer = self._open_tokenizer(require_file(folder, TOKENIZER_NAME, model=self.model_id, get=_GET))
        tokenizer.add_special_tokens(list(_ADDED_TOKENS))
        cfg = _read_config(raw, model=self.model_id)
        state, fmt = read_state_dict(folder, model=self.model_id, get=_GET)
        model = GenomicsFMModel(cfg, use_alibi=True)
        heads = load_mapped(model, state, prefix=_PREFIX, model=self.model_id)
        if heads:
            _log.info("model %s: checkpoint heads not used for embeddings: %s", self.model_id, heads[:5])
        outside = [t for t in (*_PROMPTS, "[CLS]", "[SEP]") if self.token_id(t, tokenizer) >= cfg["vocab_size"]]
        if outside:
            raise ModelLoadError(
                f"model {self.model_id}: tokens {outside} have ids outside the embedding table "
                f"({cfg['vocab_size']} rows, config.json vocab_size); the tokenizer.json is not this checkpoint's"
            )
        return LoadedNetwork(
            model=model.to(getattr(torch, self.weights_dtype)).eval().to(self.device),
            tokenizer=tokenizer,
            max_tokens=resolve_max_tokens(None, None, self.extraction.max_tokens, model=self.model_id),
            prefix=(self.token_id("[CLS]", tokenizer), *(self.token_id(p, tokenizer) for p in _PROMPTS)),
            suffix=(self.token_id("[SEP]", tokenizer),),
            pad_id=self.token_id("[PAD]", tokenizer),
            unk_id=self.token_id("[UNK]", tokenizer),
            hidden_size=cfg["hidden_size"],
            vocab_size=cfg["vocab_size"],
            num_embeddings=cfg["vocab_size"],
            n_layers=cfg["num_hidden_layers"],
            uses_attention_mask=True,
            weights_format=fmt,
            details={"folder": folder},
        )

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        return self.model(inputs["input_ids"], inputs["attention_mask"], output_hidden_states=want_states)

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            **self._folder_identity(),
            "prompts": list(_PROMPTS),
            "use_alibi": self.model.use_alibi,
            "source_code": _SOURCE,
        }


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> GenomicsFMEncoder:
    """Adapter entry point (see geneb.registry.families)."""
    return GenomicsFMEncoder(settings, **kwargs)
