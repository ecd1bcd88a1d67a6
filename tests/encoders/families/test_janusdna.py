"""The JanusDNA adapter on stand-ins of the two released checkpoints (JanusDNA_72_w, JanusDNA_72_wo): the real
config values and the state-dict layout of the Harvard Dataverse Lightning files (`72_with_midattn.ckpt`: 636
state entries after the torchmetrics ones, `72_without_midattn.ckpt`: 652), random weights, loaded through the
registry entry (`source.kind: local`). GENEB's vectors are compared with a plain forward pass written out here
from Qihao-Duan/JanusDNA `janusdna/modeling_janusdna.py` (commit 03cd86e), and its selective scan with a direct
per-channel recurrence."""

from __future__ import annotations

import collections
import copy
import json
import math
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from geneb.core.errors import LayerNotExposedError, ModelForwardError, ModelLoadError, WeightsNotLoadedError
from geneb.encoders.families.janusdna import _TOKEN_IDS, selective_scan
from geneb.registry import families as adapters
from geneb.registry.load import extraction_settings, load_registry

H, INNER, STATE, RANK, KERNEL, FFN, EXPERTS, HEADS, VOCAB = 72, 144, 16, 5, 4, 288, 16, 4, 16
STEMS = {"JanusDNA_72_w": "72_with_midattn", "JanusDNA_72_wo": "72_without_midattn"}


def real_config(with_attention: bool) -> dict:
    """The config object of `<stem>_model_config.json` (values of scripts/pre_train/slurm_JanusDNA_*_72dim.sh
    over configs/model/janusdna.yaml; its `bidirectional` is the YAML's string "true,")."""
    return {
        "_target_": "janusdna.configuration_janusdna.JanusDNAConfig",
        "hidden_size": H,
        "flex_attn_n_embd": 128,
        "num_hidden_layers": 8,
        "vocab_size": 12,
        "ssm_cfg": {"d_state": 16, "d_conv": 4, "expand": 2, "dt_rank": "auto", "conv_bias": True, "bias": False},
        "rms_norm_eps": 1e-6,
        "initializer_range": 0.02,
        "bidirectional": "true,",
        "bidirectional_strategy": "add",
        "bidirectional_weight_tie": True,
        "layer_fusion": False,
        "return_dict": True,
        "num_experts": EXPERTS,
        "num_experts_per_tok": 2,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "output_hidden_states": False,
        "intermediate_factor": 4,
        "num_attention_heads": HEADS,
        "attn_implementation": "flash_attention_2",
        "attn_layer_period": 8,
        "attn_layer_offset": 4 if with_attention else 100,
        "final_attention": True,
        "mid_single_direction_attention": True,
        "layer_fusion_strategy": "pool",
        "final_attention_class": "flex_attention",
        "bidirectional_attn_tie": False,
        "gradient_checkpointing": True,
        "output_router_logits": True,
        "router_aux_loss_coef": 0.2,
        "intermediate_size": FFN,
    }


