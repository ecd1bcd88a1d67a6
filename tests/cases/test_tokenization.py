"""Failure cases of kind "tokenization" (../shared/cases/CASES.md): stray characters and UNK, a bare
string, over-long inputs, the real maximum length, N runs and skipped rows, BPE token counts.

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

from extraction_support import ENCODERS, random_dna, spec
from geneb.core.errors import (
    DroppedInputError,
    LongSequenceError,
    MaxLengthError,
    ModelForwardError,
)
from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.families.hf import _position_offset
from geneb.encoders.families.kmer import KmerEncoder
from geneb.extract.cache import read_embeddings
from geneb.extract.step import build_encoder, extract_task
from geneb.registry.load import extraction_settings, load_registry
from geneb.tasks.validation import AlphabetPolicy, SequenceError


def min_chunk_tokens(cap: int, multiple: int | None = None) -> int:
    """The fewest body tokens any chunk of a multi-chunk row has under `chunk_bounds`: half the body cap,
    rounded down to the length multiple (a row that fits is one chunk of any length)."""
    unit = int(multiple or 1)
    return (cap // unit // 2) * unit


def _local(folder, family, name, **extraction):
    """Settings of a one-entry registry for a local checkpoint folder."""
    return extraction_settings({"models": {name: spec(folder, family, extraction)}}, name, {})


# ---- stray characters, UNK tokens and ragged batches --------------------------------------------------------------


def test_stray_whitespace_loader_policy():
    """'ACGT \\r': stripped only under strip_whitespace; otherwise an error naming the row, '\\r' escaped."""
    assert AlphabetPolicy(strip_whitespace=True).apply("ACGT \r", task="t", split="train", row=7) == "ACGT"
    with pytest.raises(SequenceError) as err:
        AlphabetPolicy().apply("ACGT \r", task="t", split="train", row=7)
    assert "row 7" in str(err.value) and "\\r" in str(err.value)


@pytest.mark.parametrize("kind", ["bert", "bigbird", "esm", "hyena"])
def test_batched_tokenization_is_rectangular_with_mask(zoo, kind):
    """Ragged token counts always become (B, T) ids plus an attention mask that marks exactly the real tokens."""
    enc = zoo.encoder(kind)
    seqs = [random_dna(n, n) for n in (5, 61, 17, 250)]
    chunks, *_ = enc.make_chunks(seqs, list(range(len(seqs))))
    ids, attn, pmask = enc.batch_tensors(chunks)
    assert ids.shape == attn.shape == pmask.shape == (len(chunks), max(len(c.ids) for c in chunks))
    assert ids.dtype == torch.long
    assert attn.sum(dim=1).tolist() == [len(c.ids) for c in chunks]
    assert ((pmask == 1) <= (attn == 1)).all()  # never pool a pad


def test_unknown_letters_are_counted_and_logged(zoo, caplog):
    """An IUPAC code (allowed by the alphabet policy) that a BPE vocabulary lacks reaches the model as UNK: logged,
    and counted in the call's result (each call its own counts: a clean call after it counts none)."""
    enc = zoo.encoder("hyena")  # character tokenizer: A C G T N only
    with caplog.at_level(logging.WARNING):
        res = enc.embed(["ACGTRYACGT", "ACGT"], [10, 11])
    assert (res.counters.unknown_rows, res.counters.unknown_tokens) == (1, 2)
    assert "unknown-token ids" in caplog.text and "row 10" in caplog.text
    clean = enc.embed(["ACGTACGT"], [12]).counters
    assert (clean.unknown_rows, clean.unknown_tokens) == (0, 0)


@pytest.fixture(scope="module")
def bpe_no_unk(tmp_path_factory):
    """A tiny GPT-2 with a byte-pair vocabulary trained on ACGT only and no UNK token (tokenizers' BPE with
    unk_token=None, common for DNA BPEs): it has no token for N or IUPAC codes and silently drops them."""
    import json

    import transformers as tf
    from tokenizers import Tokenizer, models, trainers

    folder = tmp_path_factory.mktemp("bpe_no_unk")
    tok = Tokenizer(models.BPE(unk_token=None))
    trainer = trainers.BpeTrainer(vocab_size=64, special_tokens=["<pad>", "<s>", "</s>"], initial_alphabet=list("ACGT"))
    tok.train_from_iterator([random_dna(500, i) for i in range(50)], trainer)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>"})
    )
    torch.manual_seed(0)
    cfg = tf.GPT2Config(
        vocab_size=tok.get_vocab_size(), n_embd=16, n_layer=1, n_head=2, n_positions=256, bos_token_id=1, eos_token_id=2
    )
    tf.GPT2Model(cfg).save_pretrained(folder)
    return folder


