"""Genomics-FM's backbone as GENEB's own torch module, with the checkpoint's tensor names (minus `bert.`), from
terry-r123/Genomics-FM at commit edc9f16b2d146f07092c038b2187b72960b178ea (`genomics_fm/bert_layers.py`): a
MosaicBERT variant with a fused Wqkv projection, post-LN blocks, a gated-GELU MLP and ALiBi attention biases,
computed on padded tensors (equal to the authors' unpad/pad path at every real position). The adapter
(tokenizer, config and weight reading) is `geneb.encoders.families.genomics_fm`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


def alibi_slopes(n_heads: int) -> list[float]:
    """Per-head ALiBi slopes as MosaicBERT computes them (bert_layers.py `_get_alibi_head_slopes`): a geometric
    series from 2^(-8/n) for a power-of-two n, else the closest power of two's series plus every other slope of
    the series for twice that."""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n_heads - closest]


def alibi_bias(n_heads: int, length: int, *, device: Any = None, dtype: Any = None) -> torch.Tensor:
    """ALiBi bias (1, heads, length, length): -slope_h * |i - j| (bert_layers.py `rebuild_alibi_tensor`; its
    cached table sliced to `length` equals this one, which depends only on |i - j|)."""
    pos = torch.arange(length, device=device)
    distance = (pos[None, :] - pos[:, None]).abs()
    slopes = torch.tensor(alibi_slopes(n_heads), device=device, dtype=torch.float32)
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
    minus `bert.`. cfg: the config.json values (see `CONFIG_KEYS`). use_alibi: ALiBi biases and no position
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
            bias = bias + alibi_bias(heads, input_ids.shape[1], device=h.device, dtype=h.dtype)
        states = [h]
        for layer in self.encoder.layer:
            h = layer(h, bias)
            states.append(h)
        out: dict[str, Any] = {"last_hidden_state": h}
        if output_hidden_states:
            out["hidden_states"] = tuple(states)
        return out
