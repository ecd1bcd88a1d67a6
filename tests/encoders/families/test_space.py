"""The SPACE adapter (geneb.encoders.families.space) on a faithful stand-in checkpoint.

The stand-in is the real checkpoint's layout shrunk: config.json with the keys SpaceConfig saves (moe
"species_tracks", 4 species experts, top-3 routing, 8 track experts, output_heads human/mouse), the state dict
of upstream's `TrainingSpace` (every key under "model.", the track heads and the tracks MoE included), built here
by name from github.com/ZhuJiwei111/SPACE@323d89c model/modeling_space.py + model/modules.py, never from
GENEB's module. Shrunk: dim 24, 2 heads, depth 2, 3 downsamplings (8-bp bins), a 256-bp window cropped to 24
bins. `plain_forward` below is upstream's eval forward written out with torch functions, with its sparse
top-k expert dispatch, so GENEB's dense mixture and its layer code are checked against an independent
transcription.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from extraction_support import random_dna
from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.encoders.families.enformer import _window_and_bins
from geneb.encoders.families.space import SpaceArch, SpaceEncoder
from geneb.registry.families import FAMILIES, build
from geneb.registry.load import extraction_settings

CFG = {
    "architectures": ["TrainingSpace"],
    "model_type": "enformer",
    "dim": 24,
    "depth": 2,
    "heads": 2,
    "attn_dim_key": 8,
    "num_downsamples": 3,
    "dim_divisible_by": 4,
    "target_length": 24,
    "output_heads": {"human": 5, "mouse": 3},
    "moe": "species_tracks",
    "species_num_experts": 4,
    "topk": 3,
    "tracks_num_experts": 8,
    "tracks_topk": 3,
    "seq_length": 131072,
    "use_tf_gamma": False,
    "dropout_rate": 0.4,
    "torch_dtype": "float32",
}
WINDOW = 256  # 32 positions after 3 downsamplings, cropped to the central 24 bins of 8 bp (span 192 bp)


def _filters(dim: int, num_down: int, div: int) -> list[int]:
    """modeling_space.py: [dim/2, *exponential_linspace_int(dim/2, dim, num_down - 1, div)]."""
    half, num = dim // 2, num_down - 1
    base = math.exp(math.log(dim / half) / (num - 1))
    return [half] + [int(round(half * base**i / div) * div) for i in range(num)]


def upstream_state_dict(cfg: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """The tensors `TrainingSpace(config).state_dict()` holds for `cfg`, by name, random values (BatchNorm
    running statistics positive)."""
    g = torch.Generator().manual_seed(seed)
    sd: dict[str, torch.Tensor] = {}

    def put(name, *shape, scale=0.3):
        sd["model." + name] = torch.randn(*shape, generator=g) * scale

    def bn(name, c):
        put(name + ".weight", c)
        sd["model." + name + ".weight"] += 1
        put(name + ".bias", c)
        put(name + ".running_mean", c, scale=0.1)
        sd["model." + name + ".running_var"] = torch.rand(c, generator=g) + 0.5
        sd["model." + name + ".num_batches_tracked"] = torch.tensor(100)

    dim, depth, e = cfg["dim"], cfg["depth"], cfg["species_num_experts"]
    f = _filters(dim, cfg["num_downsamples"], cfg["dim_divisible_by"])
    put("stem.0.weight", f[0], 4, 15)
    put("stem.0.bias", f[0])
    bn("stem.1.fn.0", f[0])
    put("stem.1.fn.2.weight", f[0], f[0], 1)
    put("stem.1.fn.2.bias", f[0])
    put("stem.2.to_attn_logits.weight", f[0], f[0], 1, 1)
    for i, (a, b) in enumerate(zip(f[:-1], f[1:])):
        bn(f"conv_tower.{i}.0.0", a)
        put(f"conv_tower.{i}.0.2.weight", b, a, 5)
        put(f"conv_tower.{i}.0.2.bias", b)
        bn(f"conv_tower.{i}.1.fn.0", b)
        put(f"conv_tower.{i}.1.fn.2.weight", b, b, 1)
        put(f"conv_tower.{i}.1.fn.2.bias", b)
        put(f"conv_tower.{i}.2.to_attn_logits.weight", b, b, 1, 1)
    for s in cfg["output_heads"]:
        put(f"transformer.species_embedding.{s}", 1, 1, dim, scale=1.0)
    h, dk, dv = cfg["heads"], cfg["attn_dim_key"], dim // cfg["heads"]
    for i in range(depth):
        p = f"transformer.transformer.{i}."
        put(p + "attention.fn.0.weight", dim)
        sd["model." + p + "attention.fn.0.weight"] += 1
        put(p + "attention.fn.0.bias", dim)
        put(p + "attention.fn.1.to_q.weight", dk * h, dim)
        put(p + "attention.fn.1.to_k.weight", dk * h, dim)
        put(p + "attention.fn.1.to_v.weight", dv * h, dim)
        put(p + "attention.fn.1.to_out.weight", dim, dv * h)
        put(p + "attention.fn.1.to_out.bias", dim)
        put(p + "attention.fn.1.to_rel_k.weight", dk * h, dim // h)
        put(p + "attention.fn.1.rel_content_bias", 1, h, 1, dk)
        put(p + "attention.fn.1.rel_pos_bias", 1, h, 1, dk)
        for s in cfg["output_heads"]:
            put(p + f"feed_forward.gates.{s}.0.weight", e, dim, scale=1.0)
            put(p + f"feed_forward.gates.{s}.0.bias", e)
        put(p + "feed_forward.layer_norm.weight", dim)
        put(p + "feed_forward.layer_norm.bias", dim)
        put(p + "feed_forward.input.weight", e, dim, 2 * dim)
        put(p + "feed_forward.input.bias", e, 2 * dim)
        put(p + "feed_forward.output.weight", e, 2 * dim, dim)
        put(p + "feed_forward.output.bias", e, dim)
    bn("final_pointwise.1.0", f[-1])
    put("final_pointwise.1.2.weight", 2 * dim, f[-1], 1)
    put("final_pointwise.1.2.bias", 2 * dim)
    for s, n in cfg["output_heads"].items():
        put(f"heads.{s}.0.weight", n, 2 * dim)
        put(f"heads.{s}.0.bias", n)
    t, seq = cfg["tracks_num_experts"], cfg["target_length"]
    put("tracks.gate_selector.weight", 8, 2 * dim)
    put("tracks.embedding_gate_selector.weight", 8, dim)
    put("tracks.input_proj.weight", t, seq, 2 * seq)
    put("tracks.output_proj.weight", t, 2 * seq, seq)
    put("tracks.tracks_embedding.CAGE", 1, 1, seq)
    return sd


# ---- upstream's eval forward, written out ----------------------------------------------------------------------


def _gelu(x):
    return torch.sigmoid(1.702 * x) * x


def _bn(x, w, p):
    return F.batch_norm(x, w[p + ".running_mean"], w[p + ".running_var"], w[p + ".weight"], w[p + ".bias"], False)


def _conv_block(x, w, p, k):
    return F.conv1d(_gelu(_bn(x, w, p + ".0")), w[p + ".2.weight"], w[p + ".2.bias"], padding=k // 2)


def _attn_pool(x, weight):
    b, c, n = x.shape
    x = x.view(b, c, n // 2, 2)
    logits = F.conv2d(x, weight)
    return (x * logits.softmax(dim=-1)).sum(-1)


def _positional(seq_len, features):
    distances = torch.arange(-seq_len + 1, seq_len)
    k = features // 6
    pos = distances.abs()[..., None]
    max_range = math.log(seq_len) / math.log(2.0)
    half_life = 2 ** torch.linspace(3.0, max_range, k)
    expo = torch.exp(-math.log(2.0) / half_life[None, :] * pos)
    centre = ((2 ** torch.arange(1, k + 1)).float() - 1)[None, ...] > pos
    stddev, start_mean = seq_len / (2 * k), seq_len / k
    mean = torch.linspace(start_mean, seq_len, k)[None, ...]
    conc, rate = (mean / stddev) ** 2, mean / stddev**2
    x = distances.float().abs()[..., None]
    prob = torch.exp(torch.xlogy(conc - 1.0, x) - rate * x - (torch.lgamma(conc) - conc * torch.log(rate))) + 1e-8
    gamma = prob / torch.amax(prob, dim=-1, keepdim=True)
    emb = torch.cat([expo, centre.float(), gamma], dim=-1)
    return torch.cat([emb, torch.sign(distances)[..., None] * emb], dim=-1)


def _rel_shift(x):
    x = torch.cat([torch.zeros_like(x[..., :1]), x], dim=-1)
    _, h, t1, t2 = x.shape
    x = x.reshape(-1, h, t2, t1)[:, :, 1:, :].reshape(-1, h, t1, t2 - 1)
    return x[..., : (t2 + 1) // 2]


def _attention(x, w, p, cfg):
    h, dim = cfg["heads"], cfg["dim"]
    b, n, _ = x.shape
    q, k, v = (F.linear(x, w[p + n_]) for n_ in (".to_q.weight", ".to_k.weight", ".to_v.weight"))
    q, k, v = (t.view(b, n, h, -1).permute(0, 2, 1, 3) for t in (q, k, v))
    q = q * cfg["attn_dim_key"] ** -0.5
    content = torch.einsum("bhid,bhjd->bhij", q + w[p + ".rel_content_bias"], k)
    rel_k = F.linear(_positional(n, dim // h), w[p + ".to_rel_k.weight"])
    rel_k = rel_k.view(2 * n - 1, h, -1).permute(1, 0, 2)
    rel = _rel_shift(torch.einsum("bhid,hjd->bhij", q + w[p + ".rel_pos_bias"], rel_k))
    out = torch.einsum("bhij,bhjd->bhid", (content + rel).softmax(-1), v)
    return F.linear(out.permute(0, 2, 1, 3).reshape(b, n, -1), w[p + ".to_out.weight"], w[p + ".to_out.bias"])


def _species_moe(x, w, p, species, cfg):
    """SpeciesMoE.forward with its sparse dispatch: tokens sorted by expert, each expert's slice run, weighted
    outputs index-added back."""
    b, n, d = x.shape
    flat = x.reshape(b * n, d)
    logits = F.leaky_relu(F.linear(flat, w[p + f".gates.{species}.0.weight"], w[p + f".gates.{species}.0.bias"]))
    top, idx = torch.topk(logits, cfg["topk"], dim=1)
    probs = F.softmax(top, dim=1)
    xn = F.layer_norm(flat, (d,), w[p + ".layer_norm.weight"], w[p + ".layer_norm.bias"])
    y = torch.zeros_like(flat)
    for token in range(b * n):
        for slot in range(cfg["topk"]):
            ex = int(idx[token, slot])
            hdn = torch.relu(xn[token] @ w[p + ".input.weight"][ex] + w[p + ".input.bias"][ex])
            y[token] += probs[token, slot] * (hdn @ w[p + ".output.weight"][ex] + w[p + ".output.bias"][ex])
    return y.view(b, n, d) + x


def plain_forward(w: dict, cfg: dict, one_hot: torch.Tensor, species: str) -> torch.Tensor:
    """Space.forward(x, return_only_embeddings=True, species=species, target_length=cfg target) in eval:
    (B, L, 4) -> (B, target, 2 dim)."""
    w = {k.removeprefix("model."): v for k, v in w.items()}
    f = _filters(cfg["dim"], cfg["num_downsamples"], cfg["dim_divisible_by"])
    x = one_hot.permute(0, 2, 1)
    x = F.conv1d(x, w["stem.0.weight"], w["stem.0.bias"], padding=7)
    x = x + _conv_block(x, w, "stem.1.fn", 1)
    x = _attn_pool(x, w["stem.2.to_attn_logits.weight"])
    for i in range(len(f) - 1):
        x = _conv_block(x, w, f"conv_tower.{i}.0", 5)
        x = x + _conv_block(x, w, f"conv_tower.{i}.1.fn", 1)
        x = _attn_pool(x, w[f"conv_tower.{i}.2.to_attn_logits.weight"])
    x = x.permute(0, 2, 1)
    x = torch.cat([x, w[f"transformer.species_embedding.{species}"].repeat(x.shape[0], 1, 1)], dim=1)
    d = cfg["dim"]
    for i in range(cfg["depth"]):
        p = f"transformer.transformer.{i}."
        ln = F.layer_norm(x, (d,), w[p + "attention.fn.0.weight"], w[p + "attention.fn.0.bias"])
        x = x + _attention(ln, w, p + "attention.fn.1", cfg)
        x = _species_moe(x, w, p + "feed_forward", species, cfg)
    x = x[:, :-1, :]
    trim = (cfg["target_length"] - x.shape[-2]) // 2
    x = x[:, -trim:trim] if trim else x
    x = _conv_block(x.permute(0, 2, 1), w, "final_pointwise.1", 1).permute(0, 2, 1)
    return _gelu(x)


def one_hot(seq: str) -> torch.Tensor:
    """data.py one_hot_embed: A C G T rows of the identity, N (and anything else) zeros; (1, L, 4)."""
    table = {"A": 0, "C": 1, "G": 2, "T": 3}
    out = torch.zeros(1, len(seq), 4)
    for i, ch in enumerate(seq):
        if ch in table:
            out[0, i, table[ch]] = 1.0
    return out


# ---- fixtures --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A local SPACE stand-in folder (config.json + model.safetensors) and its state dict."""
    folder = tmp_path_factory.mktemp("space")
    sd = upstream_state_dict(CFG)
    (folder / "config.json").write_text(json.dumps(CFG))
    save_file(sd, str(folder / "model.safetensors"))
    return folder, sd