def test_bpe_without_unk_dropping_letters_is_an_error(bpe_no_unk):
    """50 N (or 4 IUPAC codes) inside 120 ACGT: the tokenizer gives the same 47 tokens as for the 120 ACGT
    alone; GENEB raises DroppedInputError naming model, row and how many letters have no token."""
    enc = build_encoder(_local(bpe_no_unk, "hf-decoder", "bpe-nounk", max_tokens=256), progress=False)
    assert enc.unk_id is None
    left, right = random_dna(60, 1), random_dna(60, 2)
    plain, n_run, iupac = left + right, left + "N" * 50 + right, left + "RYKM" + right
    assert enc._tokenize([n_run])[0] == enc._tokenize([iupac])[0] == enc._tokenize([plain])[0]  # the trap
    assert enc.embed([plain], [3]).embeddings.shape == (1, 16)
    with pytest.raises(DroppedInputError, match=r"model bpe-nounk, row 11: 50 letters have no token") as err:
        enc.embed([plain, n_run], [10, 11])
    assert err.value.rows == [11]
    with pytest.raises(DroppedInputError, match=r"model bpe-nounk, row 5: 4 letters have no token") as err:
        enc.embed([iupac, plain], [5, 6])
    assert err.value.rows == [5]
    # without UNK the spans are shifted (the gap shows at the row's end), so a tail of one repeated letter must
    # not pass for a run the normalizer collapsed on purpose
    for row in (left + "NN" + random_dna(54, 2) + "AAAAAA", left + "NNNN" + "GGGGGGGG"):
        with pytest.raises(DroppedInputError, match=r"row 8: \d letters have no token \(its vocabulary has no UNK"):
            enc.embed([row], [8])


def test_gena_lm_n_run_collapsed_on_purpose_is_not_an_error(zoo, shared):
    """The real GENA-LM tokenizer maps an N run (N{10,}) to one '-' token: 199 of 200 N have no character span,
    yet nothing is lost by accident, so it embeds without DroppedInputError (the same rows for every model)."""
    enc = zoo.encoder("bigbird")
    real = shared / "models" / "tokenizers" / "gena-lm-bigbird-base-t2t" / "tokenizer.json"
    assert (zoo.folder("bigbird") / "tokenizer.json").read_bytes() == real.read_bytes()
    seq = random_dna(150, 14) + "N" * 200 + random_dna(150, 15)
    spans = enc.tokenizer(seq, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    covered = {i for a, b in spans for i in range(a, b)}
    assert len(seq) - len(covered) == 199 and set(range(150, 349)).isdisjoint(covered)  # the run has no spans
    res = enc.embed([seq, "NNNNN" + random_dna(60, 16)], [3, 4])
    assert np.isfinite(res.embeddings).all() and (res.n_tokens > 0).all()


def test_extract_task_rechecks_prepared_sequences(zoo, make_task, tmp_path):
    """A parquet written by other means than prepare_task, with a space inside a row: extract_task applies the
    alphabet check again (a BPE tokenizer would swallow the space) and names task, split, row and character."""
    task = make_task([random_dna(40, 1), "ACGTACGG TACGT"], [random_dna(40, 2)], task="ws")
    out = tmp_path / "e.h5"
    with pytest.raises(
        SequenceError,
        match=r"model tiny-bert, task ws, split train: task 'ws', split 'train', row 1: "
        r"character ' ' at position 8",
    ):
        extract_task(zoo.settings("bert"), task, out, progress=False)
    assert not out.exists()
    task = make_task([random_dna(40, 1)], [random_dna(40, 2), "ACGTACGTAC\r"], task="cr")
    with pytest.raises(SequenceError, match=r"split 'test', row 1: character '\\r' at position 10"):
        extract_task(zoo.settings("bert"), task, out, progress=False)


def test_row_of_only_unk_tokens_is_an_error(zoo):
    """A row every letter of which is outside the character vocabulary (IUPAC codes) reaches the model as nothing
    but UNK tokens: DroppedInputError naming model and every such row at once (a row with some UNK is only counted,
    above)."""
    enc = zoo.encoder("hyena")
    assert enc.unk_id is not None
    with pytest.raises(
        DroppedInputError, match=r"model tiny-hyena, 1 row\(s\) \(7\): every token of each is UNK"
    ) as err:
        enc.embed(["ACGTACGT", "RYKMRYKM"], [6, 7])
    assert err.value.rows == [7]
    # every offending row of the call is named at once, not only the first
    with pytest.raises(DroppedInputError, match=r"2 row\(s\) \(7, 9\)") as err:
        enc.embed(["ACGTACGT", "RYKMRYKM", "ACGTAAAA", "MMMMRRRR"], [6, 7, 8, 9])
    assert err.value.rows == [7, 9]
    assert enc.embed(["ACGTACGT", "RYKMACGT"], [6, 7]).embeddings.shape[0] == 2


def _wordpiece_bert(folder, vocab, *, lowercase=False, max_chars=100):
    """A tiny BERT behind a BERT-style WordPiece tokenizer ([CLS] $A [SEP]) over `vocab` (after 5 specials)."""
    import transformers as tf
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *vocab]
    tok = Tokenizer(
        models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=max_chars)
    )
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tf.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(folder)
    torch.manual_seed(0)
    tf.BertModel(
        tf.BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
            pad_token_id=0,
        )
    ).save_pretrained(folder)
    return folder