def released_shapes(with_attention: bool, final_mlp: bool = False) -> dict[str, tuple[int, ...]]:
    """JanusDNAModel's state-dict keys and shapes for the 72-d configs, written out from the module tree."""
    shapes: dict[str, tuple[int, ...]] = {"embed_tokens.weight": (VOCAB, H)}

    def ffn(prefix: str, moe: bool) -> None:
        experts = [f"{prefix}experts.{e}." for e in range(EXPERTS)] if moe else [prefix]
        if moe:
            shapes[f"{prefix}router.weight"] = (EXPERTS, H)
        for p in experts:
            shapes.update({f"{p}gate_proj.weight": (FFN, H), f"{p}up_proj.weight": (FFN, H)})
            shapes[f"{p}down_proj.weight"] = (H, FFN)

    for i in range(8):
        moe = i % 2 == 1
        if with_attention and i == 4:
            p = f"layers.{i}.attn."
            for side in ("fwd", "bwd"):
                for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
                    shapes[f"{p}self_attn_{side}.{proj}.weight"] = (H, H)
        else:
            p = f"layers.{i}.mamba_module."
            for mixer in ("mamba_fwd", "mamba_rev"):
                m = f"{p}{mixer}."
                shapes.update(
                    {
                        f"{m}conv1d.weight": (INNER, 1, KERNEL),
                        f"{m}conv1d.bias": (INNER,),
                        f"{m}in_proj.weight": (2 * INNER, H),
                        f"{m}x_proj.weight": (RANK + 2 * STATE, INNER),
                        f"{m}dt_proj.weight": (INNER, RANK),
                        f"{m}dt_proj.bias": (INNER,),
                        f"{m}A_log": (INNER, STATE),
                        f"{m}D": (INNER,),
                        f"{m}out_proj.weight": (H, INNER),
                        f"{m}dt_layernorm.weight": (RANK,),
                        f"{m}b_layernorm.weight": (STATE,),
                        f"{m}c_layernorm.weight": (STATE,),
                    }
                )
        for side in ("fwd", "bwd"):
            shapes[f"{p}input_layernorm_{side}.weight"] = (H,)
            shapes[f"{p}pre_ff_layernorm_{side}.weight"] = (H,)
            ffn(f"{p}feed_forward_{side}.", moe)
    shapes["final_layernorm.weight"] = (H,)
    f = "final_attention."
    for proj in ("q_proj", "k_proj", "v_proj"):
        shapes[f"{f}self_attn.{proj}.weight"] = (H, H)
    shapes[f"{f}self_attn.o_projs.0.weight"] = (H, H)
    ffn(f"{f}feed_forward.", False)
    shapes[f"{f}input_layernorm.weight"] = (H,)
    shapes[f"{f}pre_ff_layernorm.weight"] = (H,)
    if final_mlp:
        shapes.update({"final_mlp.0.weight": (2 * H, H), "final_mlp.0.bias": (2 * H,)})
        shapes.update({"final_mlp.2.weight": (H, 2 * H), "final_mlp.2.bias": (H,)})
    return shapes


