"""Failure cases of kind "tokenization" (../shared/cases/CASES.md): B11, B12, B13, B14, B16, B17.

Real tokenizers (DNABERT-2 and GENA-LM BPE from ../shared/models, NT's 6-mer scheme) on tiny checkpoints
loaded through the real adapters. Policy: docs/footguns.md ("Tokenization").
"""

from __future__ import annotations

import logging

import h5py
import numpy as np
import pandas as pd
import pytest
import torch
from extraction_support import ENCODERS, make_task, random_dna, zoo  # noqa: F401

from geneb.embeddings.errors import EmptyPoolError, ExtractionError, LongSequenceError
from geneb.embeddings.extract import extract_task
from geneb.models.kmer import KmerEncoder
from geneb.models.registry import extraction_settings, load_registry
from geneb.models.tokenmodel import resolve_max_tokens
from geneb.tasks.alphabet import AlphabetPolicy, SequenceError

# ---- B11 ----------------------------------------------------------------------------------------------------------


def test_B11_stray_whitespace_loader_policy():
    """'ACGT \\r': stripped only under strip_whitespace; otherwise an error naming the row, '\\r' escaped."""
    assert AlphabetPolicy(strip_whitespace=True).apply("ACGT \r", task="t", split="train", row=7) == "ACGT"
    with pytest.raises(SequenceError) as err:
        AlphabetPolicy().apply("ACGT \r", task="t", split="train", row=7)
    assert "row 7" in str(err.value) and "\\r" in str(err.value)


@pytest.mark.parametrize("kind", ["bert", "bigbird", "esm", "hyena"])
def test_B11_batched_tokenization_is_rectangular_with_mask(zoo, kind):
    """Ragged token counts always become (B, T) ids plus an attention mask that marks exactly the real tokens."""
    enc = zoo.encoder(kind)
    seqs = [random_dna(n, n) for n in (5, 61, 17, 250)]
    chunks, *_ = enc.make_chunks(seqs, list(range(len(seqs))))
    ids, attn, pmask = enc.batch_tensors(chunks)
    assert ids.shape == attn.shape == pmask.shape == (len(chunks), max(len(c.ids) for c in chunks))
    assert ids.dtype == torch.long
    assert attn.sum(dim=1).tolist() == [len(c.ids) for c in chunks]
    assert ((pmask == 1) <= (attn == 1)).all()  # never pool a pad


def test_B11_unknown_letters_are_counted_and_logged(zoo, caplog):
    """An IUPAC code (allowed by the alphabet policy) that a BPE vocabulary lacks reaches the model as UNK: logged."""
    enc = zoo.encoder("hyena")  # character tokenizer: A C G T N only
    with caplog.at_level(logging.WARNING):
        enc.embed(["ACGTRYACGT", "ACGT"], [10, 11])
    assert enc.last_unk == (1, 2)
    assert "unknown-token ids" in caplog.text and "row 10" in caplog.text


# ---- B12 ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["kmer", "bert", "mistral-dna"])
def test_B12_bare_string_is_refused(zoo, kind):
    enc = KmerEncoder(3) if kind == "kmer" else zoo.encoder(kind)
    with pytest.raises(TypeError, match="not one string"):
        enc.embed("ATGC")
    assert enc.embed(["ATGC"]).embeddings.shape[0] == 1


def test_B12_three_row_csv_gives_three_vectors_in_order(zoo, tmp_path):
    """A 3-row CSV -> exactly 3 pooled vectors, in the CSV's row order (batching sorts by length internally)."""
    seqs = [random_dna(300, 1), random_dna(20, 2), random_dna(120, 3)]
    pd.DataFrame({"sequence": seqs, "label": [0, 1, 0]}).to_csv(tmp_path / "t.csv", index=False)
    read = pd.read_csv(tmp_path / "t.csv")["sequence"].tolist()
    enc = zoo.encoder("mistral-dna", batch_size=3)
    res = enc.embed(read)
    assert res.embeddings.shape == (3, 64)
    for i, s in enumerate(seqs):
        np.testing.assert_allclose(res.embeddings[i], enc.embed([s]).embeddings[0], atol=1e-5)