def test_lowercasing_normalizer_over_an_uppercase_vocabulary_fails_at_load(tmp_path):
    """DNABERT-1 style overlapping 6-mers over an uppercase 6-mer vocabulary, saved with BertNormalizer's default
    lowercasing (a common hub misconfiguration): every k-mer becomes [UNK], so every row would embed alike. The
    load-time probe finds it (DroppedInputError); the same vocabulary without lowercasing loads and embeds."""
    import itertools

    kmers = ["".join(p) for p in itertools.product("ACGT", repeat=6)]
    kt = {"kind": "overlapping-kmers", "k": 6}
    lower = _wordpiece_bert(tmp_path / "lower", kmers, lowercase=True)
    with pytest.raises(
        DroppedInputError,
        match=r"model kmer-lower: the tokenizer reads a plain ACGT probe sequence as UNK "
        r"\((\d+) of \1 tokens\)",
    ):
        build_encoder(_local(lower, "hf-encoder", "kmer-lower", max_tokens=512, input_transform=kt), progress=False)
    upper = _wordpiece_bert(tmp_path / "upper", kmers)
    enc = build_encoder(_local(upper, "hf-encoder", "kmer-upper", max_tokens=512, input_transform=kt), progress=False)
    res = enc.embed([random_dna(100, 1), random_dna(100, 2)])
    assert res.counters.unknown_tokens == 0 and not np.allclose(res.embeddings[0], res.embeddings[1])


def test_wordpiece_word_longer_than_its_limit_fails_at_load(tmp_path):
    """A WordPiece tokenizer (single letters and ## pieces) with max_input_chars_per_word 100 turns any longer
    'word' (a whole DNA row) into one [UNK]: the load-time probe, longer than the limit, is one UNK token."""
    folder = _wordpiece_bert(tmp_path / "wp", [*"ACGTN", *("##" + c for c in "ACGTN")], max_chars=100)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    assert tok(random_dna(150, 1), add_special_tokens=False)["input_ids"] == [tok.unk_token_id]  # the trap
    with pytest.raises(
        DroppedInputError,
        match=r"model wp-100: the tokenizer reads a plain ACGT probe sequence as UNK "
        r"\(1 of 1 tokens\)",
    ):
        build_encoder(_local(folder, "hf-encoder", "wp-100", max_tokens=512), progress=False)


_SKIPPING_TOKENIZER = '''
from transformers import PreTrainedTokenizer


class SkipTokenizer(PreTrainedTokenizer):
    """A slow (Python) character tokenizer without UNK handling: letters outside its vocabulary are skipped."""

    vocab_files_names = {}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, **kwargs):
        names = ["[CLS]", "[SEP]", "[BOS]", "[MASK]", "[PAD]", "[RESERVED]", "[UNUSED]", "A", "C", "G", "T"]
        self._v = {t: i for i, t in enumerate(names)}
        super().__init__(pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", **kwargs)

    @property
    def vocab_size(self):
        return len(self._v)

    def get_vocab(self):
        return dict(self._v)

    def _tokenize(self, text, **kwargs):
        return [c for c in text if c in self._v]

    def _convert_token_to_id(self, token):
        return self._v[token]

    def _convert_id_to_token(self, index):
        return {v: k for k, v in self._v.items()}[index]

    def build_inputs_with_special_tokens(self, a, b=None):
        return a + [self._v["[SEP]"]]

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()
'''


