"""Homology by true identity: every MMseqs2 candidate is re-scored by a semi-global alignment of the whole test row
(geneb.tasks.homology), so mismatching ends that MMseqs2's local alignment clips count against the row.

The 92 % row below is the case the issue names: MMseqs2's fident x qcov is 0.971 x 0.890 = 0.864 (its local
alignment drops the first 11 and last 11 letters), under the 0.9 threshold, so the row stayed in the clean subset."""

from __future__ import annotations

import random

import pytest

from geneb.tasks.homology import AlignmentTooLargeError, HomologyParams, homology_leakage, semiglobal_identity
from geneb.tasks.validation import reverse_complement

# 16 substitutions in 200 letters (92 %): six in each end's first 12 letters, four in the middle
ENDS_92 = [1, 3, 5, 7, 9, 11, 189, 191, 193, 195, 197, 199, 50, 90, 130, 170]
# 30 substitutions spread evenly over the whole row, ends included (85 %)
EVEN_85 = [3 + (200 * i) // 30 for i in range(30)]


def _dna(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ACGT") for _ in range(n))


def _substitute(rng: random.Random, seq: str, positions: list[int]) -> str:
    out = list(seq)
    for p in positions:
        out[p] = rng.choice([b for b in "ACGT" if b != out[p]])
    return "".join(out)


@pytest.fixture(scope="module")
def splits():
    rng = random.Random(7)
    train = [_dna(rng, 200) for _ in range(300)]
    test = [
        _substitute(rng, train[3], ENDS_92),  # 0: 92 % with mismatching ends
        reverse_complement(_substitute(rng, train[4], ENDS_92)),  # 1: the same on the other strand
        _substitute(rng, train[5], EVEN_85),  # 2: 85 % over the whole row
        train[6],  # 3: an exact copy
        _dna(rng, 200),  # 4: unrelated
    ]
    return train, test


def test_semiglobal_identity_counts_the_whole_test_row():
    rng = random.Random(0)
    train = _dna(rng, 200)
    assert semiglobal_identity(train, train) == (1.0, 1.0)
    assert semiglobal_identity(train[20:180], train) == (1.0, 0.8)  # inside a longer training row: a copy
    substituted = _substitute(rng, train, [0, 199, 100])  # mismatches at both ends are not clipped
    assert semiglobal_identity(substituted, train) == (197 / 200, 1.0)
    deleted = train[:100] + train[101:]  # one training letter between two test letters: 199 / 200 columns
    assert semiglobal_identity(deleted, train) == (199 / 200, 1.0)
    longer = _dna(rng, 40) + train  # the test row's own overhang is not free: 200 of 240 letters match
    identity, _ = semiglobal_identity(longer, train)
    assert identity < 0.85
    assert semiglobal_identity("NNNN" + train[4:], train)[0] == 196 / 200  # N is identical to nothing
    with pytest.raises(ValueError, match="non-empty"):
        semiglobal_identity("", train)


def test_scores_beyond_16_bits_are_aligned_with_32_bits():
    import parasail

    from geneb.tasks import homology as identity

    rng = random.Random(5)
    train = _dna(rng, 100)
    test = train + _dna(rng, 20_000)  # 20,000 test letters against gaps: a score of -39,805, below -32,768
    assert parasail.sg_dx_trace_scan_16(test, train, 7, 2, identity._matrix()).saturated
    wide = parasail.sg_dx_trace_scan_32(test, train, 7, 2, identity._matrix()).get_traceback()
    columns = len(wide.query.strip("-"))
    matches = sum(a == b for a, b in zip(wide.query, wide.ref) if a != "-")
    assert semiglobal_identity(test, train) == (matches / columns, 1.0)
    assert semiglobal_identity(test, train)[0] < 0.05


def test_too_large_alignment_is_an_error_naming_the_lengths(monkeypatch):
    from geneb.tasks import homology as identity

    monkeypatch.setattr(identity, "MAX_CELLS", 100)
    with pytest.raises(AlignmentTooLargeError, match="20-letter test row against a 10-letter"):
        semiglobal_identity("A" * 20, "A" * 10)


def test_row_at_92_percent_with_mismatching_ends_leaves_the_clean_subset(splits):
    train, test = splits
    before = homology_leakage(train, test, HomologyParams(rescore=False))
    assert before.leaked_rows == [3]  # MMseqs2's local similarity misses rows 0 and 1 (the bug)
    result = homology_leakage(train, test, task="synthetic")
    assert result.leaked_rows == [0, 1, 3]
    assert result.best_train_rows == [3, 4, 6]
    assert result.best_similarity == [0.92, 0.92, 1.0]  # 184 of 200 letters identical, on either strand
    assert all(s < 0.9 for s in result.best_similarity_mmseqs[:2])  # what MMseqs2 alone said
    assert result.n_leaked_mmseqs_similarity == 1 and result.n_leaked_by_search == 3
    assert "semi-global" in result.params["similarity"]


def test_row_at_85_percent_is_proposed_but_stays_below_the_threshold(splits):
    train, test = splits
    result = homology_leakage(train, [test[2]], task="synthetic")
    assert result.n_hits >= 1 and result.n_rescored >= 1  # MMseqs2 proposed the pair ...
    assert result.leaked_rows == []  # ... and the whole-row identity (about 0.85) keeps it clean
    assert homology_leakage(train, [test[2]], HomologyParams(threshold=0.84)).best_similarity[0] == pytest.approx(
        0.85, abs=0.01
    )


def test_exact_duplicate_scores_one_and_is_found_by_the_search(splits):
    train, test = splits
    result = homology_leakage(train, [test[3]])
    assert result.leaked_rows == [0] and result.best_similarity == [1.0] and result.best_train_rows == [6]
    assert result.n_exact == 1 and result.n_leaked_by_search == 1 and result.n_exact_not_found_by_search == 0


def test_pairs_mmseqs_does_not_propose_are_not_invented(splits):
    train, test = splits
    # a prefilter of 99 % local identity proposes none of the 92 % rows: re-scoring adds nothing of its own
    strict = homology_leakage(train, test[:2], HomologyParams(prefilter_identity=0.99))
    assert strict.n_hits == 0 and strict.n_rescored == 0 and strict.leaked_rows == []
    # an unrelated test row gets no candidate at all
    assert homology_leakage(train, [test[4]]).n_hits == 0


def test_prefilter_bounds_are_checked():
    with pytest.raises(ValueError, match="prefilter_identity 1.5 not in"):
        HomologyParams(prefilter_identity=1.5)


def test_a_training_row_too_short_to_reach_the_threshold_is_not_aligned(splits):
    train, _ = splits
    rng = random.Random(11)
    longer = train[8] + _dna(rng, 20)  # identity at most 200 / 220 = 0.909
    strict = homology_leakage(train, [longer], HomologyParams(threshold=0.95))
    assert strict.n_hits >= 1 and strict.n_rescored == 0 and strict.leaked_rows == []
    default = homology_leakage(train, [longer])
    assert default.n_rescored >= 1 and default.leaked_rows == [0]
    assert default.best_similarity == [pytest.approx(200 / 220, abs=1e-4)]
