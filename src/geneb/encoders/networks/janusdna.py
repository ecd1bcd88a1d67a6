"""JanusDNA's network as GENEB's own torch module: no authors' code, no Mamba CUDA kernels, the same code on CPU
and GPU. Module names follow Qihao-Duan/JanusDNA at commit 03cd86e72c5a608ceead55c32729b396ea4bc1b7
(`janusdna/modeling_janusdna.py`), so a released state dict loads by name; the facts it reproduces (two causal
streams, Mamba mixers with the reference selective scan, middle attention, the Janus fusion with its four-part
mask, the final RMSNorm and MLP) are listed in the adapter's docstring, `geneb.encoders.families.janusdna`, which
also reads the configuration (`janus_config`, the mapping every module here takes) and the checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


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


def janus_mask(length: int, device: torch.device | str = "cpu") -> torch.Tensor:
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
    """`FinalAttention`: x + attn(RMSNorm(x)) under `janus_mask`, then x + MLP(RMSNorm(x)). x: (batch, 2L, d)."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        d, eps = int(cfg["hidden_size"]), float(cfg["rms_norm_eps"])
        self.self_attn = Attention(cfg, scale_dim=int(cfg["final_head_dim"]), flex=True)
        self.feed_forward = MLP(d, int(cfg["intermediate_size"]))
        self.input_layernorm, self.pre_ff_layernorm = RMSNorm(d, eps), RMSNorm(d, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        allowed = janus_mask(x.shape[1] // 2, x.device)
        x = x + self.self_attn(self.input_layernorm(x), allowed)
        return x + self.feed_forward(self.pre_ff_layernorm(x))


def janus_fusion(h: torch.Tensor) -> torch.Tensor:
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
        h = self.final_layernorm(janus_fusion(h))
        return h + self.final_mlp(h)
