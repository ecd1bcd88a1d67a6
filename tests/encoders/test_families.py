"""The adapters on real files: tiny checkpoints of each family (chunking, pooling, layers, loading errors),
the real Mistral-DNA checkpoints and the real DNABERT-2 / GENA-LM tokenizers, and the Enformer adapter on
a stand-in package that follows enformer-pytorch's documented API."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import shutil
import sys
import types

import numpy as np
import pytest
import torch

from extraction_support import random_dna, spec
from geneb.core.errors import MissingPackageError, UnknownTokenError, WeightsNotLoadedError
from geneb.encoders.families.enformer import _N_BINS, _WIDTH, _window_and_bins
from geneb.encoders.loading import check_loading_info
from geneb.extract.step import build_encoder
from geneb.registry.load import extraction_settings, load_registry


def test_chunk_mean_is_the_mean_over_every_pooled_token(zoo):
    """A sequence longer than the cap: chunk_mean = token-weighted mean of the chunks' means."""
    enc = zoo.encoder("bert", max_tokens=24, batch_size=3)
    seq = random_dna(400, 1)
    chunks, n_chunks, *_ = enc.make_chunks([seq], [0])
    assert n_chunks[0] == len(chunks) >= 3
    assert all(len(c.ids) <= 24 and c.ids[0] == enc.prefix[0] and c.ids[-1] == enc.suffix[-1] for c in chunks)
    parts = [enc._forward_batch([c], [0]) for c in chunks]
    manual = sum(v[0].double() * n[0] for v, n in parts) / sum(int(n[0]) for _, n in parts)
    res = enc.embed([seq])
    np.testing.assert_allclose(res.embeddings[0], manual.numpy(), atol=1e-6)
    assert res.n_tokens[0] == len(enc._tokenize([seq])[0])  # every body token pooled once, specials excluded


def test_max_and_cls_pooling(zoo):
    seq = random_dna(400, 2)
    enc = zoo.encoder("bert", max_tokens=24, pooling="max")
    parts = [enc._forward_batch([c], [0])[0][0] for c in enc.make_chunks([seq], [0])[0]]
    np.testing.assert_allclose(enc.embed([seq]).embeddings[0], torch.stack(parts).max(0).values.numpy(), atol=1e-7)
    with pytest.raises(ValueError, match="undefined across"):
        zoo.encoder("bert", max_tokens=24, pooling="cls", exclude_special_tokens=False).embed([seq])
    with pytest.raises(ValueError, match="reads the CLS token"):
        zoo.encoder("bert", max_tokens=24, pooling="cls", long_policy="truncate")
    cls = zoo.encoder("bert", max_tokens=24, pooling="cls", long_policy="truncate", exclude_special_tokens=False)
    chunk = cls.make_chunks([seq], [0])[0][0]
    ids, attn, _ = cls.batch_tensors([chunk])
    np.testing.assert_allclose(cls.embed([seq]).embeddings[0], cls.hidden_states(ids, attn)[0, 0].numpy(), atol=1e-6)


def test_layer_by_index_and_by_module_name(zoo):
    """hidden_states[1] of a Llama is the output of its first decoder layer: the hook on `layers.0` agrees."""
    seqs = [random_dna(50, 4), random_dna(90, 5)]
    by_index = zoo.encoder("llama", layer=1).embed(seqs).embeddings
    by_name = zoo.encoder("llama", layer="layers.0").embed(seqs).embeddings
    np.testing.assert_allclose(by_index, by_name, atol=1e-6)
    assert not np.allclose(by_index, zoo.encoder("llama").embed(seqs).embeddings)
    with pytest.raises(ValueError, match="no module named"):
        zoo.encoder("llama", layer="layers.9")


