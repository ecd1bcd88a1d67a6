"""Failure cases of kind "pooling" (../shared/cases/CASES.md): no attention mask, fixed padding from
the tokenizer files, pads in the mean, special tokens in the pool, last-token pooling with right padding.

Every test runs real checkpoints built from configs (tests/tiny_models.py) through the real registry and
adapters; the policy each enforces is in docs/footguns.md ("Pooling").
"""

from __future__ import annotations

import json
import logging

import h5py
import numpy as np
import pytest
import torch

from extraction_support import DECODERS, KINDS, random_dna, spec
from geneb.core.errors import EmptyPoolError, PaddingVarianceError
from geneb.encoders.engine.chunking import Chunk, pool
from geneb.encoders.engine.invariance import check_padding_invariance
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.extract.step import build_encoder, extract_task
from geneb.registry.load import DEFAULT_EXTRACTION, check_registry, extraction_settings, load_registry

MASKED = [k for k in KINDS if k not in ("hyena",)]  # every zoo model that takes an attention mask


# ---- no attention mask --------------------------------------------------------------------------------------------


def last_real_index(mask: np.ndarray | torch.Tensor) -> np.ndarray:
    """Index of the last real position per row of a (B, T) mask, e.g. [1,1,1,0,0] -> 2.

    Rows with no real position give -1 (pool() refuses them)."""
    m = torch.as_tensor(np.asarray(mask)).to(torch.bool)
    positions = torch.arange(m.shape[1]).expand_as(m)
    return torch.where(m, positions, -1).amax(dim=1).numpy()


def test_hyena_padding_invariance(zoo):
    """A causal long-convolution model with no attention mask: 37 nt alone == 37 nt batched with 200 nt."""
    enc = zoo.encoder("hyena")
    assert enc.uses_attention_mask is False
    assert not enc.bucket_equal_lengths  # causal + right padding: pads sit after every real position
    report = check_padding_invariance(enc, random_dna(37, 1), [random_dna(200, 2)], atol=1e-4).require()
    assert report.max_abs_diff <= 1e-5


def test_bidirectional_model_without_mask_gets_equal_length_batches(zoo):
    """A bidirectional model run without a mask (Caduceus-style) never sees a pad: equal-length batches."""
    enc = zoo.encoder("bert", attention_mask=False)
    assert enc.uses_attention_mask is False and enc.bucket_equal_lengths
    check_padding_invariance(enc, random_dna(37, 1), [random_dna(200, 2), random_dna(37, 3)], atol=1e-4).require()
    with pytest.raises(ValueError, match="would pad real positions"):
        zoo.encoder("bert", attention_mask=False, bucket_by_length=False)


def test_left_padding_without_mask_is_refused(zoo):
    """The reference defect (left padding, no mask) cannot be configured: the validator and the engine refuse it."""
    registry = zoo.registry("hyena", padding_side="left")
    assert any("left padding" in p for p in check_registry(registry))
    with pytest.raises(ValueError, match="left padding"):
        zoo.encoder("hyena", padding_side="left")


def test_registry_has_no_left_padded_maskless_model(repo):
    """The shipped registry passes the same check (load_registry runs it on every load)."""
    registry = load_registry(repo / "config" / "models.yaml")
    assert not [p for p in check_registry(registry) if "left padding with no attention mask" in p]
    bad = {
        "models": {
            "x": {**registry.raw["models"]["hyenadna-medium-160k-seqlen-hf"], "extraction": {"padding_side": "left"}}
        }
    }
    assert any("left padding" in p for p in check_registry(bad))


def _tiny_from_config(folder, shared, config_cls, model_cls, **config):
    """A random-init checkpoint (torch seed 0) with the DNABERT-2 tokenizer, written with save_pretrained."""
    from transformers import AutoTokenizer

    from tiny_models import copy_tokenizer

    copy_tokenizer(shared / "models" / "tokenizers" / "dnabert-2-117m", folder)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(0)
    model_cls(
        config_cls(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            pad_token_id=3,
            **config,
        )
    ).save_pretrained(folder)
    return folder