def test_slow_tokenizer_skipping_letters_is_an_error(tmp_path):
    """A remote-code checkpoint whose slow tokenizer (no character spans) skips N and IUPAC codes: the letters its
    tokens spell are counted against the row's, and a row with 34 skipped letters is DroppedInputError."""
    import json
    import uuid

    from tiny_models import write_remote_hyena

    folder = write_remote_hyena(
        tmp_path / f"hyena-slow-{uuid.uuid4().hex[:12]}"
    )  # remote code is cached by folder name
    (folder / "tokenizer.json").unlink()
    (folder / "tokenization_skip.py").write_text(_SKIPPING_TOKENIZER)
    auto_map = {"AutoTokenizer": ["tokenization_skip.SkipTokenizer", None]}
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "SkipTokenizer", "auto_map": auto_map})
    )
    entry = spec(folder, "hyena", {"max_tokens": 1024}, trust=True, load={"transformers": ">=4.26"})
    enc = build_encoder(extraction_settings({"models": {"slow-skip": entry}}, "slow-skip", {}), progress=False)
    assert not enc.tokenizer.is_fast and enc.unk_id is None
    plain = random_dna(40, 1)
    skipped = plain[:20] + "N" * 30 + "RYKM" + plain[20:]
    assert enc._tokenize([skipped]) == enc._tokenize([plain])  # the trap: the same tokens
    assert enc.embed([plain], [0]).embeddings.shape[0] == 1
    with pytest.raises(
        DroppedInputError, match=r"model slow-skip, row 1: its tokens spell 40 of its 74 letters"
    ) as err:
        enc.embed([plain, skipped], [0, 1])
    assert err.value.rows == [1]


# ---- a bare string where a list of sequences is expected ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["kmer", "bert", "mistral-dna"])
def test_bare_string_is_refused(zoo, kind):
    enc = KmerEncoder(3) if kind == "kmer" else zoo.encoder(kind)
    with pytest.raises(TypeError, match="not one string"):
        enc.embed("ATGC")
    assert enc.embed(["ATGC"]).embeddings.shape[0] == 1


@pytest.mark.parametrize("kind", ["kmer", "bert", "mistral-dna"])
def test_bytes_and_non_text_elements_are_refused(zoo, kind):
    """bytes / bytearray would iterate as integers, a bytes or None element is not a sequence: TypeError naming
    the row and the type; a tuple, numpy array or pandas Series of str is fine (one vector per element)."""
    enc = KmerEncoder(3) if kind == "kmer" else zoo.encoder(kind)
    with pytest.raises(TypeError, match=r"embed\(\) takes a list of sequences, not one bytes object"):
        enc.embed(b"ATGC")
    with pytest.raises(TypeError, match=r"not one bytearray object"):
        enc.embed(bytearray(b"ATGC"))
    with pytest.raises(TypeError, match=r"row 8: a sequence must be text \(str\), got bytes b'ATGC'"):
        enc.embed(["ATGC", b"ATGC"], [7, 8])
    with pytest.raises(TypeError, match=r"row 1: a sequence must be text \(str\), got NoneType"):
        enc.embed(["ATGC", None])
    for ok in (("ATGC", "GGCA"), np.array(["ATGC", "GGCA"]), pd.Series(["ATGC", "GGCA"])):
        assert enc.embed(ok).embeddings.shape[0] == 2


def test_three_row_csv_gives_three_vectors_in_order(zoo, tmp_path):
    """A 3-row CSV -> exactly 3 pooled vectors, in the CSV's row order (batching sorts by length internally)."""
    seqs = [random_dna(300, 1), random_dna(20, 2), random_dna(120, 3)]
    pd.DataFrame({"sequence": seqs, "label": [0, 1, 0]}).to_csv(tmp_path / "t.csv", index=False)
    read = pd.read_csv(tmp_path / "t.csv")["sequence"].tolist()
    enc = zoo.encoder("mistral-dna", batch_size=3)
    res = enc.embed(read)
    assert res.embeddings.shape == (3, 64)
    for i, s in enumerate(seqs):
        np.testing.assert_allclose(res.embeddings[i], enc.embed([s]).embeddings[0], atol=1e-5)


# ---- over-long inputs and model length rules ----------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["truncate", "chunk_mean"])
def test_overlong_rows_follow_long_policy(zoo, make_task, tmp_path, policy):
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


