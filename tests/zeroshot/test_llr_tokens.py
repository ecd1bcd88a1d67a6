"""Which tokens a variant changes (geneb.zeroshot.llr): one base per token, non-overlapping 6-mers,
overlapping k-mers and the real DNABERT-2 BPE tokenizer."""

from __future__ import annotations

import pytest
from lm_heads_support import kmer_tokenize, kmer_vocab, one_base_tokenize

from geneb.zeroshot.llr import (
    _overlapping_kmer_tokenize,
    _reverse_variant,
    _variant_tokens,
)

SEQ = "ACGTTGCAGTCAACGGTACA"  # 20 bases


def test_one_base_per_token_changes_the_token_at_the_variant():
    vt = _variant_tokens(one_base_tokenize({"A": 0, "C": 1, "G": 2, "T": 3}), SEQ, 5, "G", "A")
    assert vt.aligned and vt.ref_span == (5, 6)
    assert vt.ref.ids[5] == 2 and vt.alt.ids[5] == 0 and vt.first == 5


def test_non_overlapping_6mer_changes_the_kmer_holding_the_variant():
    vocab = kmer_vocab(6)
    vt = _variant_tokens(kmer_tokenize(vocab, 6), SEQ, 8, "G", "C")
    # 20 bases: three 6-mers then two single bases; base 8 is in the second 6-mer
    assert vt.ref.spans == ((0, 6), (6, 12), (12, 18), (18, 19), (19, 20))
    assert vt.aligned and vt.ref_span == (1, 2)
    words = {i: w for w, i in vocab.items()}
    ref_word, alt_word = words[vt.ref.ids[1]], words[vt.alt.ids[1]]
    assert ref_word == "CAGTCA" and alt_word == "CACTCA"  # the two k-mers differ only at the variant
    tail = _variant_tokens(kmer_tokenize(vocab, 6), SEQ, 19, "A", "T")
    assert tail.ref_span == (4, 5)  # the tail base is its own token


def test_overlapping_kmers_change_every_kmer_covering_the_variant():
    k = 3
    vt = _variant_tokens(_overlapping_kmer_tokenize(kmer_vocab(k), k), SEQ, 8, "G", "C")
    assert vt.aligned and vt.ref_span == (6, 9)  # k-mers starting at 6, 7, 8 hold base 8
    assert all(vt.ref.ids[i] != vt.alt.ids[i] for i in range(6, 9))
    edge = _variant_tokens(_overlapping_kmer_tokenize(kmer_vocab(k), k), SEQ, 0, "A", "C")
    assert edge.ref_span == (0, 1)  # only the first k-mer holds the window's first base


@pytest.fixture(scope="module")
def dnabert2(shared):
    from transformers import AutoTokenizer

    from geneb.zeroshot.llr import _hf_tokenize as hf_tokenize

    return hf_tokenize(AutoTokenizer.from_pretrained(shared / "models" / "tokenizers" / "dnabert-2-117m"))


def test_real_dnabert2_bpe_aligned_variant(dnabert2):
    seq = "ACGTAGCTAGCTAGGATCGATCGATTTACGAGCAT"
    vt = _variant_tokens(dnabert2, seq, 10, "C", "T")
    # the real BPE keeps the same merges here: one 4-base token (9, 13) changes
    assert vt.aligned and vt.ref_span == (3, 4) and vt.ref.spans[3] == (9, 13)
    assert vt.ref.ids[3] != vt.alt.ids[3]


def test_real_dnabert2_bpe_merges_differently_around_a_variant(dnabert2):
    seq = "TTCGTGCTTAGTACGCGTCTACACATTATGCTTTGCGTGACCGCCGGATCAACGCTAACG"
    vt = _variant_tokens(dnabert2, seq, 17, "T", "A")
    # ref splits (16, 21) + (21, 25); alt merges the same bases into one token (16, 25)
    assert not vt.aligned
    assert vt.ref.spans[slice(*vt.ref_span)] == ((16, 21), (21, 25))
    assert vt.alt.spans[slice(*vt.alt_span)] == ((16, 25),)
    assert vt.ref.ids[: vt.first] == vt.alt.ids[: vt.first]  # tokens before the span are the same


def test_reverse_strand_and_bad_variants():
    assert _reverse_variant("AACG", 1, "A", "G") == ("CGTT", 2, "T", "C")
    tokenize = one_base_tokenize({"A": 0, "C": 1, "G": 2, "T": 3})
    with pytest.raises(ValueError, match="reference base 'T'"):
        _variant_tokens(tokenize, SEQ, 0, "T", "C")
    with pytest.raises(ValueError, match="one base different"):
        _variant_tokens(tokenize, SEQ, 0, "A", "A")