def _load(folder, family, **extraction):
    entry = spec(folder, family, extraction)
    return build_encoder(
        extraction_settings({"models": {folder.name: entry}}, folder.name, {}), batch_size=8, progress=False
    )


def test_dynamic_rope_depends_on_a_long_batch_mate_refused_at_load(shared, tmp_path):
    """A Llama with dynamic-NTK RoPE and 128 trained positions: its rotary base grows with the padded width once
    that passes 128, so a short row's vector depends on a long batch mate, never on a short one. Under a registry
    cap of 512 tokens (beyond the trained positions, which dynamic RoPE exists to allow) the load-time check
    batches a long probe and refuses it; capped at 128 tokens the padded width never passes 128 and it loads."""
    import transformers as tf

    folder = _tiny_from_config(
        tmp_path / "llama-dynamic-rope",
        shared,
        tf.LlamaConfig,
        tf.LlamaModel,
        num_key_value_heads=2,
        max_position_embeddings=128,
        initializer_range=0.1,
        rope_parameters={"rope_type": "dynamic", "factor": 4.0, "rope_theta": 10000.0},
    )
    model = tf.LlamaModel.from_pretrained(folder).eval()
    ids = torch.randint(5, 100, (1, 40), generator=torch.Generator().manual_seed(0))

    def padded_to(width):  # the 40 real positions' states, the row right-padded (masked) to `width`
        x = torch.full((1, width), 3)
        x[:, :40] = ids
        mask = (torch.arange(width) < 40).long()[None]
        with torch.no_grad():
            return model(input_ids=x, attention_mask=mask).last_hidden_state[0, :40]

    alone = padded_to(40)
    assert (padded_to(128) - alone).abs().max() <= 1e-5 * alone.abs().max()  # within the trained positions: exact
    assert (padded_to(400) - alone).abs().max() > 1e-2 * alone.abs().max()  # beyond: the pads change the vector
    with pytest.raises(
        PaddingVarianceError,
        match=rf"model {folder.name}: a \d+-token probe's embedding changes by .* "
        r"\(relative; limit 0.0001\) when batched with a \d+-token one under padding_side right",
    ):
        _load(folder, "hf-decoder", max_tokens=512)
    enc = _load(folder, "hf-decoder", max_tokens=128)
    check_padding_invariance(enc, random_dna(60, 1), [random_dna(1500, 2)], atol=1e-5).require()


def test_convbert_pad_leak_refused_in_fp32(shared, tmp_path):
    """ConvBERT masks its self-attention, but its span-based dynamic convolution reads the pad positions next to
    the last real tokens: a leak of a few 1e-4 (relative) in float32, below the old 1e-3 tolerance and below
    bfloat16 rounding. With float32 weights the load-time check runs in float32 at tolerance 1e-4 and refuses it;
    an honest BERT of the same size and initialisation loads and is padding-invariant."""
    import re

    import transformers as tf

    same = {"max_position_embeddings": 512, "initializer_range": 0.02}
    conv = _tiny_from_config(
        tmp_path / "convbert",
        shared,
        tf.ConvBertConfig,
        tf.ConvBertModel,
        embedding_size=32,
        conv_kernel_size=9,
        head_ratio=1,
        **same,
    )
    with pytest.raises(
        PaddingVarianceError,
        match=r"model convbert: a \d+-token probe's embedding changes by .* "
        r"\(relative; limit 0.0001\)",
    ) as err:
        _load(conv, "hf-encoder", max_tokens=512, dtype="float32")
    leak = float(re.search(r"changes by (\S+) \(relative", str(err.value)).group(1))
    assert 1e-4 < leak < 1e-3  # small: a real leak, not rounding (fp32 noise is ~1e-7)
    bert = _tiny_from_config(tmp_path / "bert", shared, tf.BertConfig, tf.BertModel, **same)
    enc = _load(bert, "hf-encoder", max_tokens=512, dtype="float32")
    assert enc.compute_dtype == "float32" and not enc.bucket_equal_lengths
    check_padding_invariance(enc, random_dna(100, 1), [random_dna(1500, 2)], atol=1e-5).require()