def test_without_the_cap_the_forward_pass_would_crash(zoo):
    """What GENEB prevents: 600 BPE tokens through a 512-position table fails inside the model."""
    enc = zoo.encoder("bert", max_tokens=512)
    ids = torch.tensor([enc._tokenize([random_dna(3000, 8)])[0]])
    assert ids.shape[1] > 512
    with pytest.raises((IndexError, RuntimeError)):
        enc.model(input_ids=ids)


def test_long_policy_error(zoo, make_task, tmp_path):
    settings = zoo.settings("bert", max_tokens=512, long_policy="error")
    task = make_task([random_dna(3000, 8)], [random_dna(50, 10)], task="long")
    with pytest.raises(LongSequenceError, match="model tiny-bert, task long, split train: .*row 0"):
        extract_task(settings, task, tmp_path / "e.h5", progress=False)
    assert not (tmp_path / "e.h5").exists()


def test_length_multiple_trims_and_logs(zoo, make_task, tmp_path, caplog):
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


def _length_rule(model, multiple):
    """Give a loaded model a SegmentNT-style length rule (the tokens before the appended [SEP] must be a
    multiple of `multiple`), checked in its own forward pass; returns the list of lengths it ran."""
    inner, seen = model.forward, []

    def forward(input_ids, *args, **kwargs):
        n = input_ids.shape[1] - 1
        if n % multiple:
            raise ValueError(f"sequence length {n} (without [SEP]) must be divisible by {multiple}")
        seen.append(n)
        return inner(input_ids, *args, **kwargs)

    model.forward = forward
    return seen


def test_length_multiple_holds_for_every_chunk(zoo):
    """length_multiple 4 and max_tokens 100 (room for 99 bases before the appended [SEP]): a 1482-nt row is
    trimmed to 1480 and cut into chunks of at most 96 bases (not 99), so a model with that length rule runs
    every chunk."""
    enc = build_encoder(zoo.settings("hyena", length_multiple=4, max_tokens=100), batch_size=4, progress=False)
    assert enc.suffix == [enc.tokenizer.sep_token_id] and enc.body_cap == 96
    chunks, n_chunks, _, trimmed = enc.make_chunks([random_dna(1482, 11), random_dna(400, 12)], [0, 1])
    bodies = [len(c.ids) - 1 for c in chunks]
    assert all(b % 4 == 0 for b in bodies) and max(bodies) == 96
    assert sum(bodies) == 1480 + 400 and n_chunks.tolist() == [16, 5] and trimmed.tolist() == [2, 0]
    seen = _length_rule(enc.model, 4)
    res = enc.embed([random_dna(1482, 11), random_dna(400, 12)], [0, 1])
    assert (
        res.n_chunks.tolist() == [16, 5] and res.n_tokens.tolist() == [1480, 400] and np.isfinite(res.embeddings).all()
    )
    assert seen and all(n % 4 == 0 for n in seen)


def test_model_forward_error_names_model_and_rows(zoo):
    """Without length_multiple the same rule breaks inside the model's forward pass: ModelForwardError naming
    the model, the batch shape and the rows, with the model's own error kept as the cause."""
    enc = build_encoder(zoo.settings("hyena", max_tokens=100), batch_size=4, progress=False)
    assert enc.body_cap == 99
    _length_rule(enc.model, 4)
    with pytest.raises(
        ModelForwardError,
        match=r"model tiny-hyena: the forward pass failed on a batch of 4 x 100 tokens "
        r"\(rows 42(, 42)*\): ValueError: sequence length 99 \(without \[SEP\]\) must be divisible by 4",
    ) as err:
        enc.embed([random_dna(1482, 11)], [42])
    assert set(err.value.rows) == {42}  # one row, cut into chunks
    assert isinstance(err.value.__cause__, ValueError)


