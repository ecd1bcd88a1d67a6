"""The k-let shuffle keeps every k-let count and the ends, on real promoter and enhancer sequences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shuffle_support import klet_counts

from geneb.zeroshot.scorers import klet_shuffle


def real_sequences(tasks: Path, task: str, n: int) -> list[str]:
    df = pd.read_csv(tasks / task / "train.csv.gz")
    return [str(s) for s in df["sequence"].head(n)]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_shuffle_keeps_klet_counts_and_ends_on_real_sequences(k, real_tasks):
    rng = np.random.default_rng(7)
    seqs = real_sequences(real_tasks, "gue_prom_300_tata", 60) + real_sequences(
        real_tasks, "ienhancer2l_enhancer_vs_non", 60
    )
    changed = 0
    for seq in seqs:
        out = klet_shuffle(seq, k, rng)
        assert len(out) == len(seq)
        assert klet_counts(out, k) == klet_counts(seq, k)
        assert klet_counts(out, 1) == klet_counts(seq, 1)
        if k > 1:
            assert out[: k - 1] == seq[: k - 1] and out[-(k - 1) :] == seq[-(k - 1) :]
        changed += out != seq
    assert changed == len(seqs)  # a real sequence of 200-300 bases is never returned unshuffled


def test_shuffle_is_seeded(real_tasks):
    seq = real_sequences(real_tasks, "gue_prom_300_tata", 1)[0]
    a = klet_shuffle(seq, 2, np.random.default_rng(1))
    assert a == klet_shuffle(seq, 2, np.random.default_rng(1))
    assert a != klet_shuffle(seq, 2, np.random.default_rng(2))


def test_short_sequences_and_bad_k():
    assert klet_shuffle("AC", 2, np.random.default_rng(0)) == "AC"
    with pytest.raises(ValueError, match="k >= 1"):
        klet_shuffle("ACGT", 0, np.random.default_rng(0))
