"""SPACE's network (Yang, Zhu & Su, ICML 2025) as GENEB's own PyTorch module: an Enformer whose transformer
feed-forwards are species mixtures of experts, with the parameter names of github.com/ZhuJiwei111/SPACE at
323d89cfd0189eee1a57b844ea2a8a93996a65aa (model/modeling_space.py, model/modules.py), so the checkpoint's state
dict loads strictly; eval-mode forward only. The facts it reproduces are listed in the adapter's docstring,
`geneb.encoders.families.space`, which also reads config.json and the weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from geneb.core.errors import ModelLoadError

#: SpaceConfig's fixed input length (config_space.py: `self.seq_length = 131_072`)
WINDOW_BP = 131_072


@dataclass(frozen=True)
class SpaceArch:
    """The SPACE hyperparameters the network's shape depends on, read from config.json with SpaceConfig's
    defaults (model/config_space.py). species: the config's output_heads keys, in order."""

    dim: int = 768
    depth: int = 11
    heads: int = 8
    attn_dim_key: int = 64
    num_downsamples: int = 7
    dim_divisible_by: int = 128
    target_length: int = 896
    moe: str = "ffn"
    species_num_experts: int = 4
    topk: int = 3
    seq_length: int = WINDOW_BP
    use_tf_gamma: bool = False
    species: tuple[str, ...] = ("human", "mouse")

    @classmethod
    def from_config(cls, cfg: dict[str, Any], *, model: str) -> SpaceArch:
        """From a parsed config.json; raises ModelLoadError naming the model for a value the network cannot
        take (use_tf_gamma: Enformer's precomputed gammas exist for 1,536 positions only, SPACE runs 1,025; a
        dim not divisible by heads; output_heads without species)."""
        names = [f for f in cls.__dataclass_fields__ if f != "species"]
        kw = {k: cfg[k] for k in names if k in cfg}
        heads = cfg.get("output_heads") or {"human": 5313, "mouse": 1643}
        arch = cls(**kw, species=tuple(heads))
        if arch.use_tf_gamma:
            raise ModelLoadError(
                f"model {model}: config use_tf_gamma is true; GENEB's SPACE module computes the gammas"
            )
        if arch.dim % arch.heads or (arch.dim // arch.heads) % 6 or not arch.species or arch.depth < 1:
            raise ModelLoadError(
                f"model {model}: config dim {arch.dim} / heads {arch.heads} / output_heads {list(heads)} do not "
                "describe a SPACE network (dim / heads must be a multiple of 6; at least one species)"
            )
        if arch.target_length < 1 or arch.num_downsamples < 3:
            raise ModelLoadError(
                f"model {model}: config target_length {arch.target_length} / num_downsamples "
                f"{arch.num_downsamples}: GENEB needs a positive crop and at least 3 downsamplings"
            )
        if arch.topk > arch.species_num_experts and "species" in arch.moe:
            raise ModelLoadError(f"model {model}: config topk {arch.topk} > species_num_experts")
        return arch

    @property
    def species_moe(self) -> bool:
        """Whether the feed-forwards are species mixtures of experts (`"species" in config.moe`)."""
        return "species" in self.moe

    @property
    def width(self) -> int:
        """The per-bin embedding width, 2 x dim."""
        return 2 * self.dim

    def filters(self) -> list[int]:
        """Channel widths of the stem and conv tower: [dim/2, *exponential_linspace_int(dim/2, dim,
        num_downsamples - 1, dim_divisible_by)] (modeling_space.py; Python's round, as upstream)."""
        half, num = self.dim // 2, self.num_downsamples - 1
        base = math.exp(math.log(self.dim / half) / (num - 1))
        return [half] + [int(round(half * base**i / self.dim_divisible_by) * self.dim_divisible_by) for i in range(num)]


class _GELU(nn.Module):
    """Enformer's GELU approximation, sigmoid(1.702 x) * x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(1.702 * x) * x


class _Residual(nn.Module):
    """x + fn(x) (parameters under `fn.`)."""

    def __init__(self, fn: nn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x) + x


class _Transpose(nn.Module):
    """(B, N, C) <-> (B, C, N), a parameter-free slot where upstream has an einops Rearrange."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)


def _conv_block(dim: int, dim_out: int | None = None, kernel: int = 1) -> nn.Sequential:
    """BatchNorm1d - GELU - Conv1d (keys .0 BN, .2 conv), upstream's ConvBlock."""
    return nn.Sequential(nn.BatchNorm1d(dim), _GELU(), nn.Conv1d(dim, dim_out or dim, kernel, padding=kernel // 2))


class _AttentionPool(nn.Module):
    """Softmax-weighted pooling of pairs of positions, weights from a 1x1 Conv2d (`to_attn_logits`, no
    bias). Input (B, C, N) with N even (GENEB's windows are multiples of 2**num_downsamples)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.to_attn_logits = nn.Conv2d(dim, dim, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, n = x.shape
        x = x.reshape(b, c, n // 2, 2)
        return (x * self.to_attn_logits(x).softmax(dim=-1)).sum(dim=-1)


def relative_positions(n: int, features: int, *, device: Any = None) -> torch.Tensor:
    """Enformer's relative-position basis for `n` tokens: (2n - 1, features) float32 over distances
    -(n-1)..n-1, from 3 families (exponential decay, central mask, gamma pdf) of features / 6 functions each of
    |distance|, then the same times sign(distance) (modules.py `get_positional_embed`, use_tf_gamma False).
    Raises ValueError when features is not a multiple of 6."""
    if features % 6:
        raise ValueError(f"relative-position features {features} not divisible by 6")
    k = features // 6
    dist = torch.arange(-n + 1, n, device=device)
    pos = dist.abs().float()[:, None]
    half_life = 2 ** torch.linspace(3.0, math.log(n) / math.log(2.0), k, device=device)
    expo = torch.exp(-math.log(2.0) / half_life[None, :] * pos)
    widths = 2 ** torch.arange(1, k + 1, device=device).float() - 1
    central = (widths[None, :] > pos).float()
    stddev, start = n / (2 * k), n / k
    mean = torch.linspace(start, n, k, device=device)[None, :]
    conc, rate = (mean / stddev) ** 2, mean / stddev**2
    logp = torch.xlogy(conc - 1.0, pos) - rate * pos - (torch.lgamma(conc) - conc * torch.log(rate))
    gamma = torch.exp(logp) + 1e-8
    gamma = gamma / gamma.amax(dim=-1, keepdim=True)
    emb = torch.cat([expo, central, gamma], dim=-1)
    return torch.cat([emb, torch.sign(dist).float()[:, None] * emb], dim=-1)


def relative_shift(x: torch.Tensor) -> torch.Tensor:
    """(B, H, n, 2n - 1) logits over relative distances -> (B, H, n, n) over key positions (Transformer-XL's
    shift, as modules.py `relative_shift`)."""
    x = torch.cat([torch.zeros_like(x[..., :1]), x], dim=-1)
    b, h, t1, t2 = x.shape
    x = x.reshape(b, h, t2, t1)[:, :, 1:, :].reshape(b, h, t1, t2 - 1)
    return x[..., : (t2 + 1) // 2]


class _Attention(nn.Module):
    """Multi-head attention with Enformer's learned relative-position logits (to_q/to_k/to_v without bias,
    to_out with bias, to_rel_k, rel_content_bias, rel_pos_bias)."""

    def __init__(self, dim: int, heads: int, dim_key: int) -> None:
        super().__init__()
        dim_value, self.heads, self.scale = dim // heads, heads, dim_key**-0.5
        self.features = dim // heads
        self.to_q = nn.Linear(dim, dim_key * heads, bias=False)
        self.to_k = nn.Linear(dim, dim_key * heads, bias=False)
        self.to_v = nn.Linear(dim, dim_value * heads, bias=False)
        self.to_out = nn.Linear(dim_value * heads, dim)
        self.to_rel_k = nn.Linear(self.features, dim_key * heads, bias=False)
        self.rel_content_bias = nn.Parameter(torch.zeros(1, heads, 1, dim_key))
        self.rel_pos_bias = nn.Parameter(torch.zeros(1, heads, 1, dim_key))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        h = self.heads
        q, k, v = (t.reshape(b, n, h, -1).transpose(1, 2) for t in (self.to_q(x), self.to_k(x), self.to_v(x)))
        q = q * self.scale
        content = (q + self.rel_content_bias) @ k.transpose(-1, -2)
        pos = relative_positions(n, self.features, device=x.device).to(self.to_rel_k.weight.dtype)
        rel_k = self.to_rel_k(pos).reshape(2 * n - 1, h, -1).transpose(0, 1)  # (h, 2n-1, d)
        rel = relative_shift((q + self.rel_pos_bias) @ rel_k.transpose(-1, -2).unsqueeze(0))
        out = (content + rel).softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class _MLP(nn.Module):
    """Pre-LN feed-forward with residual: x + output(relu(input(layer_norm(x))))."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.layer_norm = nn.LayerNorm(dim)
        self.input = nn.Linear(dim, dim * 2)
        self.output = nn.Linear(dim * 2, dim)

    def forward(self, x: torch.Tensor, species: str) -> torch.Tensor:
        return x + self.output(torch.relu(self.input(self.layer_norm(x))))


class _Experts(nn.Module):
    """E linear maps at once: weight (E, in, out), bias (E, out) (modules.py `Experts`)."""

    def __init__(self, n: int, d_in: int, d_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(n, d_out))


class _SpeciesMoE(nn.Module):
    """The species mixture-of-experts feed-forward (modules.py `SpeciesMoE`, noisy_gating False, eval): the
    router of `species` (gates.<species>: Linear(dim, E) + LeakyReLU) reads the block input, the top-k logits
    are softmaxed, and the selected experts' ReLU MLPs of layer_norm(x) are summed with those weights, plus x.
    Evaluated densely (every expert on every position, unselected ones weighted 0): the same sum."""

    def __init__(self, species: tuple[str, ...], dim: int, n_experts: int, topk: int) -> None:
        super().__init__()
        self.k = topk
        self.gates = nn.ModuleDict({s: nn.Sequential(nn.Linear(dim, n_experts), nn.LeakyReLU()) for s in species})
        self.layer_norm = nn.LayerNorm(dim)
        self.input = _Experts(n_experts, dim, dim * 2)
        self.output = _Experts(n_experts, dim * 2, dim)

    def forward(self, x: torch.Tensor, species: str) -> torch.Tensor:
        logits = self.gates[species](x)  # (B, N, E)
        top, idx = logits.topk(self.k, dim=-1)
        weights = torch.zeros_like(logits).scatter(-1, idx, top.softmax(dim=-1))
        xn = self.layer_norm(x)
        hidden = torch.relu(torch.einsum("bnd,edf->bnef", xn, self.input.weight) + self.input.bias)
        out = torch.einsum("bnef,efd->bned", hidden, self.output.weight) + self.output.bias
        return x + (out * weights.unsqueeze(-1)).sum(dim=2)


class _Block(nn.Module):
    """attention = Residual(LayerNorm, Attention, Dropout); feed_forward = MLP or SpeciesMoE."""

    def __init__(self, arch: SpaceArch) -> None:
        super().__init__()
        self.attention = _Residual(
            nn.Sequential(nn.LayerNorm(arch.dim), _Attention(arch.dim, arch.heads, arch.attn_dim_key), nn.Identity())
        )
        self.feed_forward: nn.Module = (
            _SpeciesMoE(arch.species, arch.dim, arch.species_num_experts, arch.topk)
            if arch.species_moe
            else _MLP(arch.dim)
        )

    def forward(self, x: torch.Tensor, species: str) -> torch.Tensor:
        return self.feed_forward(self.attention(x), species)


class _Transformer(nn.Module):
    """species_embedding (one (1, 1, dim) token per species) + `transformer`, the list of blocks."""

    def __init__(self, arch: SpaceArch) -> None:
        super().__init__()
        self.species_embedding = nn.ParameterDict({s: nn.Parameter(torch.zeros(1, 1, arch.dim)) for s in arch.species})
        self.transformer = nn.ModuleList(_Block(arch) for _ in range(arch.depth))

    def forward(self, x: torch.Tensor, species: str) -> torch.Tensor:
        x = torch.cat([x, self.species_embedding[species].expand(x.shape[0], -1, -1)], dim=1)
        for block in self.transformer:
            x = block(x, species)
        return x


class SpaceTrunk(nn.Module):
    """SPACE up to its per-bin embeddings, with upstream's parameter names (`Space` less `heads.` and
    `tracks.`). forward(one_hot (B, L, 4) float, species) -> (B, target_length, 2 dim) float, L a multiple of
    2**num_downsamples with L / 2**num_downsamples >= target_length. Raises ValueError for another L or an
    unknown species."""

    def __init__(self, arch: SpaceArch) -> None:
        super().__init__()
        self.arch = arch
        f = arch.filters()
        self.stem = nn.Sequential(nn.Conv1d(4, f[0], 15, padding=7), _Residual(_conv_block(f[0])), _AttentionPool(f[0]))
        self.conv_tower = nn.Sequential(
            *(
                nn.Sequential(_conv_block(a, b, 5), _Residual(_conv_block(b, b, 1)), _AttentionPool(b))
                for a, b in zip(f[:-1], f[1:])
            )
        )
        self.transformer = _Transformer(arch)
        self.final_pointwise = nn.Sequential(
            _Transpose(), _conv_block(f[-1], 2 * arch.dim, 1), _Transpose(), nn.Identity(), _GELU()
        )

    def forward(self, one_hot: torch.Tensor, species: str) -> torch.Tensor:
        arch = self.arch
        if species not in arch.species:
            raise ValueError(f"species {species!r} not among the checkpoint's {list(arch.species)}")
        down = 2**arch.num_downsamples
        length = one_hot.shape[1]
        if length % down or length // down < arch.target_length:
            raise ValueError(
                f"input of {length} bp: must be a multiple of {down} bp and give >= {arch.target_length} positions"
            )
        x = self.conv_tower(self.stem(one_hot.transpose(1, 2))).transpose(1, 2)
        x = self.transformer(x, species)[:, :-1]
        n = x.shape[1]
        trim = -((arch.target_length - n) // 2)  # TargetLengthCrop: x[:, -trim:trim] for trim = (target - n) // 2
        if trim:
            x = x[:, trim:-trim]
        return self.final_pointwise(x)


class SpaceWindowInput(nn.Module):
    """The call the Enformer adapter makes: model(indices (B, L) long, A C G T = 0..3, N = 4,
    return_embeddings=True) -> (None, per-bin embeddings (B, bins, width)); indices become the one-hot SPACE
    reads (N all zeros) and the trunk runs for `species`."""

    def __init__(self, trunk: SpaceTrunk, species: str) -> None:
        super().__init__()
        self.trunk, self.species = trunk, species

    def forward(self, x: torch.Tensor, return_embeddings: bool = True) -> tuple[None, torch.Tensor]:
        one_hot = F.one_hot(x, num_classes=5)[..., :4].to(self.trunk.get_parameter("stem.0.weight").dtype)
        return None, self.trunk(one_hot, self.species)
