"""Failure cases of kind "pooling" (../shared/cases/CASES.md): B02, B04, B05, B06, B07.

Every test runs real checkpoints built from configs (geneb.models.tiny) through the real registry and
adapters; the policy each enforces is in docs/footguns.md ("Pooling").
"""

from __future__ import annotations

import json
import logging

import h5py
import numpy as np
import pytest
import torch
from extraction_support import DECODERS, KINDS, make_task, random_dna, zoo  # noqa: F401

from geneb.embeddings.checks import check_padding_invariance
from geneb.embeddings.errors import EmptyPoolError
from geneb.embeddings.extract import extract_task
from geneb.embeddings.pooling import last_real_index, pool
from geneb.models.registry import check_registry, extraction_settings, load_registry
from geneb.models.tokenmodel import Chunk

MASKED = [k for k in KINDS if k not in ("hyena",)]  # every zoo model that takes an attention mask


# ---- B02: no attention mask ---------------------------------------------------------------------------------------


def test_B02_hyena_padding_invariance(zoo):
    """A causal long-convolution model with no attention mask: 37 nt alone == 37 nt batched with 200 nt."""
    enc = zoo.encoder("hyena")
    assert enc.uses_attention_mask is False
    assert not enc.bucket_equal_lengths  # causal + right padding: pads sit after every real position
    report = check_padding_invariance(enc, random_dna(37, 1), [random_dna(200, 2)], atol=1e-4).require()
    assert report.max_abs_diff <= 1e-5


def test_B02_bidirectional_model_without_mask_gets_equal_length_batches(zoo):
    """A bidirectional model run without a mask (Caduceus-style) never sees a pad: equal-length batches."""
    enc = zoo.encoder("bert", attention_mask=False)
    assert enc.uses_attention_mask is False and enc.bucket_equal_lengths
    check_padding_invariance(enc, random_dna(37, 1), [random_dna(200, 2), random_dna(37, 3)], atol=1e-4).require()
    with pytest.raises(ValueError, match="B02"):
        zoo.encoder("bert", attention_mask=False, bucket_by_length=False)


def test_B02_left_padding_without_mask_is_refused(zoo):
    """The reference defect (left padding, no mask) cannot be configured: the validator and the engine refuse it."""
    registry = zoo.registry("hyena", padding_side="left")
    assert any("left padding" in p for p in check_registry(registry))
    with pytest.raises(ValueError, match="left padding"):
        zoo.encoder("hyena", padding_side="left")


def test_B02_registry_has_no_left_padded_maskless_model(repo):
    """The shipped registry passes the same check (load_registry runs it on every load)."""
    registry = load_registry(repo / "config" / "models.yaml")
    assert not [p for p in check_registry(registry) if "B02" in p]
    bad = {"models": {"x": {**registry["models"]["hyenadna-medium-160k-seqlen-hf"], "extraction": {"padding_side": "left"}}}}
    assert any("left padding" in p for p in check_registry(bad))


# ---- B04: fixed padding from tokenizer files ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*MASKED, "hyena"])
def test_B04_padding_longest_vs_max_length(zoo, kind):
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


def test_B04_fixed_padding_in_tokenizer_files_is_overridden(zoo, tmp_path, caplog):
    """A tokenizer.json with padding to 128 and truncation baked in: GENEB switches both off and says so."""
    import shutil

    folder = tmp_path / "bert-fixed-pad"
    shutil.copytree(zoo.folder("bert"), folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["padding"] = {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 3,
                      "pad_type_id": 0, "pad_token": "[PAD]"}  # fmt: skip
    tok["truncation"] = {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    from geneb.embeddings.extract import build_encoder
    from extraction_support import spec

    with caplog.at_level(logging.INFO):
        enc = build_encoder(extraction_settings({"models": {"fixed": spec(folder, "hf-encoder", {"max_tokens": 64})}}, "fixed", {}),
                            progress=False)  # fmt: skip
    seq = random_dna(300, 5)
    ids = enc._tokenize([seq])[0]
    assert 16 < len(ids) < 128  # neither truncated to 16 nor padded to 128
    assert "overridden" in caplog.text and "padding" in caplog.text
    assert "padding right" in caplog.text  # the settings actually used are logged
    reference = zoo.encoder("bert", batch_size=1).embed([seq]).embeddings
    np.testing.assert_allclose(enc.embed([seq]).embeddings, reference, atol=1e-6)


# ---- B05: the shared mask-aware pooling helper --------------------------------------------------------------------


def test_B05_mean_over_pad_positions():
    """hidden [[1,1],[3,3],[99,99]], mask [1,1,0]: mean [2,2], max [3,3], last [3,3], cls [1,1]."""
    h = torch.tensor([[[1.0, 1.0], [3.0, 3.0], [99.0, 99.0]]])
    m = torch.tensor([[1, 1, 0]])
    assert pool(h, m, "mean").tolist() == [[2.0, 2.0]]
    assert pool(h, m, "max").tolist() == [[3.0, 3.0]]
    assert pool(h, m, "last").tolist() == [[3.0, 3.0]]
    assert pool(h, m, "cls").tolist() == [[1.0, 1.0]]


@pytest.mark.parametrize("method", ["mean", "max", "cls", "last"])
def test_B05_empty_mask_names_the_row(method):
    h = torch.ones(2, 3, 2)
    with pytest.raises(EmptyPoolError, match="row 17"):
        pool(h, torch.tensor([[1, 0, 0], [0, 0, 0]]), method, rows=[16, 17])


def test_B05_only_special_tokens_left_is_an_error_not_nan(zoo):
    """A sequence whose only real position is a special token, with special tokens excluded: error naming the row."""
    enc = zoo.encoder("esm")
    with pytest.raises(EmptyPoolError, match="row 5"):
        enc._forward_batch([Chunk(0, [3], [0])], [5])


# ---- B06: special tokens and pads in NT -----------------------------------------------------------------------------


def test_B06_nt_special_tokens_and_padding(zoo):
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


def test_B06_policy_and_counts_in_hdf5(repo, make_task, tmp_path):
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


# ---- B07: last-token pooling with right padding -------------------------------------------------------------------


def test_B07_last_real_index_unit():
    assert last_real_index(np.array([[1, 1, 1, 0, 0]])).tolist() == [2]
    assert last_real_index(np.array([[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])).tolist() == [4, 0]


@pytest.mark.parametrize("kind", [*DECODERS, "mistral-dna"])
def test_B07_last_token_pooling_right_padding(zoo, kind):
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