def random_weights(shapes: dict[str, tuple[int, ...]], seed: int) -> dict[str, torch.Tensor]:
    """Weights on trained-like scales: norms near 1, A_log near log(1..16) (S4D init), dt biases giving
    delta in about [0.001, 0.1], matrices ~ 1/sqrt(fan_in); the backward mixer's in/out projections tied to the
    forward ones (bidirectional_weight_tie)."""
    g = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    for key, shape in shapes.items():
        if key.endswith("layernorm.weight") or "layernorm_" in key:
            t = 1 + 0.1 * torch.randn(shape, generator=g)
        elif key.endswith("A_log"):
            t = torch.log(torch.arange(1, STATE + 1).float()).expand(shape) + 0.1 * torch.randn(shape, generator=g)
        elif key.endswith(".D"):
            t = 1 + 0.1 * torch.randn(shape, generator=g)
        elif key.endswith("dt_proj.bias"):
            dt = torch.exp(torch.rand(shape, generator=g) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
            t = dt + torch.log(-torch.expm1(-dt))
        elif key == "embed_tokens.weight":
            t = torch.randn(shape, generator=g)
        elif len(shape) == 1:
            t = 0.1 * torch.randn(shape, generator=g)
        else:
            t = torch.randn(shape, generator=g) / math.sqrt(shape[-1])
        out[key] = t.contiguous()
    for key in list(out):
        if ".mamba_rev.in_proj." in key or ".mamba_rev.out_proj." in key:
            out[key] = out[key.replace("mamba_rev", "mamba_fwd")]
    return out


class LightningHparams:
    """Stands in for the OmegaConf config in a Lightning checkpoint's metadata: its code must never run."""

    def __setstate__(self, state):
        raise AssertionError("checkpoint metadata code ran while loading")


class LightningLoops(dict):
    """A dict subclass in the metadata: torch's weights-only unpickler cannot fill one."""


def write_checkpoint(
    folder: pathlib.Path, model: str, backbone: dict[str, torch.Tensor], cfg: dict, *, bare: bool = False, **meta
) -> None:
    """`<stem>.ckpt` (Lightning layout: state_dict of model.model.*, the LM head, torchmetrics buffers, and
    non-tensor metadata, with `meta` added; `bare`: the state dict alone) and `<stem>_model_config.json`
    ({"config": ...}) in `folder`."""
    stem = STEMS[model]
    folder.mkdir(parents=True, exist_ok=True)
    state = collections.OrderedDict((f"model.model.{k}", v) for k, v in backbone.items())
    state["model.lm_head.weight"] = torch.randn(VOCAB, H)
    for split in ("train", "val", "test"):
        state[f"{split}_torchmetrics.perplexity.count"] = torch.tensor(0.0)
    ckpt = {
        "epoch": 3,
        "global_step": 10000,
        "pytorch-lightning_version": "1.8.6",
        "state_dict": state,
        "hyper_parameters": LightningHparams(),
        "hparams_type": LightningHparams,
        "callbacks": {"ModelCheckpoint": {"dirpath": pathlib.PurePosixPath("/checkpoints")}},
        **meta,
    }
    torch.save(state if bare else ckpt, folder / f"{stem}.ckpt")
    (folder / f"{stem}_model_config.json").write_text(json.dumps({"config": cfg}))


def registry_settings(model: str, folder: pathlib.Path, repo: pathlib.Path, **extraction) -> dict:
    """The committed registry entry of `model` with its source pointed at `folder` (kind local) and `extraction`
    options set over its own."""
    entry = copy.deepcopy(load_registry(repo / "config" / "models.yaml").raw["models"][model])
    entry["source"] = {"kind": "local", "path": str(folder)}
    entry["extraction"].update(extraction)
    return extraction_settings({"models": {model: entry}}, model, {})


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    """{model: (folder, backbone tensors)} for both released layouts."""
    out = {}
    for seed, (model, attn) in enumerate((("JanusDNA_72_w", True), ("JanusDNA_72_wo", False))):
        folder = tmp_path_factory.mktemp(model)
        backbone = random_weights(released_shapes(attn), seed)
        write_checkpoint(folder, model, backbone, real_config(attn))
        out[model] = (folder, backbone)
    return out


@pytest.fixture(scope="module")
def encoders(standins, repo):
    return {
        model: adapters.build(registry_settings(model, folder, repo), device="cpu", batch_size=4, progress=False)
        for model, (folder, _) in standins.items()
    }


# ---- the plain forward pass ----------------------------------------------------------------------------------


def rms(x, w):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def swiglu(x, sd, p):
    return (F.silu(x @ sd[p + "gate_proj.weight"].T) * (x @ sd[p + "up_proj.weight"].T)) @ sd[p + "down_proj.weight"].T


def ffn(x, sd, p):
    if p + "router.weight" not in sd:
        return swiglu(x, sd, p)
    probs = torch.softmax(x @ sd[p + "router.weight"].T, dim=-1)
    top, idx = probs.topk(2, dim=-1)
    weights = torch.zeros_like(probs).scatter(-1, idx, top)  # the two chosen experts, weights as routed
    every = torch.stack([swiglu(x, sd, f"{p}experts.{e}.") for e in range(EXPERTS)], dim=-2)
    return (weights.unsqueeze(-1) * every).sum(-2)


def mamba(x, sd, p):
    batch, length, _ = x.shape
    xz = x @ sd[p + "in_proj.weight"].T
    u, z = xz[..., :INNER], xz[..., INNER:]
    w, b = sd[p + "conv1d.weight"][:, 0, :], sd[p + "conv1d.bias"]
    conv = torch.stack(
        [
            b + sum(w[:, k] * u[:, t - (KERNEL - 1) + k] for k in range(KERNEL) if t - (KERNEL - 1) + k >= 0)
            for t in range(length)
        ],
        dim=1,
    )
    u = F.silu(conv)
    dbc = u @ sd[p + "x_proj.weight"].T
    dt = rms(dbc[..., :RANK], sd[p + "dt_layernorm.weight"])
    bm = rms(dbc[..., RANK : RANK + STATE], sd[p + "b_layernorm.weight"])
    cm = rms(dbc[..., RANK + STATE :], sd[p + "c_layernorm.weight"])
    delta = F.softplus(dt @ sd[p + "dt_proj.weight"].T + sd[p + "dt_proj.bias"])
    a = -torch.exp(sd[p + "A_log"])
    h = torch.zeros(batch, INNER, STATE)
    ys = []
    for t in range(length):
        h = torch.exp(delta[:, t, :, None] * a) * h + delta[:, t, :, None] * bm[:, t, None, :] * u[:, t, :, None]
        ys.append((h * cm[:, t, None, :]).sum(-1) + sd[p + "D"] * u[:, t])
    y = torch.stack(ys, dim=1) * F.silu(z)
    return y @ sd[p + "out_proj.weight"].T


def attention(x, sd, p, allowed, out_key, pad_to=None):
    batch, length, _ = x.shape
    hd = H // HEADS

    def heads(key):
        t = (x @ sd[p + key].T).view(batch, length, HEADS, hd).transpose(1, 2)
        return F.pad(t, (0, pad_to - hd)) if pad_to else t  # FlexAttention's zero-padded heads

    q, k, v = heads("q_proj.weight"), heads("k_proj.weight"), heads("v_proj.weight")
    score = (q @ k.transpose(2, 3)) / math.sqrt(q.shape[-1])
    score = score.masked_fill(~allowed, float("-inf"))
    out = (torch.softmax(score, dim=-1) @ v)[..., :hd]
    return out.transpose(1, 2).reshape(batch, length, H) @ sd[p + out_key].T


def janus_allowed(length):
    """Written in sequence positions: forward i sees forward <= i and backward >= i+2; backward i sees
    forward <= i-2 and backward >= i (rows and columns: [forward 0..L-1, backward 0..L-1])."""
    m = torch.zeros(2 * length, 2 * length, dtype=torch.bool)
    for qi in range(2 * length):
        for ki in range(2 * length):
            i, j = qi % length, ki % length
            if qi < length:
                m[qi, ki] = j <= i if ki < length else j >= i + 2
            else:
                m[qi, ki] = j <= i - 2 if ki < length else j >= i
    return m


def plain_forward(sd, ids, with_attention, final_mlp=False):
    """(batch, L, H) final hidden states of JanusDNAModel.forward, step by step."""
    x = sd["embed_tokens.weight"][ids]
    streams = {"fwd": x, "bwd": x.flip(1)}
    length = ids.shape[1]
    for i in range(8):
        for side, mixer in (("fwd", "mamba_fwd"), ("bwd", "mamba_rev")):
            s = streams[side]
            if with_attention and i == 4:
                p = f"layers.{i}.attn."
                causal = torch.ones(length, length, dtype=torch.bool).tril()
                s = s + attention(
                    rms(s, sd[f"{p}input_layernorm_{side}.weight"]),
                    sd,
                    f"{p}self_attn_{side}.",
                    causal,
                    "o_proj.weight",
                )
            else:
                p = f"layers.{i}.mamba_module."
                s = s + mamba(rms(s, sd[f"{p}input_layernorm_{side}.weight"]), sd, f"{p}{mixer}.")
            s = s + ffn(rms(s, sd[f"{p}pre_ff_layernorm_{side}.weight"]), sd, f"{p}feed_forward_{side}.")
            streams[side] = s
    h = torch.cat([streams["fwd"], streams["bwd"].flip(1)], dim=1)
    f = "final_attention."
    h = h + attention(
        rms(h, sd[f + "input_layernorm.weight"]),
        sd,
        f + "self_attn.",
        janus_allowed(length),
        "o_projs.0.weight",
        pad_to=32,
    )
    h = h + swiglu(rms(h, sd[f + "pre_ff_layernorm.weight"]), sd, f + "feed_forward.")
    fused = []
    for pos in range(length):  # final_fusion_repos_formasked
        if pos == 0:
            fused.append(h[:, length + 1])
        elif pos == length - 1:
            fused.append(h[:, length - 2])
        else:
            fused.append(h[:, pos - 1] + h[:, length + pos + 1])
    n = rms(torch.stack(fused, dim=1), sd["final_layernorm.weight"])
    if final_mlp:
        m = F.silu(
            F.silu(n @ sd["final_mlp.0.weight"].T + sd["final_mlp.0.bias"]) @ sd["final_mlp.2.weight"].T
            + sd["final_mlp.2.bias"]
        )
        return n + m
    return n + n  # the released checkpoints' identity final MLP: twice the final RMSNorm


def ids_of(seq):
    return torch.tensor([[_TOKEN_IDS.get(c, 6) for c in seq.upper()]])


SEQS = ["ACGTTGCAGGATCCATTGCAAGCTTACGNNACGT", "gattacaGATTACAttgca", "ACGTACGTAC" * 4 + "R"]


# ---- tests ----------------------------------------------------------------------------------------------------


def test_selective_scan_matches_a_direct_recurrence():
    g = torch.Generator().manual_seed(1)
    batch, d, n, length = 2, 5, 3, 11
    u, z = torch.randn(batch, d, length, generator=g), torch.randn(batch, d, length, generator=g)
    delta = F.softplus(torch.randn(batch, d, length, generator=g))
    a = -torch.rand(d, n, generator=g) * 4
    b, c = torch.randn(batch, n, length, generator=g), torch.randn(batch, n, length, generator=g)
    dd = torch.randn(d, generator=g)
    want = torch.zeros(batch, d, length)
    for bi in range(batch):
        for ch in range(d):
            h = [0.0] * n
            for t in range(length):
                for s in range(n):
                    h[s] = math.exp(float(delta[bi, ch, t] * a[ch, s])) * h[s] + float(
                        delta[bi, ch, t] * b[bi, s, t] * u[bi, ch, t]
                    )
                y = sum(float(c[bi, s, t]) * h[s] for s in range(n)) + float(dd[ch] * u[bi, ch, t])
                want[bi, ch, t] = y * float(F.silu(z[bi, ch, t]))
    for block in (128, 4, 1):  # one block, blocks that split the sequence unevenly, single steps
        got = selective_scan(u, delta, a, b, c, dd, z, block=block)
        assert torch.allclose(got, want, atol=1e-5, rtol=1e-5), block


@pytest.mark.parametrize("model", ["JanusDNA_72_w", "JanusDNA_72_wo"])
def test_vectors_equal_the_plain_forward_pass(model, standins, encoders):
    _, sd = standins[model]
    res = encoders[model].embed(SEQS, desc=model)
    assert res.embeddings.shape == (len(SEQS), H)
    with torch.no_grad():
        want = np.stack([plain_forward(sd, ids_of(s), model.endswith("_w"))[0].mean(0).numpy() for s in SEQS])
    np.testing.assert_allclose(res.embeddings, want, atol=1e-5, rtol=0)
    assert list(res.n_tokens) == [len(s) for s in SEQS]
    assert res.counters.unknown_tokens == 1  # the R


def test_released_layouts_w_and_wo(standins, encoders):
    w, wo = encoders["JanusDNA_72_w"], encoders["JanusDNA_72_wo"]
    assert w.config["layer_types"][4] == "attention" and w.config["layer_types"].count("attention") == 1
    assert "attention" not in wo.config["layer_types"]
    assert w.config["layer_experts"] == wo.config["layer_experts"] == [1, 16] * 4
    assert w.config["final_mlp"].startswith("identity")
    # the Lightning files' entry counts: backbone + LM head (+ 3 torchmetrics entries)
    assert len(standins["JanusDNA_72_w"][1]) + 1 == 636 and len(standins["JanusDNA_72_wo"][1]) + 1 == 652
    assert w.identity()["layer_types"] != wo.identity()["layer_types"]


def test_a_config_that_does_not_fit_the_checkpoint_is_refused(standins, tmp_path, repo):
    # the 72-w checkpoint with the 72-wo config: layer 4 built as Mamba, its attention tensors left over
    folder = tmp_path / "mixed"
    write_checkpoint(folder, "JanusDNA_72_w", standins["JanusDNA_72_w"][1], real_config(False))
    with pytest.raises(WeightsNotLoadedError, match=r"JanusDNA_72_w.*72_with_midattn\.ckpt lacks"):
        adapters.build(registry_settings("JanusDNA_72_w", folder, repo), device="cpu", progress=False)
    extra = {**standins["JanusDNA_72_wo"][1], "layers.0.mamba_module.extra.weight": torch.zeros(1)}
    write_checkpoint(tmp_path / "extra", "JanusDNA_72_wo", extra, real_config(False))
    with pytest.raises(ModelLoadError, match="tensors the JanusDNA config does not imply"):
        adapters.build(registry_settings("JanusDNA_72_wo", tmp_path / "extra", repo), device="cpu", progress=False)


def test_missing_file_names_the_model_the_file_and_where_to_get_it(standins, tmp_path, repo):
    folder = tmp_path / "no-ckpt"
    folder.mkdir()
    (folder / "72_without_midattn_model_config.json").write_text(json.dumps({"config": real_config(False)}))
    with pytest.raises(ModelLoadError) as err:
        adapters.build(registry_settings("JanusDNA_72_wo", folder, repo), device="cpu", progress=False)
    msg = str(err.value)
    assert "JanusDNA_72_wo" in msg and "72_without_midattn.ckpt" in msg and "10.7910/DVN/HDT0RN" in msg


def test_no_padding_ever_reaches_a_row(encoders, standins):
    enc = encoders["JanusDNA_72_w"]
    assert enc.bucket_equal_lengths and not enc.uses_attention_mask
    short, long = "ACGTTGCAGGATCCATTGCA", "GATTACAGATTACA" * 5
    alone = enc.embed([short]).embeddings
    batched = enc.embed([long, short, "TTGCA" * 4, long[:33]]).embeddings  # lengths 70, 20, 20, 33
    np.testing.assert_allclose(batched[1], alone[0], atol=1e-6, rtol=0)
    # what the paper's reference did: pad to a fixed width, average the real positions. Pads leak in through the
    # backward stream (it reads them first) and the final attention, so the vector moves.
    ids = ids_of(short)
    padded = torch.cat([ids, torch.full((1, 64 - ids.shape[1]), 4)], dim=1)
    with torch.no_grad():
        ref = enc.model(padded)[0, : ids.shape[1]].mean(0).numpy()
    assert np.abs(ref - alone[0]).max() > 1e-3


def test_checkpoint_metadata_is_read_inert(standins):
    # LightningHparams.__setstate__ raises: loading succeeded (fixture), so no metadata code ran
    from geneb.encoders.families.janusdna import _read_checkpoint as read_checkpoint

    folder, sd = standins["JanusDNA_72_w"]
    state = read_checkpoint(folder / "72_with_midattn.ckpt", model="JanusDNA_72_w")
    assert torch.equal(state["model.model.embed_tokens.weight"], sd["embed_tokens.weight"])


def test_a_checkpoint_with_its_final_mlp_uses_it(tmp_path, repo):
    sd = random_weights(released_shapes(False, final_mlp=True), 7)
    write_checkpoint(tmp_path, "JanusDNA_72_wo", sd, real_config(False))
    enc = adapters.build(registry_settings("JanusDNA_72_wo", tmp_path, repo), device="cpu", progress=False)
    assert enc.config["final_mlp"] == "checkpoint"
    seq = SEQS[0]
    with torch.no_grad():
        want = plain_forward(sd, ids_of(seq), False, final_mlp=True)[0].mean(0).numpy()
    np.testing.assert_allclose(enc.embed([seq]).embeddings[0], want, atol=1e-5, rtol=0)


def test_rows_shorter_than_three_tokens_are_an_error(encoders):
    with pytest.raises(ModelForwardError, match="at least 3 tokens"):
        encoders["JanusDNA_72_wo"].embed(["AC"])


def test_the_default_tap_is_twice_the_final_rmsnorm_and_rows_are_cut_at_1024(standins, encoders, repo):
    folder, _ = standins["JanusDNA_72_wo"]
    normed = adapters.build(
        registry_settings("JanusDNA_72_wo", folder, repo, layer="final_layernorm"), device="cpu", progress=False
    )
    assert normed.identity()["layer_resolved"] == "module:final_layernorm"
    default = encoders["JanusDNA_72_wo"].embed(SEQS[:1]).embeddings
    np.testing.assert_allclose(default, 2 * normed.embed(SEQS[:1]).embeddings, atol=1e-6, rtol=0)
    res = encoders["JanusDNA_72_wo"].embed(["ACGT" * 260])  # 1,040 nt: the reference cap is 1,024 tokens
    assert res.truncated[0] and res.n_tokens[0] == 1024 and res.n_chunks[0] == 1
    with pytest.raises(LayerNotExposedError):
        adapters.build(registry_settings("JanusDNA_72_wo", folder, repo, layer=3), device="cpu", progress=False).embed(
            SEQS[:1]
        )


def test_metadata_torch_cannot_read_weights_only_is_refused_with_the_fix(standins, tmp_path, repo):
    from geneb.encoders.families.janusdna import _read_checkpoint as read_checkpoint

    sd = standins["JanusDNA_72_wo"][1]
    write_checkpoint(tmp_path / "dict", "JanusDNA_72_wo", sd, real_config(False), loops=LightningLoops(fit=1))
    with pytest.raises(ModelLoadError, match=r"JanusDNA_72_wo.*weights-only.*save its state dict alone"):
        read_checkpoint(tmp_path / "dict" / "72_without_midattn.ckpt", model="JanusDNA_72_wo")
    write_checkpoint(tmp_path / "bare", "JanusDNA_72_wo", sd, real_config(False), bare=True)
    state = read_checkpoint(tmp_path / "bare" / "72_without_midattn.ckpt", model="JanusDNA_72_wo")
    assert torch.equal(state["model.model.embed_tokens.weight"], sd["embed_tokens.weight"])


def test_the_external_entry_with_model_weights_gives_the_local_vectors(standins, encoders, repo):
    folder, _ = standins["JanusDNA_72_w"]
    registry = load_registry(repo / "config" / "models.yaml", weights={"JanusDNA_72_w": str(folder)})
    assert registry.spec("JanusDNA_72_w").source.kind == "external"
    enc = adapters.build(extraction_settings(registry, "JanusDNA_72_w", {}), device="cpu", progress=False)
    np.testing.assert_array_equal(enc.embed(SEQS).embeddings, encoders["JanusDNA_72_w"].embed(SEQS).embeddings)
