"""SPACE (Yang, Zhu & Su, ICML 2025): an Enformer whose transformer feed-forwards are species mixtures of
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
from pathlib import Path
from typing import Any

import numpy as np
import torch

from geneb.core.errors import ModelLoadError
from geneb.encoders.families.enformer import EnformerEncoder
from geneb.encoders.loading.checkpoint_keys import check_loading_info
from geneb.encoders.networks.space import SpaceArch, SpaceTrunk, SpaceWindowInput
from geneb.registry.settings import ExtractionSettings

log = logging.getLogger(__name__)

#: the species SPACE was trained on (config.output_heads keys)
DEFAULT_SPECIES = "human"
#: checkpoint tensors on top of the embeddings: the track heads and the tracks mixture of experts
UNUSED_PREFIXES = ("heads.", "tracks.")
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


def load_state_dict(settings: ExtractionSettings) -> tuple[dict[str, torch.Tensor], str]:
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


def load_trunk(settings: ExtractionSettings) -> tuple[SpaceTrunk, str, list[str]]:
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
    state, fmt = load_state_dict(settings)
    own = trunk.state_dict()
    heads = [k for k in state if k.startswith(UNUSED_PREFIXES)]
    body = {k: v for k, v in state.items() if not k.startswith(UNUSED_PREFIXES)}
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
        """Build the trunk from the checkpoint (`load_trunk`) and set the layout from its config."""
        trunk, self.weights_format, self.unused = load_trunk(self.settings)
        arch = trunk.arch
        self.species = self.settings.load.species or DEFAULT_SPECIES
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
            log.info(
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