def _settings(folder, **load):
    entry = {
        "display": "space",
        "family": "space",
        "source": {"kind": "local", "path": str(folder)},
        "architecture_family": "hybrid",
        "tokenizer_type": "one-hot",
        "params": 0,
        "pretraining_domain": "mammal",
        "license": "x",
        "load": {"window_bp": WINDOW, **load},
        "extraction": {"pooling": "mean", "max_tokens": None, "long_policy": "truncate", "embedding_dim": 48},
    }
    return extraction_settings({"models": {"space": entry}}, "space", {})


def _window(seq: str, start: int) -> str:
    """The WINDOW-bp window whose position 0 is sequence position `start` (N outside the sequence)."""
    return "".join(seq[i] if 0 <= i < len(seq) else "N" for i in range(start, start + WINDOW))


# ---- tests -----------------------------------------------------------------------------------------------------


def test_space_family_is_registered_and_runs_float32_only():
    fam = FAMILIES["space"]
    assert (
        fam.entry == "geneb.encoders.families.space:from_settings" and fam.dtypes == ("float32",) and not fam.requires
    )


def test_pooled_vector_equals_the_plain_forward_over_the_covered_bins(checkpoint):
    """A 50-bp row is centred in the 256-bp window (start 103); its bases span bins 8..15 of the 24 (bins start
    at window position 32, 8 bp each); GENEB's vector is the plain forward's mean over exactly those bins."""
    folder, sd = checkpoint
    enc = build(_settings(folder), batch_size=2, progress=False)
    assert isinstance(enc, SpaceEncoder) and (enc.window, enc.n_bins, enc.bin_bp, enc.width) == (256, 24, 8, 48)
    seq = random_dna(50, 3)
    start, mask = _window_and_bins(50, window=WINDOW, n_bins=24, bin_bp=8)
    assert start == 103 and np.flatnonzero(mask).tolist() == list(range(8, 16))
    res = enc.embed([seq, random_dna(120, 4)])
    with torch.no_grad():
        ref = plain_forward(sd, CFG, one_hot(_window(seq, -start)), "human")[0, 8:16].mean(0)
    np.testing.assert_allclose(res.embeddings[0], ref.numpy(), rtol=1e-5, atol=1e-5)
    assert res.embeddings.shape == (2, 48) and res.n_tokens.tolist()[0] == 8
    with torch.no_grad():  # the reference's all-bin mean is a different vector: the padding bins count there
        all_bins = plain_forward(sd, CFG, one_hot(_window(seq, -start)), "human")[0].mean(0)
    assert np.abs(res.embeddings[0] - all_bins.numpy()).max() > 1e-3


