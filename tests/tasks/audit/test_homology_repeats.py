"""A repeat-rich homolog: a test row made of tandem repeats at about 93 % identity (substitutions and indels) to a
training row is leaked, on either strand. Under MMseqs2's default low-complexity masking (tantan, `--mask 1`) the
prefilter keeps no k-mer of such a row and proposes no candidate at all, so the homolog was missed; GENEB searches
unmasked (geneb.tasks.homology, `mask_low_complexity`)."""

from __future__ import annotations

import random

import pytest

from geneb.tasks.homology import HomologyParams, homology_leakage, semiglobal_identity
from geneb.tasks.validation import reverse_complement


def _dna(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ACGT") for _ in range(n))


def _tandem(rng: random.Random, n: int, unit_length: int) -> str:
    """n letters of one random unit repeated, about a third of the copies with one letter changed (a minisatellite)."""
    unit, out = _dna(rng, unit_length), ""
    while len(out) < n:
        copy = list(unit)
        if rng.random() < 0.3:
            copy[rng.randrange(unit_length)] = rng.choice("ACGT")
        out += "".join(copy)
    return out[:n]


def _diverge(rng: random.Random, seq: str, substitutions: int, indels: int) -> str:
    """`seq` with substitutions and single-letter insertions or deletions away from its ends."""
    out = list(seq)
    for p in rng.sample(range(5, len(out) - 5), substitutions):
        out[p] = rng.choice([b for b in "ACGT" if b != out[p]])
    for _ in range(indels):
        p = rng.randrange(5, len(out) - 5)
        if rng.random() < 0.5:
            del out[p]
        else:
            out.insert(p, rng.choice("ACGT"))
    return "".join(out)


@pytest.fixture(scope="module")
def splits():
    rng = random.Random(11)
    train = [_dna(rng, 200) for _ in range(150)]
    train[0], train[1] = _tandem(rng, 200, 6), _tandem(rng, 200, 4)
    test = [
        _diverge(rng, train[0], 10, 4),  # 0: repeat-rich, forward strand
        reverse_complement(_diverge(rng, train[1], 10, 4)),  # 1: repeat-rich, reverse strand
        _diverge(rng, train[2], 10, 4),  # 2: an ordinary homolog at the same divergence
        *(_dna(rng, 200) for _ in range(12)),  # unrelated
    ]
    return train, test


def test_planted_rows_are_about_93_percent_identical(splits):
    train, test = splits
    identities = [
        semiglobal_identity(test[0], train[0])[0],
        semiglobal_identity(reverse_complement(test[1]), train[1])[0],
        semiglobal_identity(test[2], train[2])[0],
    ]
    assert all(0.91 <= i <= 0.95 for i in identities), identities


def test_repeat_rich_homologs_are_found_unmasked(splits):
    train, test = splits
    result = homology_leakage(train, test, task="synthetic-repeats")
    assert result.leaked_rows == [0, 1, 2]
    assert result.best_train_rows == [0, 1, 2]
    assert all(0.9 <= s < 1 for s in result.best_similarity)
    assert result.params["mask_low_complexity"] is False  # recorded in the audit's parameters
    command = result.params["command"]
    assert command[command.index("--mask") + 1] == "0" and command[command.index("--mask-lower-case") + 1] == "0"


def test_masking_low_complexity_proposes_no_candidate_for_them(splits):
    """MMseqs2's default: the repeat-rich rows get no candidate and stay "clean"; the ordinary homolog is found.
    What the unmasked default above is for."""
    train, test = splits
    result = homology_leakage(train, test, HomologyParams(mask_low_complexity=True), task="synthetic-repeats")
    assert result.params["mask_low_complexity"] is True
    assert result.leaked_rows == [2]
