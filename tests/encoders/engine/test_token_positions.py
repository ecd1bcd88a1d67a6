"""The tokens that hold one base (geneb.encoders.engine.chunking): the mapping for one-base, non-overlapping and
overlapping k-mer, codon and the real DNABERT-2 BPE tokenizer, and the states a tiny real-code model gives there."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from extraction_support import random_dna
from geneb.encoders.engine.chunking import chunk_bounds
from geneb.encoders.engine.views import (
    NoTokenPositions,
    _spans_from_token_texts,
    _text_to_base,
    _tokens_at_base,
    embed_at_positions,
)
from geneb.registry.spec import InputTransform


def test_text_characters_map_back_to_their_bases():
    kmers = _text_to_base(len("ACG CGT GTA"), InputTransform(kind="overlapping-kmers", k=3))
    assert kmers.tolist() == [0, 1, 2, -1, 1, 2, 3, -1, 2, 3, 4]
    assert _text_to_base(len("ATG GCT"), InputTransform(kind="codons")).tolist() == [0, 1, 2, -1, 3, 4, 5]
    assert _text_to_base(4, None).tolist() == [0, 1, 2, 3]


def test_one_base_non_overlapping_and_overlapping_kmer_tokens():
    # one token per base, no offsets (HyenaDNA's character tokenizer): token i is base i
    assert _tokens_at_base(None, 10, 10, 7, None) == [7]
    with pytest.raises(NoTokenPositions, match="no character offsets"):
        _tokens_at_base(None, 2, 10, 7, None)
    # non-overlapping 6-mers: base 7 is in the second token only
    assert _tokens_at_base([(0, 6), (6, 12)], 2, 12, 7, None) == [1]
    # overlapping 3-mers as DNABERT-1 reads them: a middle base is in 3 tokens, an edge base in one
    k = InputTransform(kind="overlapping-kmers", k=3)
    offsets = [(4 * t, 4 * t + 3) for t in range(4)]  # "ACG CGT GTA TAG"
    assert _tokens_at_base(offsets, 4, 15, 2, k) == [0, 1, 2]
    assert _tokens_at_base(offsets, 4, 15, 0, k) == [0]
    assert _tokens_at_base(offsets, 4, 15, 5, k) == [3]
    # frame-0 codons: base 4 is in codon 1
    assert _tokens_at_base([(0, 3), (4, 7)], 2, 7, 4, InputTransform(kind="codons")) == [1]
    with pytest.raises(ValueError, match="no token holds base 3"):
        _tokens_at_base([(0, 3), (4, 7)], 2, 7, 3, None)  # a dropped base


def test_the_real_dnabert2_bpe_tokenizer_places_every_base_in_one_token(shared):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(shared / "models" / "tokenizers" / "dnabert-2-117m" / "tokenizer.json"))
    seq = random_dna(300, 5)
    enc = tokenizer.encode(seq, add_special_tokens=False)
    assert len(enc.ids) < len(seq)  # multi-base tokens: the mapping is not the identity
    for pos in range(len(seq)):
        held = _tokens_at_base(enc.offsets, len(enc.ids), len(seq), pos, None)
        assert len(held) == 1
        start, end = enc.offsets[held[0]]
        assert start <= pos < end
        assert tokenizer.id_to_token(enc.ids[held[0]]) == seq[start:end]


def test_a_slow_tokenizer_whose_tokens_spell_the_text_is_placed_by_their_lengths(repo):
    # the Nucleotide Transformer's 6-mer tokenizer (random-esm-tiny's): 6-mers, then single bases; no offsets
    from geneb.extract.step import build_encoder
    from geneb.registry.load import extraction_settings, load_registry

    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "random-esm-tiny", {})
    encoder = build_encoder(settings, progress=False)
    seq = "ACGTACGTTAGCAGGCTAACGTACGATNACGTA"
    body = encoder._tokenize([seq])[0]
    assert encoder._offsets is None
    spans = _spans_from_token_texts(encoder._token_texts(body), seq)
    assert spans[:4] == [(0, 6), (6, 12), (12, 18), (18, 24)] and spans[4:] == [(i, i + 1) for i in range(24, 33)]
    assert _tokens_at_base(spans, len(body), len(seq), 13, None) == [2]
    assert _spans_from_token_texts(["AC", "GG"], "ACGT") is None  # tokens that do not spell the text
    vectors = embed_at_positions(encoder, [seq, seq], [0, 1], [13, 14])
    np.testing.assert_array_equal(vectors[0], vectors[1])  # two bases of one 6-mer: one token's state


def _state_by_hand(encoder, seq: str, pos: int) -> np.ndarray:
    """The configured layer's state of the token holding `pos`, from one forward pass of its chunk alone."""
    body = encoder._tokenize([seq])[0]
    held = [t for t, (s, e) in enumerate(encoder._offsets[0]) if s <= pos < e]
    start, end = next(b for b in chunk_bounds(len(body), encoder.body_cap) if b[0] <= held[0] < b[1])
    ids, attn, _ = encoder.batch_tensors([encoder.chunk(0, body[start:end])])
    with torch.inference_mode():
        hidden = encoder.hidden_states(ids, attn)
    first = len(encoder.prefix) + len(encoder.strand)
    return hidden[0, [first + t - start for t in held]].float().mean(0).numpy()


def test_states_at_a_base_are_those_of_its_token_in_its_own_chunk(zoo):
    encoder = zoo.encoder("bert", batch_size=2)  # BPE (DNABERT-2's tokenizer), 64-token chunks
    long_row, short_row = random_dna(700, 1), random_dna(90, 2)
    assert len(encoder._tokenize([long_row])[0]) > encoder.body_cap  # the variant sits in a later chunk
    got = embed_at_positions(encoder, [long_row, short_row, short_row], [10, 11, 12], [650, 3, 60])
    assert got.shape == (3, encoder.hidden_size) and got.dtype == np.float32
    for i, (seq, pos) in enumerate([(long_row, 650), (short_row, 3), (short_row, 60)]):
        np.testing.assert_allclose(got[i], _state_by_hand(encoder, seq, pos), atol=1e-5)
    assert not np.allclose(got[1], got[2])  # two bases of one row: two different tokens' states
    with pytest.raises(ValueError, match="row 11: position 90 outside its 90 bases"):
        embed_at_positions(encoder, [long_row, short_row], [10, 11], [1, 90])
