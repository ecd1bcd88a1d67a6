"""DNAGPT's network (Zhang et al. 2023) as GENEB's own torch module, with the authors' module names so its
state-dict keys are the released checkpoints' keys (github.com/TencentAILabHealthcare/DNAGPT at commit
9b6c0931e3b2011ee5bbb4b988be3e19d62953ae: `dna_gpt/model/gpt.py`, `dna_gpt/model/dna_gpt.py`).

A GPT-2-style pre-norm decoder with no bias anywhere, learned absolute positions, causal scaled-dot-product
attention with no padding mask, a tanh-GELU MLP of width 4 x d and a final LayerNorm; three heads that embeddings
never use. The adapter (tokenizer, checkpoint reading, engine glue) is `geneb.encoders.families.dnagpt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Architecture:
    """One released checkpoint's sizes (`DNAGPT.from_name`, dna_gpt/model/dna_gpt.py) and its tokenizer's
    `dynamic_kmer` (test.py get_model). Every released model has `bias=False`."""

    num_layers: int
    num_heads: int
    embedding_dim: int
    max_len: int
    dynamic_kmer: bool


#: DNAGPT's heads on top of the backbone (never used for embeddings)
HEADS = ("number_embedding", "mlm_head", "num_regression")


class _Attention(nn.Module):
    """gpt.py MultiheadAttention: `c_attn` (d -> 3d, split q, k, v in that order), causal SDPA, `c_proj`."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"DNAGPT: embedding_dim {dim} is not a multiple of num_heads {num_heads}")
        self.c_attn = nn.Linear(dim, 3 * dim, bias=False)
        self.c_proj = nn.Linear(dim, dim, bias=False)
        self.num_heads = num_heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2) for z in self.c_attn(x).split(c, 2)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class _MLP(nn.Module):
    """gpt.py MLP: `c_fc` (d -> 4d), tanh-approximated GELU, `c_proj` (4d -> d)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim, bias=False)
        self.c_proj = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class _Block(nn.Module):
    """gpt.py Block (pre-norm): x + attn(ln_1(x)), then x + mlp(ln_2(x)); LayerNorm eps 1e-5, no bias."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.attn = _Attention(dim, num_heads)
        self.mlp = _MLP(dim)
        self.ln_1 = nn.LayerNorm(dim, eps=1e-5, bias=False)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-5, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def _head(dim: int, out: int, inp: int | None = None) -> nn.Sequential:
    """dna_gpt.py's head layout: Linear, SiLU, LayerNorm, Linear (state-dict indices 0, 2, 3)."""
    return nn.Sequential(
        nn.Linear(inp or dim, dim, bias=False),
        nn.SiLU(),
        nn.LayerNorm(dim, eps=1e-5, bias=False),
        nn.Linear(dim, out, bias=False),
    )


class _Backbone(nn.Module):
    """dna_gpt.py's `transformer`: token embeddings `wte`, positions `wpe`, blocks `h`, final LayerNorm `ln_f`
    (built and registered in this order, as the authors' ModuleDict: the same state-dict keys and random init)."""

    def __init__(self, arch: Architecture, vocab_size: int) -> None:
        super().__init__()
        d = arch.embedding_dim
        self.wte = nn.Embedding(vocab_size, d)
        self.wpe = nn.Embedding(arch.max_len, d)
        self.h = nn.ModuleList(_Block(d, arch.num_heads) for _ in range(arch.num_layers))
        self.ln_f = nn.LayerNorm(d, eps=1e-5, bias=False)


class DNAGPTModel(nn.Module):
    """DNAGPT with the authors' module names, so its state-dict keys are the released checkpoints' keys:
    `transformer.wte`, `transformer.wpe`, `transformer.h.<i>.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,
    mlp.c_proj}`, `transformer.ln_f`, and the heads `number_embedding`, `mlm_head`, `num_regression` (each
    `.0`, `.2`, `.3`). heads: which heads to build (all by default).

    forward(input_ids (B, T) long) -> {"last_hidden_state": (B, T, d) after ln_f, "hidden_states": None, or
    with output_hidden_states the tuple of num_layers + 1 states: the embeddings (tokens + positions), the
    output of each block, the last one after ln_f (transformers' GPT-2 convention)}. The heads are not run."""

    def __init__(self, arch: Architecture, vocab_size: int, heads: tuple[str, ...] = HEADS) -> None:
        super().__init__()
        d = arch.embedding_dim
        self.arch = arch
        self.transformer = _Backbone(arch, vocab_size)
        sizes = {"number_embedding": (d, 1), "mlm_head": (vocab_size, None), "num_regression": (1, None)}
        for name in heads:
            out, inp = sizes[name]
            setattr(self, name, _head(d, out, inp))

    def forward(self, input_ids: torch.Tensor, output_hidden_states: bool = False) -> dict[str, Any]:
        t = input_ids.shape[1]
        pos = torch.arange(t, device=input_ids.device)
        x = self.transformer.wte(input_ids) + self.transformer.wpe(pos)[None]
        states = [x]
        for block in self.transformer.h:
            x = block(x)
            states.append(x)
        x = self.transformer.ln_f(x)
        states[-1] = x
        return {"last_hidden_state": x, "hidden_states": tuple(states) if output_hidden_states else None}