def test_species_choice_is_recorded_and_changes_the_vectors(checkpoint):
    folder, sd = checkpoint
    human = build(_settings(folder), progress=False)
    mouse = build(_settings(folder, species="mouse"), progress=False)
    assert human.identity()["species"] == "human" and mouse.identity()["species"] == "mouse"
    assert human.identity()["moe"] == "species_tracks"
    assert _settings(folder, species="mouse")["load"]["species"] == "mouse"  # in the hashed settings
    seq = random_dna(64, 5)
    start, mask = _window_and_bins(64, window=WINDOW, n_bins=24, bin_bp=8)
    vm = mouse.embed([seq]).embeddings[0]
    with torch.no_grad():
        ref = plain_forward(sd, CFG, one_hot(_window(seq, -start)), "mouse")[0, mask].mean(0)
    np.testing.assert_allclose(vm, ref.numpy(), rtol=1e-5, atol=1e-5)
    assert np.abs(vm - human.embed([seq]).embeddings[0]).max() > 1e-3
    with pytest.raises(ValueError, match="load.species 'rat'"):
        build(_settings(folder, species="rat"), progress=False)


def test_long_rows_truncate_keeps_the_centre_and_chunk_mean_pools_every_base(checkpoint):
    """300 bp > the 192-bp span: truncate runs one window centred on the row (start (300 - 256) // 2 = 22, the
    reference's keep=center crop) and pools all 24 bins; chunk_mean tiles of 192 bp (window starts -32 and 160)
    pool 24 + 14 bins, weighted by bins."""
    folder, sd = checkpoint
    seq = random_dna(300, 6)
    res = build(_settings(folder), progress=False).embed([seq])
    with torch.no_grad():
        ref = plain_forward(sd, CFG, one_hot(_window(seq, 22)), "human")[0].mean(0)
    np.testing.assert_allclose(res.embeddings[0], ref.numpy(), rtol=1e-5, atol=1e-5)
    assert res.truncated.tolist() == [True] and res.n_tokens.tolist() == [24]
    s = _settings(folder)
    s["extraction"]["long_policy"] = "chunk_mean"
    res = build(s, progress=False).embed([seq])
    with torch.no_grad():
        a = plain_forward(sd, CFG, one_hot(_window(seq, -32)), "human")[0]
        b = plain_forward(sd, CFG, one_hot(_window(seq, 160)), "human")[0, :14]
    np.testing.assert_allclose(res.embeddings[0], torch.cat([a, b]).mean(0).numpy(), rtol=1e-5, atol=1e-5)
    assert res.n_chunks.tolist() == [2] and res.n_tokens.tolist() == [38]


