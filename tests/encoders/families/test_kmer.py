"""The k-mer spectrum encoder (k = 3..6 concatenated) used by the quickstart."""

import numpy as np
import pytest

from geneb.encoders.families.kmer import KmerEncoder, from_settings
from geneb.registry.spec import Extraction, ExtractionSettings


def test_spectrum_is_the_per_k_vectors_concatenated_each_summing_to_one():
    seqs = ["ACGTACGTTTGCANNAC", "ttgcaACGTRYAAAAC"]
    spectrum = KmerEncoder([3, 4, 5, 6]).embed(seqs).embeddings
    assert spectrum.shape == (2, 64 + 256 + 1024 + 4096)
    blocks = [KmerEncoder(k).embed(seqs).embeddings for k in (3, 4, 5, 6)]
    assert np.array_equal(spectrum, np.concatenate(blocks, axis=1))
    assert np.allclose([b.sum(axis=1) for b in blocks], 1.0)


def test_spectrum_from_registry_settings_and_errors():
    enc = from_settings(ExtractionSettings("kmer-spectrum", "kmer", Extraction(), builtin={"k": [3, 4, 5, 6]}))
    assert enc.identity()["k"] == [3, 4, 5, 6]
    with pytest.raises(ValueError, match="distinct integers between 1 and 8"):
        KmerEncoder([3, 3])
    with pytest.raises(ValueError, match="distinct integers between 1 and 8"):
        KmerEncoder([3, 9])
    # a row too short for the largest k has no 6-mer: that block is zero and the row is flagged, never silent
    res = enc.embed(["ACGTA", "ACGTACGT"], rows=[42, 43])
    assert res.empty.tolist() == [True, False]
    assert not res.embeddings[0, -(4**6) :].any() and res.embeddings[0, : 4**3].sum() == pytest.approx(1.0)


def test_letters_outside_acgt_are_counted_as_unknown_tokens():
    """A k-mer encoder skips every window holding N or an IUPAC code; it counts those letters as unknown tokens,
    as a tokenizer counts UNK, so the score rows and the report's hygiene table see them."""
    res = KmerEncoder(3).embed(["ACGTACGT", "ACGNNRACGT", "acgtn"], rows=[0, 1, 2])
    assert (res.counters.unknown_rows, res.counters.unknown_tokens) == (2, 4)
    assert KmerEncoder([3, 4]).embed(["ACGT"]).counters.unknown_tokens == 0
