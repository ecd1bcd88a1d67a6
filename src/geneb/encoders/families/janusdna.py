"""JanusDNA: GENEB's own torch network and its adapter.

JanusDNA's network as GENEB's own torch module: no authors' code, no Mamba CUDA kernels, the same code on CPU
and GPU. Module names follow Qihao-Duan/JanusDNA at commit 03cd86e72c5a608ceead55c32729b396ea4bc1b7
(`janusdna/modeling_janusdna.py`), so a released state dict loads by name; the facts it reproduces (two causal
streams, Mamba mixers with the reference selective scan, middle attention, the Janus fusion with its four-part
mask, the final RMSNorm and MLP) are listed in the adapter's docstring, `geneb.encoders.families.janusdna`, which
also reads the configuration (`_janus_config`, the mapping every module here takes) and the checkpoint.

JanusDNA (JanusDNA-72-w, JanusDNA-72-wo) behind the shared token-model engine, on GENEB's own torch
implementation of the network: no authors' code, no Mamba CUDA kernels, the same code on CPU and GPU.

Facts used, all read in Qihao-Duan/JanusDNA at commit 03cd86e72c5a608ceead55c32729b396ea4bc1b7
(`janusdna/modeling_janusdna.py`, `janusdna/configuration_janusdna.py`, `caduceus/tokenization_caduceus.py`,
`scripts/pre_train/slurm_JanusDNA_{w,wo}_midattn_72dim.sh`, `configs/model/janusdna.yaml`):

* Input: the Caduceus character tokenizer: [PAD] 4, [UNK] 6, A C G T N = 7..11, upper-cased; no special token
  (the reference tokenizes with `add_special_tokens=False`). The embedding table has `vocab_size` (12) rounded up
  to a multiple of `pad_vocab_size_multiple` (8): 16 rows.
* Two streams, never mixed until the end (`layer_fusion: false`): `JanusDNAModel.forward` concatenates the
  embeddings and their flip along the sequence, and every layer (`BiJanusDNAMambaSeperateWrapper`,
  `BiJanusDNAAttentionWrapper`) runs its forward-stream modules (`*_fwd`, `mamba_fwd`) on the first half and its
  backward-stream modules (`*_bwd`, `mamba_rev`) on the second: each half is a causal model of one reading
  direction. A layer is pre-norm: x + mixer(RMSNorm(x)), then x + FFN(RMSNorm(x)). Layer i is attention where
  i % attn_layer_period == attn_layer_offset (72-w: layer 4 of 8; 72-wo: offset 100, never), else Mamba; its FFN
  is a mixture of experts where i % expert_layer_period == expert_layer_offset (odd layers: 16 experts, top 2,
  softmax weights not renormalised, `JanusDNASparseMoeBlock`), else one SwiGLU MLP (`JanusDNAMLP`).
* The Mamba mixer (`JanusDNAMambaMixer.slow_forward`, the path without kernels): in_proj -> (x, gate); causal
  depthwise conv1d + SiLU; x_proj -> (dt, B, C), each RMS-normed (`dt_layernorm`, `b_layernorm`,
  `c_layernorm`); delta = softplus(dt_proj(dt)); the selective scan with A = -exp(A_log); y = (scan + D x) *
  SiLU(gate); out_proj. `geneb.encoders.families.janusdna.selective_scan` is GENEB's reference recurrence of that
  scan (the semantics of mamba_ssm's documented `selective_scan_ref`; Gu & Dao 2023, Algorithm 2).
* Middle attention (72-w only): per stream, causal (`is_causal`), no positional encoding, scale 1/sqrt(head_dim).
* The Janus fusion: the backward stream is flipped back, and one `FinalAttention` block (attention + SwiGLU MLP)
  runs over the 2L positions with the four-part mask of `JanusDNAFlexAttention.create_janus_mask`: forward
  position i sees forward positions <= i and backward positions >= i + 2; backward position j sees forward
  positions <= j - 2 and backward positions >= j. FlexAttention there pads the 18-wide heads with zeros to
  flex_attn_n_embd / num_heads = 32, which leaves the dot products alone but makes the softmax scale 1/sqrt(32).
  `final_fusion_repos_formasked` then gives position p the forward state p - 1 plus the backward state p + 1
  (position 0: backward 1 only; position L-1: forward L-2 only): no output position has seen its own token.
* Output: `final_layernorm` (RMSNorm), then `x + final_mlp(x)`. The released checkpoints (Harvard Dataverse,
  doi:10.7910/DVN/HDT0RN) predate the final MLP (README update of 2025-08-01): their state dicts have no
  `final_mlp.*`, and the paper's reference ran it as the identity, so the tap is 2 x RMSNorm(fused) (models.tsv
  hidden_tap_reference "twice-post-final-rmsnorm-after-identity-final-mlp-residual"). A checkpoint that has the
  four `final_mlp` tensors gets its MLP.

Padding. Nothing in the Mamba streams or the final attention honours a padding mask (`_update_causal_mask`
passes no mask to FlexAttention; the Mamba mixers take none), and the backward stream reads a right-padded row
pads first: pads reach every real position. The paper's reference padded every row to 1024 tokens and averaged
the real positions of those states, so a row's vector depended on 1024 minus its length. GENEB batches only
equal lengths (family `janusdna`: `attention_mask: false`, not causal) and never pads.

Files (`source.path`, a folder; `load.package_model_name` = the Dataverse file stem, e.g. `72_with_midattn`):
`<stem>.ckpt`, the PyTorch Lightning checkpoint, whose `state_dict` holds `model.model.<JanusDNAModel key>`
(plus `model.lm_head.weight` and `*_torchmetrics.*`, not used), and `<stem>_model_config.json`, `{"config":
{...}}` with the JanusDNAConfig keys (its `bidirectional` is the string "true," of `configs/model/janusdna.yaml`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from geneb.core.errors import LayerNotExposedError, ModelLoadError, WeightsNotLoadedError
from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.encoders.loading import PICKLE_WEIGHTS_ONLY
from geneb.registry.spec import ExtractionSettings


class RMSNorm(nn.Module):
    """weight * x / sqrt(mean(x^2) + eps), in float32 (`JanusDNARMSNorm`). x: (..., d) -> (..., d)."""

    def __init__(self, d: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    z: torch.Tensor,
    *,
    block: int = 128,
) -> torch.Tensor:
    """The Mamba selective scan with gate, as a direct recurrence over time (mamba_ssm `selective_scan_ref`
    semantics with `delta_softplus` already applied; Gu & Dao 2023, Algorithm 2):

        h_t = exp(delta_t * A) * h_{t-1} + delta_t * B_t * u_t    (h_{-1} = 0, per channel d and state n)
        y_t = sum_n C_t[n] h_t[n] + D * u_t;  out_t = y_t * SiLU(z_t)

    u, delta, z: (batch, d, L); A: (d, n); B, C: (batch, n, L); D: (d,). Returns (batch, d, L) float32.
    Computed in float32; `block` time steps have their exp(delta A) and delta B u precomputed at once (memory
    batch * d * block * n), the recurrence itself runs step by step."""
    u, delta, A, B, C = (t.float() for t in (u, delta, A, B, C))
    batch, d, length = u.shape
    h = u.new_zeros(batch, d, A.shape[1])
    ys = []
    for start in range(0, length, block):
        stop = min(start + block, length)
        # time-major (T, batch, d, n) so that every step reads and writes contiguous memory
        dt = delta[:, :, start:stop].permute(2, 0, 1).unsqueeze(-1)
        decay = torch.exp(dt * A)
        drive = (dt * u[:, :, start:stop].permute(2, 0, 1).unsqueeze(-1)) * B[:, :, start:stop].permute(2, 0, 1)[
            :, :, None, :
        ]
        states = torch.empty_like(drive)
        for t in range(stop - start):
            h = torch.addcmul(drive[t], decay[t], h, out=states[t])
        ys.append((states * C[:, :, start:stop].permute(2, 0, 1)[:, :, None, :]).sum(-1).permute(1, 2, 0))
    y = torch.cat(ys, dim=-1) + u * D.float()[None, :, None]
    return y * F.silu(z.float())


class MambaMixer(nn.Module):
    """`JanusDNAMambaMixer` without cache or kernels (its `slow_forward`). x: (batch, L, hidden) -> same."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        hidden, inner = int(cfg["hidden_size"]), int(cfg["mamba_expand"]) * int(cfg["hidden_size"])
        state, rank, kernel = int(cfg["mamba_d_state"]), int(cfg["mamba_dt_rank"]), int(cfg["mamba_d_conv"])
        eps, bias = float(cfg["rms_norm_eps"]), bool(cfg["mamba_proj_bias"])
        self.inner, self.state, self.rank = inner, state, rank
        self.conv1d = nn.Conv1d(
            inner, inner, kernel, groups=inner, padding=kernel - 1, bias=bool(cfg["mamba_conv_bias"])
        )
        self.in_proj = nn.Linear(hidden, 2 * inner, bias=bias)
        self.x_proj = nn.Linear(inner, rank + 2 * state, bias=False)
        self.dt_proj = nn.Linear(rank, inner, bias=True)
        self.A_log = nn.Parameter(torch.zeros(inner, state))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, hidden, bias=bias)
        self.dt_layernorm = RMSNorm(rank, eps)
        self.b_layernorm = RMSNorm(state, eps)
        self.c_layernorm = RMSNorm(state, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        u, gate = self.in_proj(x).transpose(1, 2).chunk(2, dim=1)  # (batch, inner, L) each
        u = F.silu(self.conv1d(u)[..., :length])
        dt, b, c = torch.split(self.x_proj(u.transpose(1, 2)), [self.rank, self.state, self.state], dim=-1)
        dt, b, c = self.dt_layernorm(dt), self.b_layernorm(b), self.c_layernorm(c)
        delta = F.softplus(self.dt_proj(dt)).transpose(1, 2)
        A = -torch.exp(self.A_log.float())
        y = selective_scan(u, delta, A, b.transpose(1, 2), c.transpose(1, 2), self.D, gate)
        return self.out_proj(y.transpose(1, 2).to(x.dtype))


class MLP(nn.Module):
    """SwiGLU feed-forward: down(SiLU(gate(x)) * up(x)) (`JanusDNAMLP`)."""

    def __init__(self, hidden: int, inner: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SparseMoE(nn.Module):
    """Top-k mixture of SwiGLU experts (`JanusDNASparseMoeBlock`): router softmax in float32, the k largest
    weights used as they are (not renormalised), every token through its k experts. x: (batch, L, d) -> same."""

    def __init__(self, hidden: int, inner: int, n_experts: int, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(hidden, n_experts, bias=False)
        self.experts = nn.ModuleList([MLP(hidden, inner) for _ in range(n_experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        weights = F.softmax(self.router(flat), dim=-1, dtype=torch.float32)
        weights, chosen = torch.topk(weights, self.top_k, dim=-1)
        weights = weights.to(flat.dtype)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == e)
            if token.numel():
                out.index_add_(0, token, expert(flat[token]) * weights[token, slot, None])
        return out.reshape(shape)


def _ffn(cfg: Mapping[str, Any], n_experts: int) -> nn.Module:
    hidden, inner = int(cfg["hidden_size"]), int(cfg["intermediate_size"])
    if n_experts > 1:
        return SparseMoE(hidden, inner, n_experts, int(cfg["num_experts_per_tok"]))
    return MLP(hidden, inner)


class Attention(nn.Module):
    """Multi-head attention without positions (`JanusDNAAttention` / `JanusDNAFlexAttention`): softmax(q k^T /
    sqrt(scale_dim)) v under a boolean mask `allowed` (L, L), True = may attend. `scale_dim` is the head width the
    softmax scale is taken from (FlexAttention's zero-padded heads: 32 for 18-wide heads). q/k/v/out projections
    without bias; the output projection is `o_proj`, or `o_projs.0` (FlexAttention). x: (batch, L, d) -> same."""

    def __init__(self, cfg: Mapping[str, Any], *, scale_dim: int, flex: bool) -> None:
        super().__init__()
        hidden, heads, kv = int(cfg["hidden_size"]), int(cfg["num_attention_heads"]), int(cfg["num_key_value_heads"])
        self.heads, self.kv_heads, self.head_dim = heads, kv, hidden // heads
        self.scale = 1.0 / math.sqrt(scale_dim)
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv * self.head_dim, bias=False)
        out = nn.Linear(heads * self.head_dim, hidden, bias=False)
        if flex:
            self.o_projs = nn.ModuleList([out])
        else:
            self.o_proj = out

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q = self.q_proj(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.kv_heads != self.heads:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=self.scale)
        out = out.transpose(1, 2).reshape(batch, length, hidden)
        return (self.o_projs[0] if hasattr(self, "o_projs") else self.o_proj)(out)


class MambaLayer(nn.Module):
    """One Mamba layer of both streams (`BiJanusDNAMambaSeperateWrapper`): `mamba_fwd` and `*_fwd` on the
    forward stream, `mamba_rev` and `*_bwd` on the (flipped) backward stream."""

    def __init__(self, cfg: Mapping[str, Any], n_experts: int) -> None:
        super().__init__()
        d, eps = int(cfg["hidden_size"]), float(cfg["rms_norm_eps"])
        self.mamba_fwd, self.mamba_rev = MambaMixer(cfg), MambaMixer(cfg)
        self.input_layernorm_fwd, self.pre_ff_layernorm_fwd = RMSNorm(d, eps), RMSNorm(d, eps)
        self.input_layernorm_bwd, self.pre_ff_layernorm_bwd = RMSNorm(d, eps), RMSNorm(d, eps)
        self.feed_forward_fwd, self.feed_forward_bwd = _ffn(cfg, n_experts), _ffn(cfg, n_experts)

    def forward(self, fwd: torch.Tensor, bwd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fwd = fwd + self.mamba_fwd(self.input_layernorm_fwd(fwd))
        bwd = bwd + self.mamba_rev(self.input_layernorm_bwd(bwd))
        fwd = fwd + self.feed_forward_fwd(self.pre_ff_layernorm_fwd(fwd))
        bwd = bwd + self.feed_forward_bwd(self.pre_ff_layernorm_bwd(bwd))
        return fwd, bwd


class AttentionLayer(nn.Module):
    """One middle attention layer of both streams (`BiJanusDNAAttentionWrapper`): causal attention per stream."""

    def __init__(self, cfg: Mapping[str, Any], n_experts: int) -> None:
        super().__init__()
        d, eps = int(cfg["hidden_size"]), float(cfg["rms_norm_eps"])
        head = d // int(cfg["num_attention_heads"])
        self.causal = bool(cfg["is_causal"])
        self.self_attn_fwd = Attention(cfg, scale_dim=head, flex=False)
        self.self_attn_bwd = Attention(cfg, scale_dim=head, flex=False)
        self.input_layernorm_fwd, self.pre_ff_layernorm_fwd = RMSNorm(d, eps), RMSNorm(d, eps)
        self.input_layernorm_bwd, self.pre_ff_layernorm_bwd = RMSNorm(d, eps), RMSNorm(d, eps)
        self.feed_forward_fwd, self.feed_forward_bwd = _ffn(cfg, n_experts), _ffn(cfg, n_experts)

    def forward(self, fwd: torch.Tensor, bwd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        length = fwd.shape[1]
        allowed = torch.ones(length, length, dtype=torch.bool, device=fwd.device)
        if self.causal:
            allowed = allowed.tril()
        fwd = fwd + self.self_attn_fwd(self.input_layernorm_fwd(fwd), allowed)
        bwd = bwd + self.self_attn_bwd(self.input_layernorm_bwd(bwd), allowed)
        fwd = fwd + self.feed_forward_fwd(self.pre_ff_layernorm_fwd(fwd))
        bwd = bwd + self.feed_forward_bwd(self.pre_ff_layernorm_bwd(bwd))
        return fwd, bwd


class DecoderLayer(nn.Module):
    """Layer i of the state dict: `layers.i.mamba_module.*` (`JanusDNAMambaDecoderLayer`) or `layers.i.attn.*`
    (`JanusDNAAttentionDecoderLayer`). forward(fwd, bwd) -> (fwd, bwd), each (batch, L, d)."""

    def __init__(self, cfg: Mapping[str, Any], kind: str, n_experts: int) -> None:
        super().__init__()
        if kind == "attention":
            self.attn = AttentionLayer(cfg, n_experts)
        else:
            self.mamba_module = MambaLayer(cfg, n_experts)

    def forward(self, fwd: torch.Tensor, bwd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.attn if hasattr(self, "attn") else self.mamba_module)(fwd, bwd)


def _janus_mask(length: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """The final attention's (2L, 2L) boolean mask over [forward states; backward states flipped back]
    (`JanusDNAFlexAttention.create_janus_mask`): forward query i sees forward keys <= i and backward keys >= i+2;
    backward query j sees forward keys <= j-2 and backward keys >= j (all in sequence positions)."""
    q = torch.arange(2 * length, device=device)[:, None]
    k = torch.arange(2 * length, device=device)[None, :]
    L = length
    return (
        ((k < L) & (q < L) & (q >= k))
        | ((k >= L) & (q < L) & (k >= L + q + 2))
        | ((k < L) & (q >= L) & (q >= k + L + 2))
        | ((k >= L) & (q >= L) & (q <= k))
    )


class FinalAttention(nn.Module):
    """`FinalAttention`: x + attn(RMSNorm(x)) under `_janus_mask`, then x + MLP(RMSNorm(x)). x: (batch, 2L, d)."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        d, eps = int(cfg["hidden_size"]), float(cfg["rms_norm_eps"])
        self.self_attn = Attention(cfg, scale_dim=int(cfg["final_head_dim"]), flex=True)
        self.feed_forward = MLP(d, int(cfg["intermediate_size"]))
        self.input_layernorm, self.pre_ff_layernorm = RMSNorm(d, eps), RMSNorm(d, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        allowed = _janus_mask(x.shape[1] // 2, x.device)
        x = x + self.self_attn(self.input_layernorm(x), allowed)
        return x + self.feed_forward(self.pre_ff_layernorm(x))


def _janus_fusion(h: torch.Tensor) -> torch.Tensor:
    """(batch, 2L, d) final-attention states -> (batch, L, d) (`final_fusion_repos_formasked`): position p gets
    forward state p-1 + backward state p+1; position 0 backward state 1; position L-1 forward state L-2.
    Raises ValueError for L < 3 (the upstream code asserts L > 2)."""
    length = h.shape[1] // 2
    if length < 3:
        raise ValueError(f"JanusDNA needs at least 3 tokens per row (its final fusion), got {length}")
    fwd, bwd = h[:, :length], h[:, length:]
    middle = fwd[:, : length - 2] + bwd[:, 2:]
    return torch.cat([bwd[:, 1:2], middle, fwd[:, length - 2 : length - 1]], dim=1)


class JanusDNA(nn.Module):
    """GENEB's JanusDNA backbone (`JanusDNAModel` with layer_fusion false, final attention, the Janus fusion);
    parameter names are those of its state dict. forward(input_ids (batch, L) int64) -> (batch, L, d) float:
    RMSNorm(fused) + final_mlp(RMSNorm(fused)), where final_mlp is the identity when `final_mlp` is False (the
    released checkpoints, which have none). Raises ValueError for L < 3."""

    def __init__(self, cfg: Mapping[str, Any], *, final_mlp: bool = False) -> None:
        super().__init__()
        d = int(cfg["hidden_size"])
        self.embed_tokens = nn.Embedding(int(cfg["vocab_size"]), d)
        self.layers = nn.ModuleList(
            [
                DecoderLayer(cfg, kind, experts)
                for kind, experts in zip(cfg["layer_types"], cfg["layer_experts"], strict=True)
            ]
        )
        self.final_attention = FinalAttention(cfg)
        self.final_layernorm = RMSNorm(d, float(cfg["rms_norm_eps"]))
        self.final_mlp: nn.Module = (
            nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d), nn.SiLU())
            if final_mlp
            else nn.Identity()
        )

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        fwd, bwd = x, x.flip(1)
        for layer in self.layers:
            fwd, bwd = layer(fwd, bwd)
        h = self.final_attention(torch.cat([fwd, bwd.flip(1)], dim=1))
        h = self.final_layernorm(_janus_fusion(h))
        return h + self.final_mlp(h)


_log = logging.getLogger(__name__)

#: where the released weights are (the README's download link; models.tsv source `harvard-dataverse`)
_DATAVERSE_URL = "https://doi.org/10.7910/DVN/HDT0RN"
#: the Caduceus character vocabulary JanusDNA was trained with (caduceus/tokenization_caduceus.py)
PAD_ID, UNK_ID = 4, 6
_TOKEN_IDS = {"A": 7, "C": 8, "G": 9, "T": 10, "N": 11}
#: JanusDNAConfig defaults (janusdna/configuration_janusdna.py) for keys a config file may leave out
_CONFIG_DEFAULTS: dict[str, Any] = {
    "vocab_size": 6,
    "hidden_size": 1024,
    "intermediate_size": 1024,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "num_experts_per_tok": 2,
    "num_experts": 16,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_dt_rank": "auto",
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "bidirectional": True,
    "layer_fusion": False,
    "final_attention": False,
    "layer_fusion_strategy": "pool",
    "mid_single_direction_attention": False,
    "final_attention_class": "flex_attention",
    "is_causal": True,
    "flex_attn_n_embd": 0,
    "pad_vocab_size_multiple": 8,
    "flexattn_fullattn": False,
    "sliding_window": None,
}
#: the one configuration of the released checkpoints this implementation reproduces: key -> required value
_SUPPORTED = {
    "layer_fusion": False,
    "final_attention": True,
    "layer_fusion_strategy": "pool",
    "mid_single_direction_attention": True,
    "final_attention_class": "flex_attention",
    "flexattn_fullattn": False,
    "hidden_act": "silu",
    "bidirectional": True,
    "sliding_window": None,
}
#: state-dict prefixes of a Lightning checkpoint that are not the backbone (checked, then left out)
_IGNORED_KEYS = ("model.lm_head.weight",)
_IGNORED_PREFIXES = ("train_torchmetrics.", "val_torchmetrics.", "test_torchmetrics.")
_BACKBONE_PREFIX = "model.model."
_FINAL_MLP_KEYS = ("final_mlp.0.weight", "final_mlp.0.bias", "final_mlp.2.weight", "final_mlp.2.bias")


# ---- configuration ------------------------------------------------------------------------------------------


def _as_bool(value: Any) -> Any:
    """A config flag: the authors' YAML writes `bidirectional: true,` (a string "true," once parsed)."""
    if isinstance(value, str) and value.strip().strip(",").lower() in ("true", "false"):
        return value.strip().strip(",").lower() == "true"
    return value


def _janus_config(raw: Mapping[str, Any], *, model: str = "?") -> dict[str, Any]:
    """The JanusDNAConfig values the network needs from a config mapping (the `config` object of
    `<stem>_model_config.json`), with the class's defaults for absent keys, the derived values of its
    constructor (`num_key_value_heads` = heads when unset, `mamba_dt_rank` auto = ceil(hidden / 16), the vocabulary
    rounded up to `pad_vocab_size_multiple`), and `layer_types` / `layer_experts` per layer (its
    `layers_block_type` / `layers_num_experts`). Raises ModelLoadError naming the model for a value outside the
    configuration GENEB reproduces (`_SUPPORTED`) or hidden sizes that do not split into heads."""
    cfg = {**_CONFIG_DEFAULTS, **{k: _as_bool(v) for k, v in raw.items() if k in _CONFIG_DEFAULTS}}
    for key, want in _SUPPORTED.items():
        if cfg[key] != want:
            raise ModelLoadError(
                f"model {model}: JanusDNA config {key}={cfg[key]!r} is not supported (GENEB reproduces the "
                f"released checkpoints' {key}={want!r}; janusdna/modeling_janusdna.py)"
            )
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = heads
    if hidden % heads or heads % int(cfg["num_key_value_heads"]):
        raise ModelLoadError(
            f"model {model}: JanusDNA hidden_size {hidden} does not split into {heads} heads / "
            f"{cfg['num_key_value_heads']} key-value heads"
        )
    if cfg["mamba_dt_rank"] == "auto":
        cfg["mamba_dt_rank"] = math.ceil(hidden / 16)
    mult = int(cfg["pad_vocab_size_multiple"])
    vocab = int(cfg["vocab_size"])
    cfg["vocab_size"] = vocab + (mult - vocab % mult) % mult
    head_dim = hidden // heads
    flex_head = int(cfg["flex_attn_n_embd"]) // heads
    if flex_head < head_dim:
        raise ModelLoadError(
            f"model {model}: JanusDNA flex_attn_n_embd {cfg['flex_attn_n_embd']} gives final-attention heads of "
            f"{flex_head} < head_dim {head_dim}; FlexAttention's zero padding would cut the heads"
        )
    cfg["final_head_dim"] = flex_head
    n = int(cfg["num_hidden_layers"])
    cfg["layer_types"] = [
        "attention" if i % int(cfg["attn_layer_period"]) == int(cfg["attn_layer_offset"]) else "mamba" for i in range(n)
    ]
    period = int(cfg["expert_layer_period"])
    cfg["layer_experts"] = [
        1 if period == 0 else (int(cfg["num_experts"]) if i % period == int(cfg["expert_layer_offset"]) else 1)
        for i in range(n)
    ]
    return cfg


# ---- files ----------------------------------------------------------------------------------------------------


def _inert(name: str) -> type:
    """A placeholder class for a non-tensor global of a checkpoint pickle (an OmegaConf config, a path, an enum in
    the Lightning metadata): it takes any arguments and state the pickle gives it and runs none of the original
    class's code. (torch's weights-only unpickler fills only real dicts and lists, so a dict or list subclass in the
    metadata still stops the load: `_read_checkpoint` says what to do.)"""

    def new(cls: type, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(cls)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    def setstate(self: Any, state: Any) -> None:
        object.__setattr__(self, "_geneb_state", state)

    methods = {"__new__": new, "__init__": init, "__setstate__": setstate, "__module__": "geneb.inert"}
    return type(name.rpartition(".")[2] or name, (), methods)


def _read_checkpoint(path: Path, *, model: str) -> dict[str, torch.Tensor]:
    """The `state_dict` of a Lightning checkpoint, read with `torch.load(weights_only=True)`. The Lightning
    metadata around it (`hyper_parameters` is an OmegaConf object, callbacks hold paths) is not tensors: each such
    global, listed by `torch.serialization.get_unsafe_globals_in_checkpoint` without unpickling, is allowed as an
    inert placeholder (`_inert`), so no code from the file runs and the metadata is discarded. A file that is a
    bare state dict is taken as it is. Raises ModelLoadError naming the model and file when the file cannot be
    read or holds no mapping of names to tensors."""
    try:
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
        if unsafe:
            _log.info("model %s: %s: %d non-tensor globals read as inert placeholders", model, path.name, len(unsafe))
        with torch.serialization.safe_globals([(_inert(name), name) for name in unsafe]):
            ckpt = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - re-raised naming the model and file
        raise ModelLoadError(
            f"model {model}: cannot read the JanusDNA checkpoint {path} weights-only ({err!r}). Fix: where you trust "
            f"the file, save its state dict alone under the same name (torch.save(ckpt['state_dict'], '{path.name}')"
            "); a bare state dict is read as it is"
        ) from err
    state = ckpt.get("state_dict", ckpt) if isinstance(ckpt, Mapping) else None
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ModelLoadError(
            f"model {model}: {path} holds no state dict of tensors (a Lightning checkpoint's `state_dict`)"
        )
    return dict(state)


def _backbone_state(state: Mapping[str, torch.Tensor], *, model: str, path: Path) -> dict[str, torch.Tensor]:
    """The JanusDNAModel tensors of a Lightning state dict: `model.model.<key>` -> `<key>`, with the LM head and
    the torchmetrics entries left out. Raises ModelLoadError naming any other key (not this model's layout)."""
    out: dict[str, torch.Tensor] = {}
    stray = []
    for key, value in state.items():
        if key.startswith(_BACKBONE_PREFIX):
            out[key[len(_BACKBONE_PREFIX) :]] = value
        elif key not in _IGNORED_KEYS and not key.startswith(_IGNORED_PREFIXES):
            stray.append(key)
    if stray or not out:
        raise ModelLoadError(
            f"model {model}: {path} is not a JanusDNA Lightning checkpoint: "
            + (f"unexpected keys {sorted(stray)[:5]}" if stray else f"no `{_BACKBONE_PREFIX}*` keys")
        )
    return out


def _load_strict(net: JanusDNA, state: Mapping[str, torch.Tensor], *, model: str, path: Path) -> None:
    """Copy `state` into `net`, every key and shape exactly (the final MLP's four keys may be absent together).
    Raises WeightsNotLoadedError for missing tensors and ModelLoadError for unexpected keys or shapes, naming
    the model, the file and the first keys."""
    expected = net.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing:
        raise WeightsNotLoadedError(
            f"model {model}: {path} lacks {len(missing)} tensors the JanusDNA config implies ({missing[:5]}); "
            "is the config file the one released with this checkpoint?"
        )
    if unexpected:
        raise ModelLoadError(
            f"model {model}: {path} has {len(unexpected)} tensors the JanusDNA config does not imply "
            f"({unexpected[:5]}); is the config file the one released with this checkpoint?"
        )
    shapes = [k for k in expected if tuple(expected[k].shape) != tuple(state[k].shape)]
    if shapes:
        k = shapes[0]
        raise ModelLoadError(
            f"model {model}: {path} tensor {k} has shape {tuple(state[k].shape)}, the config implies "
            f"{tuple(expected[k].shape)} ({len(shapes)} differ)"
        )
    net.load_state_dict(dict(state), strict=True)


def _janusdna_files(folder: str | None, stem: str | None, *, model: str) -> tuple[Path, Path]:
    """(checkpoint, config) paths `<folder>/<stem>.ckpt` and `<folder>/<stem>_model_config.json`. Raises
    ModelLoadError naming the model, the missing file and where to get it."""
    if not stem:
        raise ModelLoadError(
            f"model {model}: load.package_model_name must name the JanusDNA Dataverse file stem (e.g. 72_with_midattn)"
        )
    if not folder:
        raise ModelLoadError(f"model {model}: source.path must name the folder with the JanusDNA files")
    files = (Path(folder) / f"{stem}.ckpt", Path(folder) / f"{stem}_model_config.json")
    for path in files:
        if not path.is_file():
            raise ModelLoadError(
                f"model {model}: the JanusDNA file {path.name} is not in {folder}; download {files[0].name} and "
                f"{files[1].name} from Harvard Dataverse ({_DATAVERSE_URL}) into that folder"
            )
    return files


def _read_config(path: Path, *, model: str) -> dict[str, Any]:
    """The `config` object of a `<stem>_model_config.json` (a bare config object is taken too), resolved by
    `_janus_config`. Raises ModelLoadError naming the model and file for unreadable JSON."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"model {model}: cannot read the JanusDNA config {path}: {err}") from err
    raw = raw.get("config", raw) if isinstance(raw, dict) else None
    if not isinstance(raw, dict):
        raise ModelLoadError(f"model {model}: {path} holds no JanusDNA config object")
    return _janus_config(raw, model=model)


def _load_janusdna(folder: str | None, stem: str | None, *, model: str) -> tuple[JanusDNA, dict[str, Any]]:
    """(network in eval mode with the checkpoint's weights, resolved config) from the released files
    (`_janusdna_files`). Raises ModelLoadError / WeightsNotLoadedError naming the model and file."""
    ckpt_path, config_path = _janusdna_files(folder, stem, model=model)
    cfg = _read_config(config_path, model=model)
    state = _backbone_state(_read_checkpoint(ckpt_path, model=model), model=model, path=ckpt_path)
    has_mlp = [k in state for k in _FINAL_MLP_KEYS]
    if any(has_mlp) and not all(has_mlp):
        raise ModelLoadError(f"model {model}: {ckpt_path} has only some of the final_mlp tensors {_FINAL_MLP_KEYS}")
    net = JanusDNA(cfg, final_mlp=all(has_mlp))
    _load_strict(net, state, model=model, path=ckpt_path)
    cfg["final_mlp"] = "checkpoint" if all(has_mlp) else "identity (the checkpoint has none)"
    return net.eval(), cfg


# ---- the encoder ----------------------------------------------------------------------------------------------


class JanusDNAEncoder(TokenModelEncoder):
    """JanusDNA through GENEB's native network (`JanusDNA`), float32, on CPU or CUDA. Settings:
    `source.path` (the folder with the Dataverse files), `load.package_model_name` (their stem),
    `extraction.layer` -1 (the final output) or a module name of `JanusDNA` that runs once per forward pass
    (e.g. `final_layernorm`, `final_attention`; a layer of the two streams runs twice and is refused)."""

    def _load(self) -> LoadedNetwork:
        net, cfg = _load_janusdna(self.settings.source.path, self.settings.load.package_model_name, model=self.model_id)
        return LoadedNetwork(
            model=net.to(device=self.device, dtype=getattr(torch, self.weights_dtype)),
            tokenizer=_TOKEN_IDS,
            max_tokens=resolve_max_tokens(None, None, self.extraction.max_tokens, model=self.model_id),
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            hidden_size=int(cfg["hidden_size"]),
            vocab_size=int(cfg["vocab_size"]),
            num_embeddings=int(cfg["vocab_size"]),
            uses_attention_mask=False,
            weights_format=PICKLE_WEIGHTS_ONLY,  # torch.load(weights_only=True), metadata inert
            details={"config": cfg},
        )

    @property
    def config(self) -> dict[str, Any]:
        """The resolved JanusDNA configuration of the loaded checkpoint (`_janus_config`)."""
        return self.loaded.details["config"]

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return [[_TOKEN_IDS.get(ch, UNK_ID) for ch in text.upper()] for text in texts]

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        if want_states:
            raise LayerNotExposedError(
                f"model {self.model_id}: JanusDNA's two streams expose no single per-layer hidden state; use "
                "layer -1 or a module name that runs once (final_layernorm, final_attention)"
            )
        return self.model(inputs["input_ids"])

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            # the text as first recorded (the network now lives in geneb.encoders.families.janusdna): a new text
            # would change the identity, and with it every passed-checks record of this family
            "implementation": "geneb native torch (geneb.encoders.families.janusdna); no Mamba kernels",
            "layer_types": list(self.config["layer_types"]),
            "final_mlp": self.config["final_mlp"],
            "weights_format": self.weights_format,
        }


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> JanusDNAEncoder:
    """Adapter entry point of family `janusdna`."""
    return JanusDNAEncoder(settings, **kwargs)