def test_rc_is_of_the_kept_window_under_length_multiple(zoo):
    """length_multiple 4 and a 43-nt row: the forward strand embeds its first 40 bases, so the RC half of concat
    (and of average) is exactly embed(rc(seq[:40])), not the RC of the whole row trimmed at its own end
    (rc(seq[3:]), another window)."""
    from geneb.extract.step import embed_with_rc
    from geneb.tasks.validation import reverse_complement as rc

    enc = zoo.encoder("bert", length_multiple=4)
    seq = random_dna(43, 12)
    keep = seq[:40]
    fwd, rev = enc.embed([keep]).embeddings[0], enc.embed([rc(keep)]).embeddings[0]
    concat = embed_with_rc(enc, [seq], [0], "concat")
    d = concat.embeddings.shape[1] // 2
    np.testing.assert_allclose(concat.embeddings[0, :d], fwd, atol=1e-5)
    np.testing.assert_allclose(concat.embeddings[0, d:], rev, atol=1e-5)
    assert concat.trimmed_bases.tolist() == [3]
    average = embed_with_rc(enc, [seq], [0], "average")
    np.testing.assert_allclose(average.embeddings[0], (fwd + rev) / 2, atol=1e-5)
    other_window = enc.embed([rc(seq[3:])]).embeddings[0]
    assert not np.allclose(concat.embeddings[0, d:], other_window, atol=1e-3)


def test_rc_with_long_policy_truncate_is_refused(zoo):
    """rc average/concat with long_policy truncate would combine the first window of the forward strand with the
    first window of the reverse one (the row's other end): extraction_settings refuses it (RegistryError), and
    so does embed_with_rc for an encoder built another way; rc none + truncate and rc + chunk_mean are fine."""
    from geneb.extract.step import embed_with_rc
    from geneb.registry.registry import RegistryError

    for mode in ("average", "concat"):
        with pytest.raises(RegistryError, match=rf"model tiny-bert: rc '{mode}' with long_policy truncate"):
            extraction_settings(zoo.registry("bert", rc=mode, long_policy="truncate"), "tiny-bert", {})
    extraction_settings(zoo.registry("bert", rc="none", long_policy="truncate"), "tiny-bert", {})
    extraction_settings(zoo.registry("bert", rc="average", long_policy="chunk_mean"), "tiny-bert", {})
    enc = zoo.encoder("bert", long_policy="truncate")
    with pytest.raises(ValueError, match=r"rc 'average' with long_policy truncate"):
        embed_with_rc(enc, [random_dna(3000, 11)], [0], "average")


# ---- the real maximum length --------------------------------------------------------------------------------------


def test_resolve_max_tokens(caplog):
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


def test_real_tokenizers_report_the_sentinel(zoo, shared):
    """The real DNABERT-2 / GENA-LM tokenizers carry the 1e30 'not set' value; the model config decides."""
    from transformers import AutoTokenizer

    for name in ("dnabert-2-117m", "gena-lm-bigbird-base-t2t"):
        assert AutoTokenizer.from_pretrained(shared / "models" / "tokenizers" / name).model_max_length >= 10**29
    enc = zoo.encoder("bert", max_tokens=None)
    assert enc.max_tokens == 512  # max_position_embeddings of the tiny BERT


@pytest.fixture(scope="module")
def padding_idx_models(tmp_path_factory):
    """Tiny RoBERTa and absolute-position ESM checkpoints with 130 position rows and pad id 4, with a char
    tokenizer that sets no model_max_length (the 'not set' sentinel): only the config gives a maximum."""
    import transformers as tf

    from tiny_models import write_char_tokenizer

    folders = {}
    common = {
        "vocab_size": 12,
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 130,
        "pad_token_id": 4,
    }
    for kind, cfg in (
        ("roberta", tf.RobertaConfig(**common)),
        ("esm", tf.EsmConfig(**common, mask_token_id=3, position_embedding_type="absolute")),
    ):
        folders[kind] = tmp_path_factory.mktemp(kind)
        write_char_tokenizer(folders[kind], padding_side="right")
        torch.manual_seed(0)
        tf.AutoModel.from_config(cfg).save_pretrained(folders[kind])
    return folders


@pytest.mark.parametrize("kind", ["roberta", "esm"])
def test_padding_idx_offset_of_learned_positions(padding_idx_models, kind):
    """Positions numbered from padding_idx + 1: 130 rows and pad id 4 allow 130 - 4 - 1 = 125 tokens. A row of
    exactly that length ([SEP] included) embeds in one chunk; one base more gives two chunks, not a crash."""
    enc = build_encoder(_local(padding_idx_models[kind], "hf-encoder", f"tiny-{kind}"), progress=False)
    assert enc.tokenizer.model_max_length >= 10**9  # nothing from the tokenizer
    assert _position_offset(enc.model, 130) == 5
    assert enc.max_tokens == 125 and enc.max_tokens_from == "tokenizer/config" and enc.body_cap == 124
    res = enc.embed([random_dna(124, 1), random_dna(125, 2)])
    assert res.n_chunks.tolist() == [1, 2] and res.n_tokens.tolist() == [124, 125] and np.isfinite(res.embeddings).all()
    with pytest.raises((IndexError, RuntimeError)):  # the limit is real: 126 tokens fail inside the model
        enc.model(input_ids=torch.full((1, 126), 7))