def test_real_layout_centring_and_covered_bins_golden():
    """The real checkpoint's layout (131,072-bp window, 896 bins of 128 bp from window position 8,192): golden
    window starts and covered bins, and the truncate window of a long row."""
    real = SimpleNamespace(window=131_072, n_bins=896, bin_bp=128)
    cases = {1: (65_535, [447]), 128: (65_472, [447, 448]), 300: (65_386, [446, 447, 448, 449])}
    for length, (start, bins) in cases.items():
        ((ws, mask),) = SpaceEncoder.tiles(real, length)
        assert -ws == start and np.flatnonzero(mask).tolist() == bins
    ((ws, mask),) = SpaceEncoder.tiles(real, 114_688)
    assert ws == -8_192 and mask.all()
    assert len(SpaceEncoder.tiles(real, 114_689)) == 2
    ws, mask = SpaceEncoder.truncate_tile(real, 200_000)
    assert ws == (200_000 - 131_072) // 2 and mask.all() and mask.shape == (896,)


def test_real_config_shape_and_parameter_count():
    """SpaceConfig's published hyperparameters (dim 1536, depth 11, 4 species experts) give Enformer's filter
    list and a trunk of 541,562,968 parameters; with the track heads (3072 x (5313 + 1643) + biases) and an
    8-expert tracks MoE that is models.tsv's 588.75M."""
    arch = SpaceArch.from_config({"dim": 1536, "moe": "species_tracks"}, model="space")
    assert arch.filters() == [768, 768, 896, 1024, 1152, 1280, 1536] and arch.width == 3072
    from geneb.encoders.families.space import SpaceTrunk

    with torch.device("meta"):
        trunk = SpaceTrunk(arch)
    assert sum(p.numel() for p in trunk.parameters()) == 541_562_968


