"""The BioFM adapter (geneb.encoders.families.biofm) on a faithful stand-in of m42-health/BioFM-265M, loaded through the registry.

The stand-in is the real checkpoint's layout, shrunk: a `MistralForCausalLM` saved with save_pretrained (config
`architectures: [MistralForCausalLM]`, model_type mistral, vocab_size 512, hidden_size 640, rope_theta 1e5, no sliding
window, untied head; depth 2 instead of 23, 4 heads of 32 instead of 32 of 128, 2 KV heads instead of 8, intermediate
256 instead of 2560) and the real tokenizer_config.json content (char_ords D N A T G C, model_max_length 6144). The
real config values are those a public oracle script asserts for the hub snapshot at 52218bbdd383 (docs/adapters/biofm.md).
The entry is the committed registry's BioFM-265M with `source.kind: local`. The expected values are written out
here: the ids from biofm-eval's AnnotationTokenizer layout, the vector from a plain forward pass of the saved causal
LM (`hidden_states[-1]` at the row before [SEP], biofm-eval embedder.py), and the reference's batched indexing
re-enacted to show the defect GENEB corrects.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

from geneb.core.errors import ModelLoadError
from geneb.encoders.families.biofm import BioTokenTokenizer
from geneb.registry.families import FAMILIES, build
from geneb.registry.load import extraction_settings, runnable
from geneb.registry.registry import as_registry

MODEL = "BioFM-265M"
#: the hub snapshot's tokenizer_config.json content (char_ords D, N, A, T, G, C)
TOKENIZER_CONFIG = {"char_ords": [68, 78, 65, 84, 71, 67], "model_max_length": 6144}
#: golden ids of biofm-eval's AnnotationTokenizer with those characters (biofm_eval/tokenizers/base.py @ 30d5ec2)
CHAR_IDS = {"D": 0, "N": 1, "A": 2, "T": 3, "G": 4, "C": 5}
CLS, SEP, UNK, PAD = 6, 7, 8, 9
SEQS = ["ACGTTGCAAGGCTTACGATCGATCGGATCCATGCAAGCTT", "GATTACAGATTACAGATTACAGG", "TTGCA", "CCGGAATTNCCGG"]


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    """The stand-in checkpoint folder (hub-snapshot layout, safetensors)."""
    from transformers import MistralConfig, MistralForCausalLM

    folder = tmp_path_factory.mktemp("biofm") / "BioFM-265M-standin"
    config = MistralConfig(
        architectures=["MistralForCausalLM"],
        vocab_size=512,
        hidden_size=640,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        intermediate_size=256,
        max_position_embeddings=32770,
        sliding_window=None,
        rms_norm_eps=1e-5,
        rope_theta=100000.0,
        hidden_act="silu",
        tie_word_embeddings=False,
        use_cache=False,
    )
    torch.manual_seed(13)
    model = MistralForCausalLM(config)
    with torch.no_grad():  # a visible final norm (random init leaves it at ones)
        model.model.norm.weight.uniform_(0.5, 1.5)
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=4))
    return folder


@pytest.fixture(scope="module")
def causal_lm(standin):
    from transformers import MistralForCausalLM

    return MistralForCausalLM.from_pretrained(standin, dtype=torch.float32).eval()


def _registry(registry, folder, **extraction):
    """The committed registry with BioFM-265M's entry pointing at `folder` (extraction values overridden)."""
    reg = copy.deepcopy(dict(registry))
    reg["models"] = dict(reg["models"])
    entry = copy.deepcopy(reg["models"][MODEL])
    entry["source"] = {"kind": "local", "path": str(folder)}
    entry["extraction"] = {**entry["extraction"], **extraction}
    reg["models"][MODEL] = entry
    return reg


def _encoder(registry, folder, *, batch_size=4, **extraction):
    settings = extraction_settings(_registry(registry, folder, **extraction), MODEL, {}, device="cpu")
    return build(settings, device="cpu", batch_size=batch_size, progress=False)


@pytest.fixture(scope="module")
def enc32(registry, standin):
    """The registry entry in float32 (the reference ran bfloat16; float32 makes the comparison exact)."""
    return _encoder(registry, standin, dtype="float32")


def _ids(seq):
    return [CLS, *(CHAR_IDS.get(c, UNK) for c in seq), SEP]


