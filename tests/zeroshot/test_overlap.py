"""Leak checks by content (geneb.zeroshot.overlap): a reference sequence held in a task row is found whatever its
strand or name; unrelated sequences share nothing; canonical k-mer codes agree across strands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geneb.zeroshot.overlap import _kmer_codes, content_overlap
from geneb.zeroshot.task import ZeroShotTask

_COMP = str.maketrans("ACGT", "TGCA")


def _random(rng: np.random.Generator, n: int) -> str:
    return "".join(rng.choice(list("ACGT"), size=n))


def _variant_task(windows: list[str]) -> ZeroShotTask:
    rows = pd.DataFrame(
        [{"sequence": w, "pos": 5, "ref": w[5], "alt": "A" if w[5] != "A" else "C", "label": i % 2, "group": f"g{i}"}
         for i, w in enumerate(windows)]
    )  # fmt: skip
    return ZeroShotTask(name="windows", kind="variant", rows=rows, data_sha256="0" * 64)


def test_a_planted_reference_sequence_is_found_on_either_strand():
    rng = np.random.default_rng(0)
    windows = [_random(rng, 300) for _ in range(12)]
    piece = _random(rng, 70)
    windows[4] = windows[4][:100] + piece + windows[4][170:]
    windows[9] = windows[9][:50] + piece.translate(_COMP)[::-1] + windows[9][120:]
    reference = [_random(rng, 70) for _ in range(500)] + [piece, "ACGT" * 5]
    found = content_overlap(_variant_task(windows), reference)
    assert found.rows_sharing == (4, 9) and found.rows_containing == (4, 9)
    assert found.reference_sharing == (500,) and found.reference_contained == (500,)
    assert found.n_reference_short == 1  # the 20-base one: too short for a 31-mer
    # a 40-base overlap without containment: shared k-mers, nothing held whole
    partial = content_overlap(_variant_task(windows), [piece[:40] + _random(rng, 60)])
    assert partial.rows_sharing == (4, 9) and partial.rows_containing == ()


def test_unrelated_sequences_share_nothing_and_the_chunks_do_not_matter(monkeypatch):
    rng = np.random.default_rng(1)
    task = _variant_task([_random(rng, 200) for _ in range(10)])
    reference = [_random(rng, 150) for _ in range(300)] + [task.rows["sequence"].iloc[2][10:90]]
    whole = content_overlap(task, reference)
    monkeypatch.setattr("geneb.zeroshot.overlap._CHUNK_BASES", 500)  # many chunks: the same answer
    assert content_overlap(task, reference) == whole
    assert whole.rows_sharing == (2,) and whole.reference_sharing == (300,)


def test_canonical_codes_are_strand_free_and_skip_other_letters():
    seq = "ACGTTGCAAGGCTTAC"
    forward, _ = _kmer_codes([seq], 5)
    reverse, _ = _kmer_codes([seq.translate(_COMP)[::-1]], 5)
    assert sorted(forward.tolist()) == sorted(reverse.tolist()) and len(forward) == len(seq) - 4
    with_n, owner = _kmer_codes(["ACGTNACGTA", "CCCCC"], 4)
    # ACGT; then ACGT, CGTA after the N; CCCC twice: no k-mer spans the N or the two sequences
    assert owner.tolist() == [0, 0, 0, 1, 1] and with_n[0] == with_n[1]
    with pytest.raises(ValueError, match="outside 1..31"):
        _kmer_codes([seq], 32)