def test_checkpoint_tensors_outside_the_trunk_and_heads_are_an_error(checkpoint, tmp_path):
    folder, sd = checkpoint
    (tmp_path / "config.json").write_text(json.dumps(CFG))
    save_file({**sd, "model.extra.weight": torch.zeros(2)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(WeightsNotLoadedError, match="not used by the SpaceTrunk"):
        build(_settings(tmp_path), progress=False)
    cut = {k: v for k, v in sd.items() if ".1.feed_forward." not in k}  # a config deeper than the weights
    save_file(cut, str(tmp_path / "model.safetensors"))
    with pytest.raises(WeightsNotLoadedError, match="not in the checkpoint"):
        build(_settings(tmp_path), progress=False)
    (tmp_path / "config.json").write_text(json.dumps({**CFG, "use_tf_gamma": True}))
    with pytest.raises(ModelLoadError, match="use_tf_gamma"):
        build(_settings(tmp_path), progress=False)


def test_pickled_weights_load_weights_only_without_the_model_prefix(checkpoint, tmp_path):
    """A pytorch_model.bin saved from the bare `Space` (no "model." prefix) loads, read weights-only."""
    folder, sd = checkpoint
    (tmp_path / "config.json").write_text(json.dumps(CFG))
    torch.save({k.removeprefix("model."): v for k, v in sd.items()}, tmp_path / "pytorch_model.bin")
    enc = build(_settings(tmp_path), progress=False)
    ref = build(_settings(folder), progress=False)
    seq = random_dna(40, 9)
    assert enc.identity()["weights_format"] == "pickle-weights-only"
    np.testing.assert_allclose(enc.embed([seq]).embeddings, ref.embed([seq]).embeddings, rtol=0, atol=0)


def test_letters_outside_acgtn_enter_as_n_and_are_counted(checkpoint):
    folder, _ = checkpoint
    enc = build(_settings(folder), progress=False)
    seq = random_dna(60, 10)
    odd = seq[:30] + "R" + seq[31:]
    res = enc.embed([odd, seq[:30] + "N" + seq[31:]])
    assert res.counters.unknown_tokens == 1 and res.counters.unknown_rows == 1
    np.testing.assert_array_equal(res.embeddings[0], res.embeddings[1])


def test_hub_source_reads_the_pinned_revision_and_prefers_safetensors(checkpoint, monkeypatch):
    """source.kind hub: every file is asked for at the pinned commit; a file the hub lacks (EntryNotFoundError)
    is skipped, so safetensors are read when present; offline without the file in the cache is an error naming
    the model."""
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    folder, _ = checkpoint
    rev = "a" * 40
    asked = []

    def download(repo, name, revision=None):
        asked.append((repo, name, revision))
        if not (folder / name).is_file():
            raise EntryNotFoundError(name)
        return str(folder / name)

    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    s = _settings(folder)
    s["source"] = {"kind": "hub", "hub_id": "yangyz1230/space", "revision": rev}
    enc = build(s, progress=False)
    assert enc.weights_format == "safetensors" and enc.identity()["name_or_path"] == "yangyz1230/space"
    assert {r for _, _, r in asked} == {rev} and [n for _, n, _ in asked] == ["config.json", "model.safetensors"]

    def offline(repo, name, revision=None):
        raise LocalEntryNotFoundError("offline")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(ModelLoadError, match="model space: config.json of yangyz1230/space@a{40} is not in the local"):
        build(s, progress=False)
