"""The dnagpt adapter (src/geneb/encoders/families/dnagpt.py) on stand-in checkpoints in the authors' file format.

No real DNAGPT weights are here (they are on the authors' Google Drive): each stand-in is a state dict with the
released checkpoints' key names and layout, written out below from the authors' code
(TencentAILabHealthcare/DNAGPT@9b6c0931, dna_gpt/model/gpt.py and dna_gpt/model/dna_gpt.py), with the real
vocabulary and position table of its checkpoint name and only depth and width shrunk (`SMALL`, through the
entry's `load.config_overrides`), saved with torch.save as `<name>.pth` and loaded through the registry path
(`extraction_settings` of the committed entry with a local source, then `adapters.build`). GENEB's vectors are
checked against a plain forward pass written out here from the same tensors (explicit masked softmax, the tanh
GELU formula), pooled by hand.
"""

from __future__ import annotations

import argparse
import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from extraction_support import random_dna
from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.encoders.families.dnagpt import _ARCHITECTURES, KmerTokenizer, _vocabulary
from geneb.registry.families import build
from geneb.registry.load import extraction_settings

#: depth and width of the stand-ins (the heads keep head width 8); vocabulary and positions are the real ones
SMALL = {"num_layers": 2, "num_heads": 4, "embedding_dim": 32}
#: the reserved tokens before the k-mers (test.py get_model: 10 digits, 8 operators, M B, P, 9 + 4 letters)
N_RESERVED = 34
BASES = "NAGCT"  # dna_gpt/tokenizer.py KmerTokenizer.bases, in vocabulary order


def layout(name: str, small: bool = True) -> dict[str, tuple[int, ...]]:
    """The released checkpoint's tensors {key: shape} as the authors' classes name them (bias=False everywhere;
    DNAGPT(GPT) with include_head=False plus number_embedding, mlm_head, num_regression)."""
    arch = _ARCHITECTURES[name]
    d = SMALL["embedding_dim"] if small else arch.embedding_dim
    n_layers = SMALL["num_layers"] if small else arch.num_layers
    vocab = 15_659 if name == "dna_gpt0.1b_h" else 19_564
    out = {"transformer.wte.weight": (vocab, d), "transformer.wpe.weight": (arch.max_len, d)}
    for i in range(n_layers):
        p = f"transformer.h.{i}."
        out |= {
            p + "attn.c_attn.weight": (3 * d, d),
            p + "attn.c_proj.weight": (d, d),
            p + "mlp.c_fc.weight": (4 * d, d),
            p + "mlp.c_proj.weight": (d, 4 * d),
            p + "ln_1.weight": (d,),
            p + "ln_2.weight": (d,),
        }
    out["transformer.ln_f.weight"] = (d,)
    for head, (first_in, last_out) in {
        "number_embedding": (1, d),
        "mlm_head": (d, vocab),
        "num_regression": (d, 1),
    }.items():
        out |= {f"{head}.0.weight": (d, first_in), f"{head}.2.weight": (d,), f"{head}.3.weight": (last_out, d)}
    return out


def standin(name: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random tensors of `layout(name)` (LayerNorm weights around 1, the rest small), seeded."""
    g = torch.Generator().manual_seed(seed)
    return {
        k: (1 + 0.1 * torch.randn(s, generator=g)) if len(s) == 1 else 0.2 * torch.randn(s, generator=g)
        for k, s in layout(name).items()
    }


def plain_forward(sd: dict[str, torch.Tensor], ids: list[int]) -> torch.Tensor:
    """(T, d) post-ln_f hidden states of one unpadded row, written out from gpt.py: pre-norm blocks, causal
    attention over q, k, v split from c_attn in that order, tanh GELU, LayerNorm eps 1e-5 without bias."""
    d = sd["transformer.ln_f.weight"].shape[0]
    heads, t = SMALL["num_heads"], len(ids)
    x = sd["transformer.wte.weight"][torch.tensor(ids)] + sd["transformer.wpe.weight"][:t]
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(SMALL["num_layers"]):
        p = f"transformer.h.{i}."
        h = F.layer_norm(x, (d,), sd[p + "ln_1.weight"], None, 1e-5)
        q, k, v = (h @ sd[p + "attn.c_attn.weight"].T).split(d, dim=-1)
        q, k, v = (z.view(t, heads, d // heads).transpose(0, 1) for z in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // heads)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + (att @ v).transpose(0, 1).reshape(t, d) @ sd[p + "attn.c_proj.weight"].T
        h = F.layer_norm(x, (d,), sd[p + "ln_2.weight"], None, 1e-5)
        u = h @ sd[p + "mlp.c_fc.weight"].T
        gelu = 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
        x = x + gelu @ sd[p + "mlp.c_proj.weight"].T
    return F.layer_norm(x, (d,), sd["transformer.ln_f.weight"], None, 1e-5)


def kmer_id(kmer: str, dynamic: bool) -> int:
    """A k-mer's id from the vocabulary rule (reserved tokens, then k-mers by length, each in base-5 order of
    N A G C T), computed without the adapter's code."""
    offset = N_RESERVED + (sum(5**j for j in range(1, len(kmer))) if dynamic else 0)
    return offset + sum(BASES.index(c) * 5 ** (len(kmer) - 1 - i) for i, c in enumerate(kmer))