def test_config_maximum_failing_in_the_forward_pass(padding_idx_models, monkeypatch):
    """A maximum from the model's files is tried once at load: if the offset were not found (here: hidden),
    130 tokens would index past the table, and loading fails with MaxLengthError naming model and length.
    A registry max_tokens is trusted as set (no load-time pass)."""
    monkeypatch.setattr("geneb.encoders.families.hf._position_offset", lambda model, positions: 0)
    folder = padding_idx_models["roberta"]
    with pytest.raises(
        MaxLengthError,
        match=r"model tiny-roberta: an input of its maximum length 130 tokens \(from the "
        r"tokenizer/config\) fails in the forward pass .*set extraction.max_tokens",
    ) as err:
        build_encoder(_local(folder, "hf-encoder", "tiny-roberta"), progress=False)
    assert isinstance(err.value.__cause__, ModelForwardError)
    enc = build_encoder(_local(folder, "hf-encoder", "tiny-roberta", max_tokens=125), progress=False)
    assert enc.max_tokens == 125 and enc.max_tokens_from == "registry"
    assert enc.embed([random_dna(124, 1)]).n_chunks.tolist() == [1]


# ---- N runs: the same rows for every model ------------------------------------------------------------------------


def test_n_runs_same_rows_for_every_model(zoo, repo, make_task, tmp_path):
    """200 N inside 300 ACGT: finite vectors for BPE, 6-mer and k-mer models, and the same scored rows for all."""
    n_row = random_dna(150, 14) + "N" * 200 + random_dna(150, 15)
    task = make_task([n_row, random_dna(300, 16), "N" * 7 + random_dna(60, 17)], [n_row, random_dna(90, 18)])
    registry = load_registry(repo / "config" / "models.yaml")
    settings = {
        "kmer-3": extraction_settings(registry, "kmer-3", {}),
        "random-esm-tiny": extraction_settings(registry, "random-esm-tiny", {}),
        **{f"tiny-{k}": zoo.settings(k) for k in ("bert", "bigbird")},
    }
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


@pytest.mark.parametrize("rc", ["none", "average"])
def test_an_all_n_row_keeps_its_place_as_the_flagged_zero_vector(repo, make_task, tmp_path, rc):
    """GENEB never drops a row for one model, nor refuses a whole task for one row: an all-N row under k-mers
    is the documented zero vector, flagged per row (`empty`) and counted (`n_empty_rows`), so every model
    scores the same rows."""
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    settings["extraction"]["rc"] = rc
    task = make_task([random_dna(50, 19), "N" * 40, random_dna(50, 21)], [random_dna(50, 20)], task="alln")
    extract_task(settings, task, tmp_path / "e.h5", progress=False)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        train = f["train"]
        assert train["row"][:].tolist() == [0, 1, 2] and train["empty"][:].tolist() == [False, True, False]
        assert not train["embeddings"][1].any() and train["n_tokens"][1] == 0
        assert np.allclose(train["embeddings"][[0, 2]].sum(axis=1), 1.0)
        assert train.attrs["n_empty_rows"] == 1 and f["test"].attrs["n_empty_rows"] == 0
    cache = read_embeddings(tmp_path / "e.h5")
    assert cache.splits["train"][0].shape == (3, 64)


# ---- BPE token counts differ; outputs stay rectangular ------------------------------------------------------------


def test_bpe_token_counts_differ_output_rectangular(zoo, make_task, tmp_path):
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
def test_every_encoder_gives_one_row_per_sequence(zoo, kind):
    seqs = ["A" * 100, random_dna(100, 22), random_dna(7, 23)]
    res = zoo.encoder(kind).embed(seqs)
    assert res.embeddings.shape[0] == 3 and res.embeddings.dtype == np.float32 and (res.n_tokens > 0).all()


def test_a_table_is_refused_not_iterated_by_column_name():
    import pandas as pd

    from geneb.encoders.families.kmer import KmerEncoder

    with pytest.raises(TypeError, match="not a table; pass its sequence column"):
        KmerEncoder(3).embed(pd.DataFrame({"sequence": ["ACGTACGT", "GGGGCCCC"]}))
    assert KmerEncoder(3).embed(pd.DataFrame({"sequence": ["ACGTACGT", "GGGGCCCC"]})["sequence"]).embeddings.shape == (
        2,
        64,
    )