def test_missing_checkpoint_tensors_are_an_error(zoo, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "bert_missing"
    shutil.copytree(zoo.folder("bert"), folder)
    tensors = load_file(folder / "model.safetensors")
    victim = next(k for k in tensors if "attention" in k)
    del tensors[victim]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    s = extraction_settings({"models": {"holey": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "holey", {})
    with pytest.raises(WeightsNotLoadedError, match="model holey: 1 tensors"):
        build_encoder(s, progress=False)


def test_unused_checkpoint_tensors_outside_the_head_allow_list_are_an_error(zoo, tmp_path):
    """A config declaring fewer layers than the checkpoint holds: the trained block 1 would be dropped silently
    ; an allowed head (Mistral-DNA's `score.weight`, a masked-LM head, saved buffers) is not an error."""
    folder = tmp_path / "bert_one_layer"
    shutil.copytree(zoo.folder("bert"), folder)
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 1
    (folder / "config.json").write_text(json.dumps(config))
    s = extraction_settings({"models": {"short": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "short", {})
    with pytest.raises(
        WeightsNotLoadedError,
        match=r"model short: 16 checkpoint tensors are not used by the BertModel.*encoder\.layer\.1\.",
    ):
        build_encoder(s, progress=False)
    heads = ["score.weight", "lm_head.dense.weight", "cls.predictions.bias", "embeddings.position_ids"]
    assert check_loading_info([], heads, model="m", model_class="C") == sorted(heads)
    with pytest.raises(WeightsNotLoadedError, match=r"1 checkpoint tensors .*\['decoder\.weight'\]"):
        check_loading_info([], [*heads, "decoder.weight"], model="m", model_class="C")
    assert zoo.encoder("mistral-dna").embed(["ACGTACGTAC"]).embeddings.shape == (1, 64)  # real score.weight head


def test_missing_optional_package_for_caduceus(zoo):
    s = extraction_settings({"models": {"cad": spec(zoo.folder("bert"), "caduceus", {"max_tokens": 64})}}, "cad", {})
    with pytest.raises(MissingPackageError, match="model cad needs the optional package 'mamba-ssm'"):
        build_encoder(s, progress=False)


def test_unsupported_family_is_refused_with_its_reason(repo):
    registry = load_registry(repo / "config" / "models.yaml")
    s = {**extraction_settings(registry, "kmer-3", {}), "family": "unsupported"}
    with pytest.raises(ValueError, match="has no GENEB adapter"):
        build_encoder(s)


# ---- real files -------------------------------------------------------------------------------------------------


def test_real_mistral_dna_checkpoints(repo, shared):
    registry = load_registry(repo / "config" / "models.yaml")
    seqs = [random_dna(n, n) for n in (70, 101, 300, 1500)]
    out = {}
    for name in ("mistral-dna-1m-ft-prom", "mistral-dna-1m-ft-tf0", "mistral-dna-1m-ft-tf1"):
        enc = build_encoder(extraction_settings(registry, name, {}), batch_size=3, progress=False)
        ident = enc.identity()
        folder = shared / "models" / registry.models[name].source.path.split("/")[-1]
        assert (
            ident["weights_sha256"]
            == hashlib.sha256(b"model.safetensors" + (folder / "model.safetensors").read_bytes()).hexdigest()
        )
        assert (
            ident["model_class"] == "MixtralModel" and ident["special_prefix"] == [1] and ident["special_suffix"] == [2]
        )
        res = enc.embed(seqs)
        assert res.embeddings.shape == (4, 64) and res.n_chunks[-1] >= 2  # 1500 nt > 256 BPE tokens
        out[name] = res.embeddings
    assert not np.allclose(out["mistral-dna-1m-ft-prom"], out["mistral-dna-1m-ft-tf0"])


def test_real_bpe_tokenizers_affixes_and_chunks(zoo, shared):
    from transformers import AutoTokenizer

    from geneb.encoders.families.hf import _special_affixes as special_affixes

    for name in ("dnabert-2-117m", "gena-lm-bigbird-base-t2t"):
        tok = AutoTokenizer.from_pretrained(shared / "models" / "tokenizers" / name)
        assert special_affixes(tok) == ([tok.cls_token_id], [tok.sep_token_id])
    enc = zoo.encoder("bigbird", max_tokens=128)
    chunks, n_chunks, *_ = enc.make_chunks([random_dna(5000, 6)], [0])
    assert n_chunks[0] == len(chunks) > 1 and max(len(c.ids) for c in chunks) <= 128
    bodies = [len(c.ids) - 2 for c in chunks]  # [CLS] ... [SEP]; balanced: sizes differ by at most one token
    assert max(bodies) - min(bodies) <= 1 and sum(bodies) == len(enc._tokenize([random_dna(5000, 6)])[0])


# ---- Enformer on a stand-in package ------------------------------------------------------------------------------


def test_window_and_bins():
    start, mask = _window_and_bins(200)
    assert start == (196_608 - 200) // 2 and 1 <= mask.sum() <= 3
    assert _window_and_bins(114_688)[1].all()  # the central 896 x 128 bp
    assert _window_and_bins(1)[1].sum() == 1
    with pytest.raises(ValueError):
        _window_and_bins(196_609)


def test_enformer_adapter_pools_only_the_sequence_bins(monkeypatch):
    """Stand-in model: each bin's embedding is its fraction of non-N bases (x 1 in every channel). The pooled
    value for a sequence of pure ACGT is then exactly 1: no N padding was averaged in."""

    settings = _enformer_standin(monkeypatch, lambda bins: (bins < 4).float().mean(-1))
    enc = build_encoder(settings, batch_size=2, progress=False)
    res = enc.embed([random_dna(1280, 7), random_dna(300, 8)])
    assert res.embeddings.shape == (2, _WIDTH)
    np.testing.assert_allclose(res.embeddings[0], 1.0, atol=1e-6)  # 1280 bp centred = exactly 10 full bins
    assert res.n_tokens.tolist() == [10, int(_window_and_bins(300)[1].sum())]
    assert (res.embeddings[1] < 1).all() and (res.embeddings[1] > 0.5).all()  # edge bins are part sequence, part N


def _enformer_standin(monkeypatch, per_bin):
    """An Enformer encoder on a stand-in enformer_pytorch whose embedding of each of the 896 central bins is
    `per_bin(x_bins)` (x_bins: (B, 896, 128) one-hot indices, A C G T = 0..3, N = 4) in every channel."""

    class StandIn(torch.nn.Module):
        def forward(self, x, return_embeddings=False):
            assert x.shape[1] == 196_608 and return_embeddings
            bins = x[:, (196_608 - _N_BINS * 128) // 2 :][:, : _N_BINS * 128].reshape(x.shape[0], _N_BINS, 128)
            return {"human": None}, per_bin(bins).float().unsqueeze(-1).expand(-1, -1, _WIDTH).contiguous()

    module = types.ModuleType("enformer_pytorch")
    module.from_pretrained = lambda where, **kw: StandIn()
    module.__spec__ = importlib.machinery.ModuleSpec("enformer_pytorch", None)
    monkeypatch.setitem(sys.modules, "enformer_pytorch", module)
    entry = {
        "display": "enf",
        "family": "enformer",
        "source": {"kind": "builtin"},
        "architecture_family": "hybrid",
        "tokenizer_type": "one-hot",
        "params": 0,
        "pretraining_domain": "human",
        "license": "x",
        "extraction": {"max_tokens": None},
    }
    return extraction_settings({"models": {"enf": entry}}, "enf", {})


def test_enformer_tiles_pool_every_base_once():
    """A 393,216-bp row (two windows) is laid in tiles of the bins' 114,688-bp span: counting, for every base, the
    pooled bins (mask True) whose 128 bp hold it gives exactly 1 everywhere, and no pooled bin lies wholly outside
    the row. A row up to 114,688 bp gets one window with the row centred (window_and_bins)."""
    from geneb.encoders.families.enformer import _enformer_tiles as enformer_tiles

    window, span, first_bin = 196_608, _N_BINS * 128, (196_608 - _N_BINS * 128) // 2
    length = 2 * window
    cover = np.zeros(length, np.int32)
    tiles = enformer_tiles(length)
    for ws, mask in tiles:
        assert mask.shape == (_N_BINS,)
        for j in np.flatnonzero(mask):
            lo = ws + first_bin + 128 * j  # sequence position of the bin's first base
            assert lo < length and lo + 128 > 0
            cover[max(lo, 0) : min(lo + 128, length)] += 1
    assert cover.min() == 1 and cover.max() == 1
    assert len(tiles) == -(-length // span) == 4
    for n in (1, 200, 1280, 50_001, span):
        (ws, mask), *rest = enformer_tiles(n)
        start, bins = _window_and_bins(n)
        assert not rest and ws == -start == -((window - n) // 2) and (mask == bins).all()
    assert len(enformer_tiles(span + 1)) == 2


def test_enformer_long_row_pools_its_ends(monkeypatch):
    """Stand-in: each bin's embedding is its fraction of G. A 393,216-bp row whose G sits only in its first and
    last 40 kb (outside the central 114,688 bp of either window-length half) gets a G signal of exactly
    80,000 / 393,216 with 3,072 pooled bins in 4 tiles; an all-A row of that length gets 0."""
    settings = _enformer_standin(monkeypatch, lambda bins: (bins == 2).float().mean(-1))
    enc = build_encoder(settings, batch_size=2, progress=False)
    length = 2 * 196_608
    edges = "G" * 40_000 + "A" * (length - 80_000) + "G" * 40_000
    res = enc.embed([edges, "A" * length])
    np.testing.assert_allclose(res.embeddings[0], 80_000 / length, rtol=1e-5)
    assert (res.embeddings[1] == 0).all()
    assert res.n_chunks.tolist() == [4, 4] and res.n_tokens.tolist() == [length // 128] * 2


def test_enformer_counts_letters_outside_acgtn(monkeypatch, make_task, tmp_path):
    """IUPAC codes reach Enformer as N (all-zero one-hot), as a tokenizer's letters outside its vocabulary reach
    a model as UNK: the written split counts them in n_unknown_tokens (train: 150 R/Y/K/M/S/W in two rows;
    test: none, N being one of Enformer's letters)."""
    import h5py

    from geneb.extract.step import extract_task

    settings = _enformer_standin(monkeypatch, lambda bins: (bins < 4).float().mean(-1))
    iupac = ("ACGTRYKMSWACGT" * 20)[:256]
    n_iupac = sum(iupac.count(c) for c in "RYKMSW")
    assert n_iupac == 108
    task = make_task([iupac, random_dna(256, 1), iupac[:100]], [random_dna(300, 2), "ACGTN" * 20])
    extract_task(settings, task, tmp_path / "enf.h5", batch_size=2, progress=False)
    with h5py.File(tmp_path / "enf.h5", "r") as f:
        assert f["train"].attrs["n_unknown_tokens"] == n_iupac + 42 == 150
        assert f["test"].attrs["n_unknown_tokens"] == 0
        emb = f["train"]["embeddings"][:]
    assert emb[0, 0] < emb[1, 0] == 1.0  # the IUPAC letters entered as N
    strict = {**settings, "extraction": {**settings["extraction"], "unk_policy": "error"}}
    with pytest.raises(
        UnknownTokenError, match=r"split train: .*150 letters outside A/C/G/T/N in 2 rows \(rows 0, 2\)"
    ):
        extract_task(strict, task, tmp_path / "strict.h5", batch_size=2, progress=False)


def test_random_esm_takes_the_position_embeddings_of_its_config(tmp_path):
    """NT-v2 uses rotary positions: a random-init config may name them; absolute stays the default, and the
    vocabulary stays the tokenizer's."""
    import json

    from geneb.encoders.families.random_init import _build_random_esm as build_random_esm

    small = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    config = {**small, "max_position_embeddings": 64}
    rotary = build_random_esm({"config": {**config, "position_embedding_type": "rotary"}}, tmp_path / "r")
    absolute = build_random_esm({"config": config}, tmp_path / "a")
    assert json.loads((rotary / "config.json").read_text())["position_embedding_type"] == "rotary"
    assert json.loads((absolute / "config.json").read_text())["position_embedding_type"] == "absolute"
    with pytest.raises(TypeError):
        build_random_esm({"config": {**config, "vocab_size": 10}}, tmp_path / "v")
