"""SPACE: GENEB's own torch network and its adapter.

SPACE's network (Yang, Zhu & Su, ICML 2025) as GENEB's own PyTorch module: an Enformer whose transformer
feed-forwards are species mixtures of experts, with the parameter names of github.com/ZhuJiwei111/SPACE at
323d89cfd0189eee1a57b844ea2a8a93996a65aa (model/modeling_space.py, model/modules.py), so the checkpoint's state
dict loads strictly; eval-mode forward only. The facts it reproduces are listed in the adapter's docstring,
`geneb.encoders.families.space`, which also reads config.json and the weights.

SPACE (Yang, Zhu & Su, ICML 2025): an Enformer whose transformer feed-forwards are species mixtures of
experts, supervised on human + mouse functional-genomics tracks. GENEB's own PyTorch module of the network
(`SpaceTrunk`), loaded from the checkpoint's config.json and weights, run through the Enformer adapter's
window-and-bins logic (`geneb.encoders.families.enformer.EnformerEncoder`, subclassed; nothing duplicated).

Facts used (github.com/ZhuJiwei111/SPACE at 323d89cfd0189eee1a57b844ea2a8a93996a65aa: model/config_space.py,
model/modeling_space.py, model/modules.py, model/data.py, experiments/NT/expr_NT.py, README.md):

* Loading: the README loads the hub checkpoint with the GitHub repository's own class
  (`from model.modeling_space import Space; Space.from_pretrained("yangyz1230/space")`), which reads it as a
  `TrainingSpace` (a wrapper holding the network as `.model`) and returns `.model`; the hub checkpoint is
  config.json + weights, with no remote code GENEB could load pinned (the config's model_type is "enformer",
  which is enformer-pytorch's, not SPACE's). The GitHub code cannot be imported as a library either: modules.py
  imports wandb and loads `precomputed/tf_gammas.pt` at import, and building a model whose config.moe holds
  "tracks" reads a track-index table from the authors' home directory (`TracksMoE._load_indices`). Hence GENEB's
  module: same layer types, same parameter names (so the checkpoint's state dict loads strictly), eval-mode
  forward only.
* Config: `SpaceConfig` sets moe="ffn", species_num_experts=4, topk=3, seq_length=131072 in its constructor
  and then lets config.json override them (PretrainedConfig keeps extra kwargs); dim/depth/heads/
  attn_dim_key/num_downsamples/dim_divisible_by/target_length/use_tf_gamma/output_heads are constructor
  arguments (defaults dim 768, depth 11, heads 8, attn_dim_key 64, num_downsamples 7, dim_divisible_by 128,
  target_length 896). `SpaceArch.from_config` reproduces exactly that.
* Network (`Space.__init__` / `forward`): one-hot (B, L, 4) in A, C, G, T order, N = all zeros
  (data.py `one_hot_embed`; any other letter is zeros too) -> stem (Conv1d(4, dim/2, 15) ; residual
  BN-GELU-Conv1x1 ; attention pool /2) -> conv tower (num_downsamples - 1 blocks: BN-GELU-Conv5 ; residual
  BN-GELU-Conv1x1 ; attention pool /2; widths `exponential_linspace_int`) -> a learned species token
  (`transformer.species_embedding[species]`) appended after the L / 128 positions -> depth x [pre-LN relative-
  position attention (Enformer's exponential / central-mask / gamma basis over the L/128 + 1 tokens);
  pre-LN feed-forward: an MLP, or with "species" in config.moe a `SpeciesMoE` whose router is that species'
  Linear + LeakyReLU on the block input, top-`topk` softmax, experts Linear(dim, 2 dim) - ReLU -
  Linear(2 dim, dim) on the layer-normed input] -> the species token dropped -> `TargetLengthCrop` to the
  central `target_length` positions (forward's default target_length=896) -> final pointwise
  BN-GELU-Conv1x1(-> 2 dim) - GELU = the per-bin embeddings (B, 896, 2 dim = 3072) that
  `forward(..., return_embeddings=True)` returns next to the track predictions, and
  `return_only_embeddings=True` returns alone. GELU is Enformer's sigmoid(1.702 x) * x. The track heads
  (`heads.<species>`) and the tracks MoE (`tracks.`) sit on top of those embeddings and are never run here:
  they are the only checkpoint tensors allowed to stay unused.
* Species: `forward(species="human")` by default; the authors' downstream scripts (experiments/*) never pass
  another. GENEB runs `load.species` (default human; mouse is the other expert router and token) and records
  it in `identity()`.

GENEB's extraction policy is the Enformer adapter's: a row up to the bins' span (896 x 128 = 114,688 bp) is
centred in an all-N 131,072-bp window and the pooled vector is the mean (or max) over the output bins it
overlaps, so N padding is never averaged in (the paper's reference padded to 131,072 and took the spatial mean
over all 896 bins). A longer row: long_policy truncate keeps one window centred on the row (the reference's
"raw crop 131072 keep=center") and pools its 896 bins; chunk_mean tiles the row (`enformer_tiles`) so every
base is pooled once; error refuses.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from geneb.core.errors import ModelLoadError
from geneb.encoders.families.enformer import EnformerEncoder
from geneb.encoders.loading import check_loading_info
from geneb.registry.spec import ExtractionSettings

#: SpaceConfig's fixed input length (config_space.py: `self.seq_length = 131_072`)
_WINDOW_BP = 131_072


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
    seq_length: int = _WINDOW_BP
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


def _relative_positions(n: int, features: int, *, device: Any = None) -> torch.Tensor:
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


def _relative_shift(x: torch.Tensor) -> torch.Tensor:
    """(B, H, n, 2n - 1) logits over relative distances -> (B, H, n, n) over key positions (Transformer-XL's
    shift, as modules.py `_relative_shift`)."""
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
        pos = _relative_positions(n, self.features, device=x.device).to(self.to_rel_k.weight.dtype)
        rel_k = self.to_rel_k(pos).reshape(2 * n - 1, h, -1).transpose(0, 1)  # (h, 2n-1, d)
        rel = _relative_shift((q + self.rel_pos_bias) @ rel_k.transpose(-1, -2).unsqueeze(0))
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


_log = logging.getLogger(__name__)

#: the species SPACE was trained on (config.output_heads keys)
_DEFAULT_SPECIES = "human"
#: checkpoint tensors on top of the embeddings: the track heads and the tracks mixture of experts
_UNUSED_PREFIXES = ("heads.", "tracks.")
_SAFETENSORS = ("model.safetensors", "model.safetensors.index.json")
_PICKLE = ("pytorch_model.bin", "pytorch_model.bin.index.json")


# ---- loading ---------------------------------------------------------------------------------------------------


def _fetch(settings: ExtractionSettings, name: str) -> Path | None:
    """Path of file `name` of the checkpoint (local folder, or the hub snapshot at the pinned revision,
    through huggingface_hub's cache), None when the checkpoint has no such file."""
    src = settings.source
    if src.folder:  # a local folder, or external/downloaded weights resolved to one (geneb.registry.weights)
        p = Path(src.folder) / name
        return p if p.is_file() else None
    if src.hub_id is None:
        raise ModelLoadError(f"model {settings.model}: no local folder or hub id to read {name} from")
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    cached = try_to_load_from_cache(src.hub_id, name, revision=src.revision)
    if isinstance(cached, str):
        return Path(cached)
    if cached is not None:  # the cache records that the hub has no such file at this revision
        return None
    try:
        return Path(hf_hub_download(src.hub_id, name, revision=src.revision))
    except LocalEntryNotFoundError as err:
        raise ModelLoadError(
            f"model {settings.model}: {name} of {src.hub_id}@{src.revision} is not in the local hub cache and "
            f"the hub cannot be reached ({err})"
        ) from err
    except EntryNotFoundError:
        return None


def _load_state_dict(settings: ExtractionSettings) -> tuple[dict[str, torch.Tensor], str]:
    """The checkpoint's tensors and their format ("safetensors", else "pickle-weights-only": a
    pytorch_model.bin read with torch.load(weights_only=True), so a file holding more than tensors is
    refused); sharded checkpoints (*.index.json) are read shard by shard. A "model." prefix on every key
    (the `TrainingSpace` wrapper upstream saves) is removed. Raises ModelLoadError naming the model when
    there are no weights."""
    model = settings.model
    for names, fmt in ((_SAFETENSORS, "safetensors"), (_PICKLE, "pickle-weights-only")):
        for name in names:
            path = _fetch(settings, name)
            if path is None:
                continue
            files = [path]
            if name.endswith(".index.json"):
                shards = sorted(set(json.loads(path.read_text())["weight_map"].values()))
                files = [p for p in (_fetch(settings, s) for s in shards) if p is not None]
                if len(files) != len(shards):
                    raise ModelLoadError(f"model {model}: {name} names shards the checkpoint does not have")
            state: dict[str, torch.Tensor] = {}
            for f in files:
                if fmt == "safetensors":
                    from safetensors.torch import load_file

                    state.update(load_file(str(f)))
                else:
                    state.update(torch.load(f, map_location="cpu", weights_only=True))
            if state and all(k.startswith("model.") for k in state):
                state = {k[len("model.") :]: v for k, v in state.items()}
            return state, fmt
    raise ModelLoadError(f"model {model}: no SPACE weights ({', '.join(_SAFETENSORS + _PICKLE)}) in the checkpoint")


def _load_trunk(settings: ExtractionSettings) -> tuple[SpaceTrunk, str, list[str]]:
    """(SpaceTrunk with the checkpoint's weights, eval mode, float32; weights format; the checkpoint tensors
    left unused, all under UNUSED_PREFIXES). Raises ModelLoadError without config.json and
    WeightsNotLoadedError (`check_loading_info`) for a trunk tensor the checkpoint lacks, a checkpoint tensor
    outside the trunk and the heads, or a shape that differs (named)."""
    model = settings.model
    cfg_path = _fetch(settings, "config.json")
    if cfg_path is None:
        raise ModelLoadError(f"model {model}: the SPACE checkpoint has no config.json")
    arch = SpaceArch.from_config(json.loads(cfg_path.read_text()), model=model)
    trunk = SpaceTrunk(arch)
    state, fmt = _load_state_dict(settings)
    own = trunk.state_dict()
    heads = [k for k in state if k.startswith(_UNUSED_PREFIXES)]
    body = {k: v for k, v in state.items() if not k.startswith(_UNUSED_PREFIXES)}
    for k in own:  # BatchNorm's step counter: not a weight, and unused in eval mode; some savers leave it out
        if k.endswith(".num_batches_tracked") and k not in body:
            body[k] = own[k]
    check_loading_info(set(own) - set(body), set(body) - set(own), model=model, model_class="SpaceTrunk")
    bad = [k for k in own if tuple(own[k].shape) != tuple(body[k].shape)]
    if bad:
        raise ModelLoadError(
            f"model {model}: {len(bad)} checkpoint tensors do not fit the config.json network (e.g. {bad[0]}: "
            f"{tuple(body[bad[0]].shape)} vs {tuple(own[bad[0]].shape)})"
        )
    trunk.load_state_dict(body, strict=True)
    return trunk.float().eval(), fmt, sorted(heads)


# ---- the encoder -----------------------------------------------------------------------------------------------


class SpaceEncoder(EnformerEncoder):
    """SPACE's pooled per-bin embeddings through the Enformer adapter's `embed` (module docstring): output
    bins of 128 bp, `target_length` of them (896), width 2 x dim (3072), window `load.window_bp` (default
    131,072, SpaceConfig.seq_length), species `load.species` (default human). Raises ValueError for a pooling
    other than mean/max, a window that is not a multiple of 2**num_downsamples or gives fewer positions than
    the bins, or a species the checkpoint has no router for."""

    label = "SPACE"

    def load_model(self) -> None:
        """Build the trunk from the checkpoint (`_load_trunk`) and set the layout from its config."""
        trunk, self.weights_format, self.unused = _load_trunk(self.settings)
        arch = trunk.arch
        self.species = self.settings.load.species or _DEFAULT_SPECIES
        if self.species not in arch.species:
            raise ValueError(
                f"model {self.model_id}: load.species {self.species!r} is not one of the checkpoint's species "
                f"{list(arch.species)}"
            )
        window = self.settings.load.window_bp
        self.window = int(window if window is not None else arch.seq_length)
        self.bin_bp, self.n_bins, self.width = 2**arch.num_downsamples, arch.target_length, arch.width
        positions = self.window // self.bin_bp
        if self.window % self.bin_bp or positions < self.n_bins or (positions - self.n_bins) % 2:
            raise ValueError(
                f"model {self.model_id}: window_bp {self.window} must be a multiple of {self.bin_bp} bp holding "
                f"the {self.n_bins} output bins with an equal crop on both sides"
            )
        if self.unused:
            _log.info(
                "model %s: %d head tensors not used for embeddings (%s...)",
                self.model_id,
                len(self.unused),
                self.unused[0],
            )
        self.arch = arch
        self.model = SpaceWindowInput(trunk, self.species).eval().to(self.device)
        src = self.settings.source
        self.where = src.folder or src.hub_id

    def identity(self) -> dict[str, Any]:
        """What defines these embeddings beyond the registry settings (the species run is one of them)."""
        return {
            "adapter": type(self).__name__,
            "package": "geneb (own SPACE module)",
            "name_or_path": self.where,
            "weights_format": self.weights_format,
            "species": self.species,
            "moe": self.arch.moe,
            "window_bp": self.window,
            "bins": self.n_bins,
            "bin_bp": self.bin_bp,
            "padding": "sequence centred in an all-N window; pooled over the output bins it overlaps",
            "long_rows": "truncate: one window centred on the row; chunk_mean: tiles of the bins' span",
            "compute_dtype": "float32",
        }

    def truncate_tile(self, length: int) -> tuple[int, np.ndarray]:
        """long_policy truncate, as the reference's "raw crop 131072 keep=center": one window centred on the
        row (window start at sequence position (length - window) // 2; negative where the row is shorter than
        the window, which is N there), all bins pooled (a row longer than the bins' span covers them all)."""
        return (length - self.window) // 2, np.ones(self.n_bins, bool)


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> SpaceEncoder:
    """Adapter entry point of family `space`."""
    return SpaceEncoder(settings, **kwargs)