def plain_forward(model, seq):
    """biofm-eval's vector of one record embedded alone: hidden_states[-1] at row valid_count - 2 (no padding)."""
    ids = torch.tensor([_ids(seq)])
    with torch.inference_mode():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states[-1]
    return hidden[0, ids.shape[1] - 2].float()


def reference_batch(model, seqs):
    """biofm-eval's Embedder on a batch, re-enacted: left padding with [PAD], the attention mask dropped before the
    model, row (input_ids != pad).sum(1) - 2 taken as an absolute index (embedder.py, extract_decoder_variant_hidden_states)."""
    rows = [_ids(s) for s in seqs]
    width = max(map(len, rows))
    ids = torch.tensor([[PAD] * (width - len(r)) + r for r in rows])
    with torch.inference_mode():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states[-1]
    index = (ids != PAD).sum(dim=1) - 2
    return hidden[torch.arange(len(rows)), index].float(), index


def test_family_and_registry_entry(registry):
    entry = registry["models"][MODEL]
    assert entry["family"] == "biofm" and FAMILIES["biofm"].entry == "geneb.encoders.families.biofm:from_settings"
    assert (
        entry["trust_remote_code"] is False and "env" not in entry and "transformers" not in (entry.get("load") or {})
    )
    ext = entry["extraction"]
    assert (ext["pooling"], ext["exclude_special_tokens"], ext["max_tokens"], ext["dtype"]) == (
        "last",
        True,
        6144,
        "bfloat16",
    )
    ok, why = runnable(as_registry(registry).spec(MODEL))
    assert not ok and "no pinned revision" in why and "no adapter" not in why  # only the pin is missing


def test_tokenizer_golden_ids(enc32):
    tok = enc32.tokenizer
    assert isinstance(tok, BioTokenTokenizer) and len(tok) == 24
    assert tok("ACGTN")["input_ids"] == [6, 2, 5, 4, 3, 1, 7]
    assert tok(["GATTACA", "D"], add_special_tokens=False)["input_ids"] == [[4, 2, 3, 3, 2, 5, 2], [0]]
    assert tok("ARYC", add_special_tokens=False)["input_ids"] == [2, 8, 8, 5]  # IUPAC codes other than D: [UNK]
    vocab = tok.vocab
    assert [vocab[t] for t in ("[CLS]", "[SEP]", "[UNK]", "[PAD]", "[EOS]", "[BOS]", "[SPECIAL]")] == list(range(6, 13))
    assert [vocab[c] for c in "ÂṰĜĈ"] == [13, 14, 15, 16]
    assert vocab["[START_CDS]"] == 17 and vocab["[START_CODON]"] == 23
    assert (enc32.prefix, enc32.suffix, enc32.pad_id, enc32.unk_id) == ([6], [7], 9, 8)
    ident = enc32.identity()
    assert ident["tokenizer"] == "BioTokenTokenizer" and ident["model_class"] == "MistralModel"
    assert ident["attention_mask"] is True and ident["padding"].startswith("right")
    assert (ident["hidden_size"], ident["num_embeddings"], ident["tokenizer_vocab_size"]) == (640, 512, 24)


def test_vector_equals_plain_forward_pass(enc32, causal_lm):
    res = enc32.embed(SEQS[:1])
    want = plain_forward(causal_lm, SEQS[0])
    assert res.embeddings.shape == (1, 640)
    assert torch.allclose(torch.from_numpy(res.embeddings[0]), want, atol=1e-5, rtol=0)
    assert res.n_tokens.tolist() == [1]


def test_mixed_length_batch_gives_each_row_its_own_vector(enc32, causal_lm):
    own = torch.stack([plain_forward(causal_lm, s) for s in SEQS])
    got = torch.from_numpy(enc32.embed(SEQS).embeddings)  # one batch of 4 (batch_size 4), 7 to 42 tokens
    assert (got - own).abs().max() < 1e-5
    ref, index = reference_batch(causal_lm, SEQS)
    # the reference's defect: only the longest record (no pads) gets its own vector; the others read a pad row
    # or an earlier letter, through states that attended to the pads
    assert index.tolist() == [len(s) for s in SEQS]
    assert (ref[0] - own[0]).abs().max() < 1e-5
    scale = own.abs().amax(dim=1)
    moved = ((ref - own).abs().amax(dim=1) / scale)[1:]
    assert (moved > 0.05).all(), moved