def _greedy_bounds(n, cap, multiple=None):
    """The old chunking: full chunks of `cap` tokens and the remainder (a row of cap + 1 tokens
    gave [cap, 1])."""
    return [(s, min(s + cap, n)) for s in range(0, n, cap)]


def test_chunks_are_balanced_and_rows_that_fit_are_unchanged(zoo, monkeypatch):
    """max_tokens 100 (99 bases before the appended [SEP]): a 100-nt row becomes two 50-token chunks, not
    [99, 1], no chunk of a chunked row is under the documented minimum, and rows that fit are one
    chunk with bit-identical embeddings (the same batches as before whenever no row is chunked)."""
    from geneb.encoders.engine import chunking

    enc = build_encoder(zoo.settings("hyena", max_tokens=100), batch_size=4, progress=False)
    assert enc.body_cap == 99
    seqs = [random_dna(n, 20 + n) for n in (100, 30, 99, 250, 64, 199)]
    chunks, n_chunks, _, _ = enc.make_chunks(seqs, list(range(len(seqs))))
    bodies = {}
    for c in chunks:
        bodies.setdefault(c.seq_index, []).append(sum(c.pool_mask))
    assert bodies[0] == [50, 50] and bodies[1] == [30] and bodies[2] == [99] and bodies[3] == [84, 83, 83]
    assert n_chunks.tolist() == [2, 1, 1, 3, 1, 3]
    assert all(min(b) >= min_chunk_tokens(99) for b in bodies.values() if len(b) > 1)
    fits = [s for s in seqs if len(s) <= 99]
    balanced_fit = enc.embed(fits).embeddings
    enc.batch_size = 1  # one chunk per forward pass: a row's vector cannot depend on its batch mates
    balanced_all = enc.embed(seqs).embeddings
    monkeypatch.setattr(chunking, "chunk_bounds", _greedy_bounds)
    assert [len(c.ids) - 1 for c in enc.make_chunks(seqs[:1], [0])[0]] == [99, 1]  # what the old code did
    greedy_all = enc.embed(seqs).embeddings
    enc.batch_size = 4
    assert np.array_equal(enc.embed(fits).embeddings, balanced_fit)
    short = [i for i, s in enumerate(seqs) if len(s) <= 99]
    assert np.array_equal(greedy_all[short], balanced_all[short])
    assert not np.array_equal(greedy_all[0], balanced_all[0])


def test_unk_policy_error_refuses_unknown_tokens_and_writes_nothing(zoo, make_task, tmp_path):
    """`unk_policy: error` refuses letters that would reach the model as UNK, naming model, task, split and rows,
    and writes no file; `count` (the default) embeds and counts them. The policy is not in the settings hash:
    both give the same vectors, so they share one cache folder."""
    from geneb.core.errors import UnknownTokenError
    from geneb.registry.load import extraction_hash

    task = make_task([random_dna(40, 1), "ACGTRYACGT" * 3], [random_dna(30, 2)], task="iupac")
    strict = zoo.settings("hyena", unk_policy="error")
    counting = zoo.settings("hyena")
    assert "unk_policy" not in counting["extraction"] and strict["extraction"]["unk_policy"] == "error"
    assert extraction_hash(strict) == extraction_hash(counting)
    with pytest.raises(
        UnknownTokenError,
        match=r"model tiny-hyena, task iupac, split train: .*6 unknown-token ids in 1 rows \(rows 1\)",
    ):
        extract_task(strict, task, tmp_path / "strict.h5", progress=False)
    assert not (tmp_path / "strict.h5").exists()
    extract_task(counting, task, tmp_path / "count.h5", progress=False)
    with h5py.File(tmp_path / "count.h5", "r") as f:
        assert f["train"].attrs["n_unknown_tokens"] == 6 and f["test"].attrs["n_unknown_tokens"] == 0
    clean = make_task([random_dna(40, 3)], [random_dna(30, 4)], task="clean")
    extract_task(strict, clean, tmp_path / "clean.h5", progress=False)
    extract_task(counting, clean, tmp_path / "clean-count.h5", progress=False)
    with h5py.File(tmp_path / "clean.h5", "r") as a, h5py.File(tmp_path / "clean-count.h5", "r") as b:
        assert np.array_equal(a["train"]["embeddings"][:], b["train"]["embeddings"][:])