# ---- fixed padding from tokenizer files ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*MASKED, "hyena"])
def test_padding_longest_vs_max_length(zoo, kind):
    """30 nt padded to the batch's longest vs padded to the model limit (or 512): cosine >= 0.9999."""
    enc = zoo.encoder(kind, batch_size=2)
    seq = random_dna(30, 4)
    longest = enc.embed([seq]).embeddings[0]
    enc.pad_to_length = min(enc.max_tokens, 512)
    try:
        padded = enc.embed([seq]).embeddings[0]
    finally:
        enc.pad_to_length = None
    cos = float(longest @ padded / np.linalg.norm(longest) / np.linalg.norm(padded))
    assert cos >= 0.9999, f"{kind}: cosine {cos}"


def test_fixed_padding_in_tokenizer_files_is_overridden(zoo, tmp_path, caplog):
    """A tokenizer.json with padding to 128 and truncation baked in: GENEB switches both off and says so."""
    import shutil

    folder = tmp_path / "bert-fixed-pad"
    shutil.copytree(zoo.folder("bert"), folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["padding"] = {
        "strategy": {"Fixed": 128},
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 3,
        "pad_type_id": 0,
        "pad_token": "[PAD]",
    }
    tok["truncation"] = {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    from extraction_support import spec
    from geneb.extract.step import build_encoder

    with caplog.at_level(logging.INFO):
        enc = build_encoder(
            extraction_settings({"models": {"fixed": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "fixed", {}),
            progress=False,
        )
    seq = random_dna(300, 5)
    ids = enc._tokenize([seq])[0]
    assert 16 < len(ids) < 128  # neither truncated to 16 nor padded to 128
    assert "overridden" in caplog.text and "padding" in caplog.text
    assert "padding right" in caplog.text  # the settings actually used are logged
    reference = zoo.encoder("bert", batch_size=1).embed([seq]).embeddings
    np.testing.assert_allclose(enc.embed([seq]).embeddings, reference, atol=1e-6)


# ---- the shared mask-aware pooling helper -------------------------------------------------------------------------


def test_mean_over_pad_positions():
    """hidden [[1,1],[3,3],[99,99]], mask [1,1,0]: mean [2,2], max [3,3], last [3,3], cls [1,1]."""
    h = torch.tensor([[[1.0, 1.0], [3.0, 3.0], [99.0, 99.0]]])
    m = torch.tensor([[1, 1, 0]])
    assert pool(h, m, "mean").tolist() == [[2.0, 2.0]]
    assert pool(h, m, "max").tolist() == [[3.0, 3.0]]
    assert pool(h, m, "last").tolist() == [[3.0, 3.0]]
    assert pool(h, m, "cls").tolist() == [[1.0, 1.0]]


@pytest.mark.parametrize("method", ["mean", "max", "cls", "last"])
def test_empty_mask_names_the_row(method):
    h = torch.ones(2, 3, 2)
    with pytest.raises(EmptyPoolError, match="row 17"):
        pool(h, torch.tensor([[1, 0, 0], [0, 0, 0]]), method, rows=[16, 17])


def test_non_finite_values_at_pads_never_reach_the_pool():
    """NaN / inf / -inf at masked positions (a pad row of a left-padded causal model, an fp16 overflow of a pad
    embedding): every method gives the value of the real positions (NaN * 0 would be NaN for a mask product)."""
    h = torch.tensor(
        [
            [[1.0, 1.0], [3.0, 3.0], [float("nan"), float("inf")]],
            [[5.0, -1.0], [float("-inf"), float("nan")], [float("inf"), float("-inf")]],
        ]
    )
    m = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert pool(h, m, "mean").tolist() == [[2.0, 2.0], [5.0, -1.0]]
    assert pool(h, m, "max").tolist() == [[3.0, 3.0], [5.0, -1.0]]
    assert pool(h, m, "last").tolist() == [[3.0, 3.0], [5.0, -1.0]]
    assert pool(h, m, "cls").tolist() == [[1.0, 1.0], [5.0, -1.0]]
    # a non-finite value at a REAL position is not hidden (the finiteness guards must still see it)
    real_nan = torch.tensor([[[1.0, float("nan")], [3.0, 3.0]]])
    out = pool(real_nan, torch.tensor([[1, 1]]), "mean")
    assert out[0, 0].item() == 2.0 and torch.isnan(out[0, 1])


class PadNaN(TokenModelEncoder):
    """A stand-in model: hidden states = a small embedding of A/C/G/T (ids 0-3); the pad id 4 gives NaN states,
    as a fully masked query row of some attention kernels does. Real positions are always finite."""

    def _load(self) -> LoadedNetwork:
        torch.manual_seed(0)
        table = torch.nn.Embedding(5, 4)
        return LoadedNetwork(table, None, max_tokens=64, pad_id=4, hidden_size=4, vocab_size=5, num_embeddings=5)

    def _tokenize(self, texts):
        return [["ACGT".index(c) for c in t] for t in texts]

    def _call(self, inputs, want_states):
        ids = inputs["input_ids"]
        h = self.model(ids).float()
        h[ids == 4] = float("nan")  # pads only
        return h


def test_nan_at_pads_through_embed():
    """Rows of 4, 8 and 4 bases in one padded batch: each vector is the mean of its own bases' table rows, the
    same as alone, finite (the load-time padding check passes too: it would see NaN as a difference)."""
    settings = {
        "model": "fake-padnan",
        "family": "hf-encoder",
        "source": {"kind": "builtin"},
        "builtin": {},
        "trust_remote_code": False,
        "load": {},
        "extraction": dict(DEFAULT_EXTRACTION),
        "alphabet": {},
    }
    enc = PadNaN(settings, batch_size=3, progress=False)
    seqs = ["ACGA", "TTTTTTTT", "GGCA"]
    chunks, *_ = enc.make_chunks(seqs, [0, 1, 2])
    ids, attn, _ = enc.batch_tensors(chunks)
    assert (ids == 4).sum() == 8 and (attn == 0).sum() == 8  # two rows really are padded, with the NaN id
    batched = enc.embed(seqs).embeddings
    assert np.isfinite(batched).all()
    table = enc.model.weight.detach().numpy()
    expected = np.stack([table[["ACGT".index(c) for c in s]].mean(0) for s in seqs])
    np.testing.assert_allclose(batched, expected, atol=1e-6)
    enc.batch_size = 1
    np.testing.assert_allclose(enc.embed(seqs).embeddings, batched, atol=1e-6)


def test_only_special_tokens_left_is_an_error_not_nan(zoo):
    """A sequence whose only real position is a special token, with special tokens excluded: error naming the row."""
    enc = zoo.encoder("esm")
    with pytest.raises(EmptyPoolError, match="row 5"):
        enc._forward_batch([Chunk(0, [3], [0])], [5])


# ---- special tokens and pads in NT ----------------------------------------------------------------------------------


def test_nt_special_tokens_and_padding(zoo):
    """NT 6-mers with a CLS prefix: 18 nt -> 4 ids; the pool covers exactly the 3 k-mer positions, padded or not."""
    enc = zoo.encoder("esm", batch_size=1)
    seq = "ATTCCGATTCCGATTCCG"
    full = enc.tokenizer(seq)["input_ids"]
    assert len(full) == 4 and full[0] == enc.tokenizer.cls_token_id
    res = enc.embed([seq])
    assert res.n_tokens.tolist() == [3]
    enc.pad_to_length = 1000
    try:
        padded = enc.embed([seq])
    finally:
        enc.pad_to_length = None
    np.testing.assert_allclose(padded.embeddings, res.embeddings, atol=1e-5)
    assert padded.n_tokens.tolist() == [3]


def test_policy_and_counts_in_hdf5(repo, make_task, tmp_path):
    """The special-token policy and the pooled-position counts are HDF5 attributes / datasets."""
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "random-esm-tiny", {})
    task = make_task(["ATTCCGATTCCGATTCCG", "ATTCCGATTCCGATTCCGA"], ["ATTCCGATTCCGATTCCG"])
    out = tmp_path / "e.h5"
    extract_task(settings, task, out, progress=False)
    with h5py.File(out, "r") as f:
        assert f.attrs["exclude_special_tokens"] == True  # noqa: E712 - numpy bool
        assert f.attrs["pooling"] == "mean" and f.attrs["layer"] == "-1"
        assert json.loads(f.attrs["special_prefix_ids"]) == [3] and json.loads(f.attrs["special_suffix_ids"]) == []
        assert f["train"]["n_tokens"][:].tolist() == [3, 4]  # 3 six-mers; 3 six-mers + one single-letter fallback
        assert f["train"].attrs["n_pooled_positions"] == 7
        assert f["test"]["n_tokens"][:].tolist() == [3]


# ---- last-token pooling with right padding ------------------------------------------------------------------------


def test_last_real_index_unit():
    assert last_real_index(np.array([[1, 1, 1, 0, 0]])).tolist() == [2]
    assert last_real_index(np.array([[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])).tolist() == [4, 0]


@pytest.mark.parametrize("kind", [*DECODERS, "mistral-dna"])
def test_last_token_pooling_right_padding(zoo, kind):
    """Causal models, last-token pooling, batch [12 nt, 40 nt] padded on the right: S1 equals S1 alone."""
    enc = zoo.encoder(kind, pooling="last", long_policy="truncate", exclude_special_tokens=False, batch_size=2)
    s1, s2 = random_dna(12, 6), random_dna(40, 7)
    batched = enc.embed([s1, s2]).embeddings
    alone = enc.embed([s1]).embeddings
    np.testing.assert_allclose(batched[:1], alone, atol=1e-4)
    # the pooled vector is the hidden state at index (number of real tokens - 1)
    chunks, *_ = enc.make_chunks([s1, s2], [0, 1])
    ids, attn, pmask = enc.batch_tensors(chunks)
    assert attn[0, -1] == 0  # S1 really is padded
    hidden = enc.hidden_states(ids, attn)
    n_real = int(attn[0].sum())
    assert last_real_index(pmask)[0] == n_real - 1
    np.testing.assert_allclose(batched[0], hidden[0, n_real - 1].float().numpy(), atol=1e-6)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    """A tiny GPT-2 (learned absolute positions, wpe) with a HyenaDNA-style char tokenizer, via save_pretrained."""
    import transformers as tf

    from tiny_models import write_char_tokenizer

    folder = tmp_path_factory.mktemp("gpt2")
    write_char_tokenizer(folder, padding_side="right")
    torch.manual_seed(0)
    cfg = tf.GPT2Config(vocab_size=12, n_embd=16, n_layer=2, n_head=2, n_positions=128, bos_token_id=2, eos_token_id=1)
    tf.GPT2Model(cfg).save_pretrained(folder)
    return folder


def _gpt2(folder, **extraction):
    entry = spec(folder, "hf-decoder", {"max_tokens": 128, "pooling": "last", **extraction})
    return build_encoder(extraction_settings({"models": {"tiny-gpt2": entry}}, "tiny-gpt2", {}), progress=False)


def test_left_padding_of_learned_absolute_positions_fails_at_load(zoo, gpt2_folder):
    """padding_side: left on GPT-2 / BERT (position ids 0.. counted from the left edge, pads included): the real
    tokens of a padded row get other positions, so a vector depends on its batch mates. The validator allows
    the setting (the model has a mask), so the load-time check refuses it, naming model and padding side."""
    assert not check_registry({"models": {"tiny-gpt2": spec(gpt2_folder, "hf-decoder", {"padding_side": "left"})}})
    with pytest.raises(
        PaddingVarianceError,
        match=r"model tiny-gpt2: a \d+-token probe's embedding changes by .* when "
        r"batched with a \d+-token one under padding_side left: results would depend on batch mates",
    ):
        _gpt2(gpt2_folder, padding_side="left")
    with pytest.raises(PaddingVarianceError, match="model tiny-bert: .* under padding_side left"):
        zoo.encoder("bert", padding_side="left")
    # the same checkpoints padded on the right load and are padding-invariant
    right = _gpt2(gpt2_folder)
    check_padding_invariance(right, random_dna(12, 6), [random_dna(40, 7)], atol=1e-5).require()
    check_padding_invariance(zoo.encoder("bert"), random_dna(30, 6), [random_dna(200, 7)], atol=1e-5).require()


@pytest.mark.parametrize("kind", ["llama", "gpt-neox"])
def test_left_padding_of_a_rotary_model_still_loads(zoo, kind):
    """Rotary positions only enter attention as differences, so a shift by the pad count changes nothing: left
    padding passes the load-time check, and a padded row equals the row alone (last-token pooling too)."""
    enc = zoo.encoder(
        kind, padding_side="left", pooling="last", long_policy="truncate", exclude_special_tokens=False, batch_size=2
    )
    assert enc.padding_side == "left"
    s1, s2 = random_dna(12, 6), random_dna(40, 7)
    chunks, *_ = enc.make_chunks([s1, s2], [0, 1])
    _, attn, _ = enc.batch_tensors(chunks)
    assert attn[0, 0] == 0 and attn[0, -1] == 1  # S1 really is padded, on the left
    check_padding_invariance(enc, s1, [s2], atol=1e-4).require()


# ---- special tokens and last-token pooling, round 2: strand prefix, cls without a CLS, one-position n_tokens ---------


@pytest.fixture(scope="module")
def strand_folder(tmp_path_factory):
    """A gLM2-shaped checkpoint: a lowercase single-letter vocabulary with a '<+>' strand token (a special token
    of the tokenizer), no post-processor (the tokenizer adds no CLS/SEP), a tiny BERT behind it."""
    import transformers as tf
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    folder = tmp_path_factory.mktemp("strand")
    vocab = ["<pad>", "<unk>", "<+>", "a", "c", "g", "t", "n"]
    tok = Tokenizer(models.WordLevel({v: i for i, v in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    hf = tf.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")
    hf.add_special_tokens({"additional_special_tokens": ["<+>"]})
    hf.save_pretrained(folder)
    torch.manual_seed(0)
    tf.BertModel(
        tf.BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
            pad_token_id=0,
        )
    ).save_pretrained(folder)
    return folder


def test_strand_prefix_on_every_chunk_and_not_pooled(strand_folder):
    """input_transform {kind: lowercase, prefix: '<+>'} and max_tokens 32: a 70-nt row is cut into three balanced
    chunks of at most 31 bases (24, 23, 23), each led by the strand token, which is never pooled (n_tokens 70, not 71), and every chunk's vector is
    the mean of its own base positions only."""
    entry = spec(
        strand_folder, "hf-encoder", {"max_tokens": 32, "input_transform": {"kind": "lowercase", "prefix": "<+>"}}
    )
    enc = build_encoder(
        extraction_settings({"models": {"glm-like": entry}}, "glm-like", {}), batch_size=4, progress=False
    )
    strand = enc.tokenizer.convert_tokens_to_ids("<+>")
    assert enc.prefix == [] and enc.strand == [strand] and enc.suffix == [] and enc.body_cap == 31
    seq = random_dna(70, 1)
    chunks, n_chunks, _, _ = enc.make_chunks([seq], [0])
    assert n_chunks.tolist() == [3]
    for c in chunks:
        assert c.ids[0] == strand and c.pool_mask[0] == 0 and strand not in c.ids[1:]
        assert all(c.pool_mask[1:])
    assert [len(c.ids) - 1 for c in chunks] == [24, 23, 23]
    res = enc.embed([seq])
    assert res.n_tokens.tolist() == [70]
    ids, attn, _ = enc.batch_tensors(chunks)
    hidden = enc.hidden_states(ids, attn)
    expected = sum(hidden[k, 1 : len(c.ids)].double().sum(0) for k, c in enumerate(chunks)) / 70
    np.testing.assert_allclose(res.embeddings[0], expected.numpy(), atol=1e-5)
    # with the tokenizer's special tokens pooled, the strand token still is not (it is the same in every row)
    keep = spec(
        strand_folder,
        "hf-encoder",
        {"max_tokens": 32, "exclude_special_tokens": False, "input_transform": {"kind": "lowercase", "prefix": "<+>"}},
    )
    enc2 = build_encoder(extraction_settings({"models": {"glm-like": keep}}, "glm-like", {}), progress=False)
    assert enc2.embed([seq]).n_tokens.tolist() == [70]


def test_cls_pooling_refused_without_a_cls_token(zoo, tmp_path):
    """The tiny BERT with its tokenizer's post-processor removed adds no token before the sequence: cls pooling
    would pool the first nucleotide token, so loading refuses it; the same checkpoint with its [CLS] loads."""
    import shutil

    folder = tmp_path / "bert-no-cls"
    shutil.copytree(zoo.folder("bert"), folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["post_processor"] = None
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    ext = {"max_tokens": 64, "pooling": "cls", "exclude_special_tokens": False, "long_policy": "truncate"}
    settings = extraction_settings({"models": {"no-cls": spec(folder, "hf-encoder", ext)}}, "no-cls", {})
    with pytest.raises(
        ValueError, match=r"model no-cls: pooling cls, but the tokenizer puts no token before the sequence"
    ):
        build_encoder(settings, progress=False)
    with_cls = zoo.encoder("bert", pooling="cls", exclude_special_tokens=False, long_policy="truncate")
    assert with_cls.prefix == [with_cls.tokenizer.cls_token_id]


def test_n_tokens_is_one_per_row_for_last_and_cls(zoo, make_task, tmp_path):
    """last / cls pooling read one position per row: n_tokens is 1 for every row, whatever its length, and the
    split's n_pooled_positions is the row count (mean pooling counts every pooled token)."""
    seqs = [random_dna(12, 6), random_dna(40, 7), random_dna(90, 8)]
    last = zoo.encoder("llama", pooling="last", long_policy="truncate", exclude_special_tokens=False, batch_size=2)
    assert last.embed(seqs).n_tokens.tolist() == [1, 1, 1]
    cls = zoo.encoder("bert", pooling="cls", exclude_special_tokens=False, long_policy="truncate")
    assert cls.embed(seqs).n_tokens.tolist() == [1, 1, 1]
    assert min(zoo.encoder("bert").embed(seqs).n_tokens) > 1  # mean: every pooled position
    task = make_task(seqs, seqs[:1])
    extract_task(
        zoo.settings("llama", pooling="last", long_policy="truncate", exclude_special_tokens=False),
        task,
        tmp_path / "e.h5",
        progress=False,
    )
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f["train"]["n_tokens"][:].tolist() == [1, 1, 1] and f["train"].attrs["n_pooled_positions"] == 3