# ---- B13 ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["truncate", "chunk_mean"])
def test_B13_overlong_rows_follow_long_policy(zoo, make_task, tmp_path, policy):
    """max_tokens 512 and a 3000-nt row: the policy is applied before inference and counted per task."""
    settings = zoo.settings("bert", max_tokens=512, long_policy=policy)
    long_row = random_dna(3000, 8)
    task = make_task([long_row, random_dna(100, 9)], [random_dna(50, 10)])
    out = tmp_path / "e.h5"
    extract_task(settings, task, out, progress=False)
    with h5py.File(out, "r") as f:
        g = f["train"]
        if policy == "truncate":
            assert g["truncated"][:].tolist() == [True, False] and g.attrs["n_truncated"] == 1
            assert g["n_chunks"][:].tolist() == [1, 1] and g["n_tokens"][0] == 510
        else:
            assert g["n_chunks"][0] >= 2 and g.attrs["n_chunked"] == 1 and g.attrs["n_truncated"] == 0
            assert g["n_tokens"][0] > 510
        assert np.isfinite(g["embeddings"][:]).all()


def test_B13_without_the_cap_the_forward_pass_would_crash(zoo):
    """What GENEB prevents: 600 BPE tokens through a 512-position table fails inside the model."""
    enc = zoo.encoder("bert", max_tokens=512)
    ids = torch.tensor([enc._tokenize([random_dna(3000, 8)])[0]])
    assert ids.shape[1] > 512
    with pytest.raises((IndexError, RuntimeError)):
        enc.model(input_ids=ids)


def test_B13_long_policy_error(zoo, make_task, tmp_path):
    settings = zoo.settings("bert", max_tokens=512, long_policy="error")
    task = make_task([random_dna(3000, 8)], [random_dna(50, 10)], task="long")
    with pytest.raises(LongSequenceError, match="model tiny-bert, task long, split train: .*row 0"):
        extract_task(settings, task, tmp_path / "e.h5", progress=False)
    assert not (tmp_path / "e.h5").exists()


def test_B13_length_multiple_trims_and_logs(zoo, make_task, tmp_path, caplog):
    """length_multiple 4: a 1482-nt row is trimmed to 1480 (documented rule: drop the trailing len % 4 bases)."""
    settings = zoo.settings("hyena", length_multiple=4)
    task = make_task([random_dna(1482, 11), random_dna(400, 12)], [random_dna(41, 13)])
    with caplog.at_level(logging.INFO):
        extract_task(settings, task, tmp_path / "e.h5", progress=False)
    assert "length_multiple 4" in caplog.text
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f["train"]["trimmed_bases"][:].tolist() == [2, 0]
        assert f["train"]["n_tokens"][0] == 1480  # char tokens; the appended [SEP] is excluded
        assert f["test"]["trimmed_bases"][:].tolist() == [1]


# ---- B14 ----------------------------------------------------------------------------------------------------------


def test_B14_resolve_max_tokens(caplog):
    assert resolve_max_tokens(int(1e30), 1000, None, model="X") == 1000
    assert resolve_max_tokens(512, 514, None, model="X") == 512
    with pytest.raises(ValueError, match="no usable max length for model X"):
        resolve_max_tokens(int(1e30), None, None, model="X")
    with caplog.at_level(logging.WARNING):
        assert resolve_max_tokens(512, 1024, 1000, model="NT") == 1000
    assert "registry max_tokens 1000 differs" in caplog.text and "NT" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert resolve_max_tokens(1000, 1000, 1000, model="NT") == 1000
    assert caplog.text == ""