def hand_ids(seq: str, name: str) -> list[int]:
    """`<R>` (id 21) + the row's non-overlapping 6-mers, the trailing partial 6-mer dropped for 0.1b_h (GENEB's
    length_multiple 6) and kept as its own k-mer for the 1- to 6-mer vocabulary."""
    if name == "dna_gpt0.1b_h":
        seq = seq[: len(seq) - len(seq) % 6]
    return [21] + [kmer_id(seq[i : i + 6], name != "dna_gpt0.1b_h") for i in range(0, len(seq), 6)]


def settings_for(registry, name: str, folder, **extraction):
    """The committed registry entry of `name` with a local source (`folder`) and the stand-in's sizes."""
    entry = copy.deepcopy(registry["models"][name])
    entry["source"] = {"kind": "local", "path": str(folder)}
    entry["load"] = {**entry.get("load", {}), "config_overrides": dict(SMALL)}
    entry["extraction"] = {**entry["extraction"], "embedding_dim": SMALL["embedding_dim"], **extraction}
    return extraction_settings({"models": {name: entry}}, name, {})


def save(folder, name: str, obj) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(obj, folder / f"{name}.pth")


# ---- tokenizer ----------------------------------------------------------------------------------------------


def test_vocabulary_golden_ids():
    """The authors' vocabulary: 34 reserved tokens (<P> = 20 pad, <R> = 21 human), then k-mers over NAGCT."""
    fixed, dynamic = _vocabulary(False), _vocabulary(True)
    assert (len(fixed), len(dynamic)) == (15_659, 19_564)
    assert fixed[:3] == ["<0>", "<1>", "<2>"] and fixed[20] == "<P>" and fixed[21] == "<R>" and fixed[33] == "<Z>"
    assert fixed[34] == "NNNNNN" and dynamic[34:39] == list("NAGCT") and dynamic[39] == "NN"
    assert fixed[5392] == "ACGTAC" and dynamic[9297] == "ACGTAC" and dynamic[53] == "GT"
    for kmer in ("ACGTAC", "TTTTTT", "NACGTN", "GT", "C"):
        assert dynamic.index(kmer) == kmer_id(kmer, True)
        if len(kmer) == 6:
            assert fixed.index(kmer) == kmer_id(kmer, False)


def test_tokenizer_rules_partial_kmer_n_and_unknown_letters():
    """Non-overlapping 6-mers from the first base; N is a base; a piece outside the vocabulary is id 0 (<0>):
    the trailing partial 6-mer under 6-mers only, an IUPAC letter, lowercase."""
    h, m = KmerTokenizer(dynamic_kmer=False), KmerTokenizer(dynamic_kmer=True)
    seq = "ACGTACNNNNNNGT"  # 14 nt: two 6-mers and a 2-base tail
    ids, spans = h.encode(seq)
    assert ids == [5392, kmer_id("NNNNNN", False), 0] and spans == [(0, 6), (6, 12), (12, 14)]
    assert m.encode(seq)[0] == [9297, kmer_id("NNNNNN", True), 53]
    assert h.encode("ACGTAR")[0] == [0] and m.encode("ACGTAR")[0] == [0]  # R: not a base of the vocabulary
    assert h.encode("acgtac")[0] == [0]  # the vocabulary is uppercase (GENEB's model input is)
    assert (h.pad_id, h.unk_id, h.species_id) == (20, 0, 21)
    with pytest.raises(ValueError, match="markup"):
        h.encode("<R>ACGTAC")