def test_unknown_letters_are_counted(enc32, causal_lm):
    res = enc32.embed(["ACGTRACGT", "ACGT"])
    assert (res.counters.unknown_rows, res.counters.unknown_tokens) == (1, 1)
    assert torch.allclose(torch.from_numpy(res.embeddings[0]), plain_forward(causal_lm, "ACGTRACGT"), atol=1e-5, rtol=0)


def test_truncation_keeps_the_first_letters_like_the_reference(registry, standin, causal_lm):
    enc = _encoder(registry, standin, dtype="float32", max_tokens=32)
    long = (SEQS[0] * 2)[:50]
    res = enc.embed([long])
    assert res.truncated.tolist() == [True]
    # the reference's truncation=True keeps model_max_length - 2 letters, then [SEP]
    want = plain_forward(causal_lm, long[:30])
    assert torch.allclose(torch.from_numpy(res.embeddings[0]), want, atol=1e-5, rtol=0)


def test_bfloat16_as_registered(registry, standin, causal_lm):
    enc = _encoder(registry, standin)  # the entry's dtype: bfloat16 weights and compute
    assert (enc.compute_dtype, enc.weights_dtype) == ("bfloat16", "bfloat16")
    got = torch.from_numpy(enc.embed(SEQS).embeddings)
    own = torch.stack([plain_forward(causal_lm, s) for s in SEQS])
    rel = (got - own).abs().amax(dim=1) / own.abs().amax(dim=1)
    assert (rel < 0.05).all(), rel
    alone = torch.from_numpy(enc.embed(SEQS[2:3]).embeddings[0])
    assert ((alone - got[2]).abs().max() / alone.abs().max()) < 2e-2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"char_ords": [65, 67, 71, 84, 78], "model_max_length": 6144}, "exactly 6 distinct"),
        ({"char_ords": [65, 67, 71, 84, 78, 65], "model_max_length": 6144}, "exactly 6 distinct"),
        ({"char_ords": [65, 67, 71, 84, 78, 32], "model_max_length": 6144}, "not allowed"),
        ({"char_ords": "DNATGC", "model_max_length": 6144}, "list of integers"),
        ({"char_ords": [68, 78, 65, 84, 71, 67]}, "lacks ['model_max_length']"),
        ({"char_ords": [68, 78, 65, 84, 71, 67], "model_max_length": "6144"}, "model_max_length must be an integer"),
    ],
)
def test_malformed_tokenizer_config_is_refused(tmp_path, content, message):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(content))
    with pytest.raises(ModelLoadError, match=r"model BioFM-265M: tokenizer_config.json of .*") as err:
        BioTokenTokenizer.from_checkpoint(str(tmp_path), None, model=MODEL)
    assert message in str(err.value)


def test_missing_tokenizer_config_is_refused_through_the_registry(registry, standin, tmp_path):
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for f in standin.iterdir():
        if f.name != "tokenizer_config.json":
            (folder / f.name).symlink_to(f)
    with pytest.raises(ModelLoadError, match="model BioFM-265M: .* has no tokenizer_config.json"):
        _encoder(registry, folder, dtype="float32")


def test_pinned_hub_source_reads_the_snapshot(registry, standin, enc32, tmp_path, monkeypatch):
    """`source.kind: hub` at the snapshot's commit, from an offline HF cache holding the stand-in's files: the
    tokenizer_config.json and weights of that revision load (the path a pinned run takes)."""
    from huggingface_hub import constants

    revision = "52218bbdd383c123f6ced585c9cf2f62ae1fbb17"
    cached = tmp_path / "hub" / "models--m42-health--BioFM-265M"
    (cached / "snapshots" / revision).mkdir(parents=True)
    for f in standin.iterdir():
        (cached / "snapshots" / revision / f.name).symlink_to(f)
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text(revision)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # read at each call
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)
    reg = _registry(registry, standin, dtype="float32")
    reg["models"][MODEL]["source"] = {"kind": "hub", "hub_id": "m42-health/BioFM-265M", "revision": revision}
    enc = build(extraction_settings(reg, MODEL, {}, device="cpu"), device="cpu", progress=False)
    ident = enc.identity()
    assert (ident["name_or_path"], ident["revision"], ident["tokenizer"]) == (
        "m42-health/BioFM-265M",
        revision,
        "BioTokenTokenizer",
    )
    assert (enc.embed(SEQS[1:2]).embeddings == enc32.embed(SEQS[1:2]).embeddings).all()