def test_B14_real_tokenizers_report_the_sentinel(zoo, shared):
    """The real DNABERT-2 / GENA-LM tokenizers carry the 1e30 'not set' value; the model config decides."""
    from transformers import AutoTokenizer

    for name in ("dnabert-2-117m", "gena-lm-bigbird-base-t2t"):
        assert AutoTokenizer.from_pretrained(shared / "models" / "tokenizers" / name).model_max_length >= 10**29
    enc = zoo.encoder("bert", max_tokens=None)
    assert enc.max_tokens == 512  # max_position_embeddings of the tiny BERT


# ---- B16 ----------------------------------------------------------------------------------------------------------


def test_B16_n_runs_same_rows_for_every_model(zoo, repo, make_task, tmp_path):
    """200 N inside 300 ACGT: finite vectors for BPE, 6-mer and k-mer models, and the same scored rows for all."""
    n_row = random_dna(150, 14) + "N" * 200 + random_dna(150, 15)
    task = make_task([n_row, random_dna(300, 16), "N" * 7 + random_dna(60, 17)], [n_row, random_dna(90, 18)])
    registry = load_registry(repo / "config" / "models.yaml")
    settings = {"kmer-3": extraction_settings(registry, "kmer-3", {}),
                "random-esm-tiny": extraction_settings(registry, "random-esm-tiny", {}),
                **{f"tiny-{k}": zoo.settings(k) for k in ("bert", "bigbird")}}  # fmt: skip
    rows = {}
    for name, s in settings.items():
        out = tmp_path / f"{name}.h5"
        extract_task(s, task, out, progress=False)
        with h5py.File(out, "r") as f:
            assert not [k for k in f.attrs if "skip" in k.lower()]
            rows[name] = {split: f[split]["row"][:].tolist() for split in ("train", "test")}
            assert all(np.isfinite(f[split]["embeddings"][:]).all() for split in ("train", "test"))
            assert (f["train"]["n_tokens"][:] > 0).all()
    assert all(r == {"train": [0, 1, 2], "test": [0, 1]} for r in rows.values()), rows
    assert not list(tmp_path.rglob("skipped_rows*"))


def test_B16_a_row_one_model_cannot_embed_fails_the_job_not_the_row(repo, make_task, tmp_path):
    """GENEB never drops a row for one model: an all-N row under k-mers is an error naming the row, no file."""
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    task = make_task([random_dna(50, 19), "N" * 40], [random_dna(50, 20)], task="alln")
    with pytest.raises((EmptyPoolError, ExtractionError), match="task alln, split train: row 1"):
        extract_task(settings, task, tmp_path / "e.h5", progress=False)
    assert not (tmp_path / "e.h5").exists()


# ---- B17 ----------------------------------------------------------------------------------------------------------


def test_B17_bpe_token_counts_differ_output_rectangular(zoo, make_task, tmp_path):
    """'A'*100 and a random 100-nt row through DNABERT-2's BPE: different token counts, one (2, d) float32 array."""
    enc = zoo.encoder("bert")
    a, r = "A" * 100, random_dna(100, 21)
    counts = [len(t) for t in enc._tokenize([a, r])]
    assert counts[0] != counts[1]
    task = make_task([a, r], [r])
    extract_task(zoo.settings("bert"), task, tmp_path / "e.h5", progress=False)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        emb = f["train"]["embeddings"]
        assert emb.shape == (2, 32) and emb.dtype == np.float32
        assert f["train"]["n_tokens"][:].tolist() == counts and min(counts) > 0


@pytest.mark.parametrize("kind", ENCODERS)
def test_B17_every_encoder_gives_one_row_per_sequence(zoo, kind):
    seqs = ["A" * 100, random_dna(100, 22), random_dna(7, 23)]
    res = zoo.encoder(kind).embed(seqs)
    assert res.embeddings.shape[0] == 3 and res.embeddings.dtype == np.float32 and (res.n_tokens > 0).all()