# ---- the registry entries -------------------------------------------------------------------------------------


def test_registry_entries_use_the_adapter_with_the_reference_caps(registry):
    h, m = registry["models"]["dna_gpt0.1b_h"], registry["models"]["dna_gpt3b_m"]
    assert h["family"] == m["family"] == "dnagpt"
    assert (h["load"]["package_model_name"], m["load"]["package_model_name"]) == ("dna_gpt0.1b_h", "dna_gpt3b_m")
    assert (h["extraction"]["max_tokens"], m["extraction"]["max_tokens"]) == (4096, 512)
    assert (h["extraction"]["embedding_dim"], m["extraction"]["embedding_dim"]) == (768, 2048)
    # 6-mers only: the trailing partial 6-mer is trimmed; 1- to 6-mers: it is a token of its own
    assert h["extraction"]["length_multiple"] == 6 and "length_multiple" not in m["extraction"]
    assert h["extraction"]["exclude_special_tokens"] is False  # the reference pools <R> with the sequence
    assert "<0>" in h["paper"]["geneb_changes"]


def test_full_size_layout_matches_the_released_checkpoint():
    """dna_gpt0.1b_h at full size: 84 tensors, 113.9M parameters (455.6 MB in float32), as the released file
    (455,736,335 bytes, 84 tensors in a public reproduction's checks) holds; 3b_m: 60 blocks, ~3.2B."""
    h = layout("dna_gpt0.1b_h", small=False)
    n = sum(math.prod(s) for s in h.values())
    assert len(h) == 84 and 0 < 455_736_335 - 4 * n < 200_000
    n3 = sum(math.prod(s) for s in layout("dna_gpt3b_m", small=False).values())
    assert len(layout("dna_gpt3b_m", small=False)) == 2 + 6 * 60 + 1 + 9 and 3.0e9 < n3 < 3.3e9


# ---- embeddings ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dna_gpt0.1b_h", "dna_gpt3b_m"])
def test_pooled_vector_equals_a_plain_forward_pass(registry, tmp_path, name):
    """GENEB's vector = the hand-written forward pass of `<R>` + the row's 6-mers, mean over every token (the
    paper's reference pools <R> too), for rows of different lengths (one not a multiple of 6, one with N) in one
    padded batch; each row alone gives the same vector (padding invariance)."""
    sd = standin(name, seed=1)
    save(tmp_path / "ckpt", name, {"model": sd})
    enc = build(settings_for(registry, name, tmp_path / "ckpt"), progress=False, batch_size=8)
    rows = [random_dna(45, 1), random_dna(12, 2), random_dna(20, 3) + "NNNN" + random_dna(30, 4), random_dna(200, 5)]
    res = enc.embed(rows)
    want = np.stack([plain_forward(sd, hand_ids(s, name)).mean(0).numpy() for s in rows])
    np.testing.assert_allclose(res.embeddings, want, atol=1e-5, rtol=0)
    assert res.embeddings.shape == (4, SMALL["embedding_dim"])
    trimmed = [len(s) % 6 for s in rows] if name == "dna_gpt0.1b_h" else [0] * 4
    assert list(res.trimmed_bases) == trimmed and len(rows[0]) % 6 == 3
    assert list(res.n_tokens) == [len(hand_ids(s, name)) for s in rows]
    alone = np.stack([enc.embed([s]).embeddings[0] for s in rows])
    np.testing.assert_allclose(res.embeddings, alone, atol=1e-5, rtol=0)
    ident = enc.identity()
    assert ident["special_prefix"] == [21] and ident["pad_id"] == 20 and ident["attention_mask"] is False
    assert ident["checkpoint"] == f"{name}.pth" and ident["upstream"].endswith(
        "9b6c0931e3b2011ee5bbb4b988be3e19d62953ae"
    )


