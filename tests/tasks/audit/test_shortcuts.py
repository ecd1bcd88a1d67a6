"""Shortcut features: exact values on hand-made sequences, the N rule, errors, and the vectorised counts against a
plain-Python count."""

from __future__ import annotations

import random

import numpy as np
import pytest

from geneb.tasks import audit
from geneb.tasks.audit import GROUPS, ShortcutInputError, _features, _kmer_names, feature_matrix, feature_names


def _reference(seq: str) -> list[float]:
    up = seq.upper()
    base = {b: up.count(b) for b in "ACGT"}
    n = sum(base.values())

    def kmers(k: int) -> tuple[list[float], dict[str, int]]:
        counts = dict.fromkeys(_kmer_names(k), 0)
        for i in range(len(up) - k + 1):
            if up[i : i + k] in counts:
                counts[up[i : i + k]] += 1
        total = sum(counts.values())
        return [v / total if total else np.nan for v in counts.values()], counts

    di, di_counts = kmers(2)
    tri, _ = kmers(3)
    gc = (base["C"] + base["G"]) / n if n else np.nan
    mono = [base[b] / n if n else np.nan for b in "ACGT"]
    oe = di_counts["CG"] * n / (base["C"] * base["G"]) if base["C"] * base["G"] else np.nan
    return [len(seq), gc, *mono, *di, *tri, oe]


def test_hand_computed_values():
    x, names = feature_matrix(["ACGTN"])
    row = dict(zip(names, x[0]))
    assert row["length"] == 5  # N counts in the length
    assert row["gc"] == 0.5 and row["mono_A"] == 0.25  # ... but not in the composition
    assert row["di_AC"] == row["di_CG"] == row["di_GT"] == pytest.approx(1 / 3)  # TN is not a dinucleotide
    assert row["tri_ACG"] == row["tri_CGT"] == 0.5
    assert row["cpg_oe"] == pytest.approx(1 * 4 / (1 * 1))


def test_soft_masked_equals_upper_and_n_only_is_nan():
    assert np.array_equal(_features(["acgTTg"], "di"), _features(["ACGTTG"], "di"))
    x, names = feature_matrix(["NNNN", "ANNA"])
    row = dict(zip(names, x[0]))
    assert row["length"] == 4 and np.isnan(row["gc"]) and np.isnan(row["di_AA"]) and np.isnan(row["cpg_oe"])
    second = dict(zip(names, x[1]))
    assert second["gc"] == 0 and np.isnan(second["di_AA"])  # two A's, no unambiguous pair


@pytest.mark.parametrize("chunk", [1 << 22, 37])
def test_vectorised_counts_match_python(monkeypatch, chunk):
    monkeypatch.setattr(audit, "_CHUNK_BASES", chunk)
    rng = random.Random(3)
    seqs = ["".join(rng.choice("ACGTNacgtRY") for _ in range(rng.randint(0, 60))) for _ in range(300)]
    x, names = feature_matrix(seqs)
    assert x.shape == (300, 1 + 1 + 4 + 16 + 64 + 1) and len(names) == x.shape[1]
    np.testing.assert_allclose(x, np.array([_reference(s) for s in seqs]), equal_nan=True)


def test_shapes_and_names():
    for group in GROUPS:
        assert _features([], group).shape == (0, len(feature_names(group)))
        assert _features(["ACGT", "GG"], group).dtype == np.float64
    assert feature_names("di")[6] == "di_CG"


def test_errors_name_row_and_value():
    with pytest.raises(ShortcutInputError, match=r"task 't', row 1: sequence is None"):
        _features(["ACGT", None], "gc", where="task 't', ")  # type: ignore[list-item]
    with pytest.raises(ShortcutInputError, match=r"row 0: non-ASCII character 'é'"):
        _features(["ACéGT"], "gc")
    with pytest.raises(ShortcutInputError, match="unknown shortcut feature group 'gcc'"):
        _features(["ACGT"], "gcc")