def test_bare_state_dict_truncation_and_layers(registry, tmp_path):
    """A bare state dict loads like one under 'model' (the authors' load_model takes both); a row over the cap is
    cut at max_tokens tokens, <R> included; layer num_layers is the post-ln_f state (= layer -1), layer 0 the
    token + position embeddings."""
    name = "dna_gpt3b_m"
    sd = standin(name, seed=2)
    save(tmp_path / "bare", name, sd)
    enc = build(settings_for(registry, name, tmp_path / "bare"), progress=False)
    long_row = random_dna(6 * 600, 9)  # 600 tokens > 511 after <R>
    res = enc.embed([long_row])
    want = plain_forward(sd, hand_ids(long_row, name)[:512]).mean(0).numpy()
    np.testing.assert_allclose(res.embeddings[0], want, atol=1e-5, rtol=0)
    assert res.truncated[0] and res.n_tokens[0] == 512
    row = random_dna(60, 3)
    last = build(settings_for(registry, name, tmp_path / "bare", layer=2), progress=False).embed([row]).embeddings
    np.testing.assert_allclose(last, enc.embed([row]).embeddings, atol=1e-6)
    first = build(settings_for(registry, name, tmp_path / "bare", layer=0), progress=False).embed([row]).embeddings
    ids = torch.tensor(hand_ids(row, name))
    emb = sd["transformer.wte.weight"][ids] + sd["transformer.wpe.weight"][: len(ids)]
    np.testing.assert_allclose(first[0], emb.mean(0).numpy(), atol=1e-6)


# ---- refusals ----------------------------------------------------------------------------------------------


def test_missing_unexpected_and_misshapen_tensors_are_refused(registry, tmp_path):
    name = "dna_gpt0.1b_h"
    sd = standin(name)
    cases = {
        "missing": ({k: v for k, v in sd.items() if k != "transformer.h.1.attn.c_attn.weight"}, "1 missing tensors"),
        "unexpected": ({**sd, "transformer.h.2.ln_1.weight": torch.ones(32)}, "1 unexpected tensors"),
        "ddp": ({f"module.{k}": v for k, v in sd.items()}, "15 missing tensors .* 24 unexpected tensors"),
        "partial-head": ({k: v for k, v in sd.items() if k != "mlm_head.3.weight"}, "mlm_head.3.weight"),
    }
    for case, (state, message) in cases.items():
        save(tmp_path / case, name, {"model": state})
        with pytest.raises(WeightsNotLoadedError, match=f"model {name}: dna_gpt0.1b_h.pth .*{message}"):
            build(settings_for(registry, name, tmp_path / case), progress=False)
    # the 1- to 6-mer vocabulary's table under 0.1b_h's name: a shape error that names the vocabulary
    save(tmp_path / "vocab", name, standin("dna_gpt3b_m") | {"transformer.wpe.weight": sd["transformer.wpe.weight"]})
    with pytest.raises(
        WeightsNotLoadedError, match=r"transformer.wte.weight \(19564, 32\) vs \(15659, 32\).*vocabulary"
    ):
        build(settings_for(registry, name, tmp_path / "vocab"), progress=False)


def test_a_head_absent_as_a_whole_is_not_needed(registry, tmp_path):
    name = "dna_gpt0.1b_h"
    sd = standin(name, seed=4)
    save(tmp_path / "full", name, sd)
    save(tmp_path / "nohead", name, {k: v for k, v in sd.items() if not k.startswith("num_regression.")})
    row = [random_dna(90, 7)]
    a = build(settings_for(registry, name, tmp_path / "full"), progress=False).embed(row).embeddings
    b = build(settings_for(registry, name, tmp_path / "nohead"), progress=False).embed(row).embeddings
    np.testing.assert_array_equal(a, b)


def test_missing_file_pickled_objects_and_unknown_overrides_are_refused(registry, tmp_path):
    name = "dna_gpt3b_m"
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ModelLoadError, match=r"model dna_gpt3b_m: the DNAGPT checkpoint .*dna_gpt3b_m.pth is missing.*drive"
    ):
        build(settings_for(registry, name, tmp_path / "empty"), progress=False)
    save(tmp_path / "pickled", name, {"model": standin(name), "args": argparse.Namespace(lr=1e-4)})
    with pytest.raises(ModelLoadError, match="model dna_gpt3b_m: .* holds objects other than tensors"):
        build(settings_for(registry, name, tmp_path / "pickled"), progress=False)
    save(tmp_path / "ok", name, standin(name))
    s = settings_for(registry, name, tmp_path / "ok")
    s["load"]["config_overrides"]["max_len"] = 1024
    with pytest.raises(ModelLoadError, match=r"config_overrides \['max_len'\]"):
        build(s, progress=False)
    s = settings_for(registry, name, tmp_path / "ok", max_tokens=1024)
    with pytest.raises(ModelLoadError, match="max_tokens 1024 exceeds .* 512 learned positions"):
        build(s, progress=False)
