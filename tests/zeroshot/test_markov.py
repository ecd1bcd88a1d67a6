"""The k-mer Markov chain baselines (geneb.zeroshot.scorers): likelihoods, the local-window shortcut, the
declared background."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from geneb.zeroshot.scorers import (
    Background,
    BackgroundLeakError,
    MarkovChain,
    _both_strands_log_likelihood,
    _encode,
    _window_index,
    _windows,
    background_from_tasks,
    fit_markov,
    markov_scores,
)
from geneb.zeroshot.task import ZeroShotTask


def log_likelihood(chain: MarkovChain, sequence: str) -> tuple[float, int]:
    """(log-likelihood in nats, number of scored bases) of one strand of `sequence`: the sum of log p(base |
    its `order` preceding bases) over every position from `order` on whose window holds no N."""
    index, valid = _window_index(_windows(_encode(sequence), chain.order + 1))
    return float(chain.log_prob[index[valid]].sum()), int(valid.sum())


def _dna(n: int, rng: np.random.Generator, alphabet: str = "ACGT") -> str:
    return "".join(rng.choice(list(alphabet), n))


def _dinucleotide_shuffle(seq: str, seed: int, swaps: int = 200) -> str:
    """A seeded shuffle keeping every dinucleotide count and the first base: swap two non-overlapping segments
    that both start with base x and end with base y (the boundary dinucleotides stay the same)."""
    rng = np.random.default_rng(seed)
    s = seq
    for _ in range(swaps):
        i, j, k, m = sorted(rng.choice(len(s), 4, replace=False))
        if s[i] == s[k] and s[j] == s[m]:
            s = s[:i] + s[k : m + 1] + s[j + 1 : k] + s[i : j + 1] + s[m + 1 :]
    return s


def _background(seed: int = 0, tasks: tuple[str, ...] = ("other",)) -> Background:
    rng = np.random.default_rng(seed)
    # a skewed composition, so that chains of different orders differ
    return Background(tasks=tasks, sequences=tuple(_dna(300, rng, "AAACGTTG") for _ in range(20)))


def _variant_task(seqs: list[str], pos: list[int], alt: list[str], name: str = "vars", **kw: object) -> ZeroShotTask:
    rows = pd.DataFrame(
        {"sequence": seqs, "pos": pos, "ref": [s[p] for s, p in zip(seqs, pos)], "alt": alt, "label": 0}
    )
    return ZeroShotTask(name=name, kind="variant", rows=rows, data_sha256="0" * 64, **kw)  # type: ignore[arg-type]


def test_order_one_gives_a_dinucleotide_shuffle_the_same_likelihood():
    rng = np.random.default_rng(3)
    chain = fit_markov(_background(), 1)
    seq = _dna(200, rng)
    shuffled = _dinucleotide_shuffle(seq, seed=7)
    dinucleotides = Counter(zip(seq, seq[1:]))
    assert shuffled != seq and shuffled[0] == seq[0] and Counter(zip(shuffled, shuffled[1:])) == dinucleotides
    assert log_likelihood(chain, seq)[0] == pytest.approx(log_likelihood(chain, shuffled)[0], rel=1e-12)
    # an order-2 chain sees trinucleotides, which the shuffle changed
    chain2 = fit_markov(_background(), 2)
    assert log_likelihood(chain2, seq)[0] != pytest.approx(log_likelihood(chain2, shuffled)[0], rel=1e-6)


@pytest.mark.parametrize("order", [0, 1, 2, 3, 5])
def test_the_local_window_shortcut_equals_a_full_recomputation(order):
    rng = np.random.default_rng(order)
    chain = fit_markov(_background(), order)
    seqs, pos, alt = [], [], []
    for i in range(40):
        seq = list(_dna(int(rng.integers(1, 30)), rng))
        if i % 3 == 0 and len(seq) > 2:  # an N near some variants
            seq[int(rng.integers(len(seq)))] = "N"
        p = int(rng.choice([0, len(seq) - 1, int(rng.integers(len(seq)))]))  # the edges too
        seq[p] = str(rng.choice(list("ACGT")))
        seqs.append("".join(seq))
        pos.append(p)
        alt.append(str(rng.choice([b for b in "ACGT" if b != seq[p]])))
    task = _variant_task(seqs, pos, alt)
    got = markov_scores(task, chain, _background())["score"].to_numpy()
    full = np.array(
        [
            _both_strands_log_likelihood(chain, s)[0] - _both_strands_log_likelihood(chain, s[:p] + a + s[p + 1 :])[0]
            for s, p, a in zip(seqs, pos, alt)
        ]
    )
    np.testing.assert_allclose(got, full, rtol=1e-12, atol=1e-12)


def test_an_alt_the_background_finds_unlikely_scores_higher():
    background = Background(tasks=("poly",), sequences=("ACACACACACACACACACAC",) * 5)
    chain = fit_markov(background, 1)
    task = _variant_task(["ACACACACAC", "ACACACACAC"], [4, 4], ["C", "G"])  # A->C keeps an AC-ish pattern
    scores = markov_scores(task, chain, background)["score"].to_numpy()
    assert scores[1] > 0 and scores[0] > 0  # any change from the periodic background costs likelihood
    same = markov_scores(_variant_task(["ACGTACGTAC"], [2], ["G"]), fit_markov(background, 0), background)
    assert same["score"].iloc[0] == pytest.approx(0.0)  # order 0: G and its complement C are as likely


def test_laplace_smoothing_and_n_are_explicit():
    chain = fit_markov(Background(tasks=("a",), sequences=("AAAANAAAA",)), 1)
    # both strands: 6 AA windows forward (the two through N left out), 6 TT windows reverse
    aa, tt = _encode("AA"), _encode("TT")
    assert chain.counts[aa[0] * 4 + aa[1]] == 6 and chain.counts[tt[0] * 4 + tt[1]] == 6 and chain.counts.sum() == 12
    assert np.exp(chain.log_prob[0 * 4 + 1]) == pytest.approx(1 / (6 + 4))  # p(C | A): never seen, finite
    assert np.exp(chain.log_prob[0]) == pytest.approx(7 / 10)
    total, scored = log_likelihood(chain, "AANAA")
    assert scored == 2 and total == pytest.approx(2 * np.log(0.7))


def test_paired_prefers_the_sequence_the_background_finds_likely():
    background = _background()
    chain = fit_markov(background, 2)
    rng = np.random.default_rng(5)
    a = [_dna(100, rng, "AAACGTTG") for _ in range(10)]
    b = [_dna(100, rng, "CCCGGGAT") for _ in range(10)]
    task = ZeroShotTask(
        name="pairs", kind="paired", rows=pd.DataFrame({"sequence_a": a, "sequence_b": b}), data_sha256="0" * 64
    )
    scores = markov_scores(task, chain, background)
    assert (scores["score"] > 0).all() and set(scores["scorer"]) == {"markov-2"}
    swapped = ZeroShotTask(
        name="pairs", kind="paired", rows=pd.DataFrame({"sequence_a": b, "sequence_b": a}), data_sha256="0" * 64
    )
    np.testing.assert_allclose(markov_scores(swapped, chain, background)["score"], -scores["score"])
    all_n = ZeroShotTask(
        name="pairs", kind="paired", rows=pd.DataFrame({"sequence_a": ["NNNN"], "sequence_b": ["ACGT"]}),
        data_sha256="0" * 64,
    )  # fmt: skip
    with pytest.raises(ValueError, match="row 0 sequence_a"):
        markov_scores(all_n, chain, background)


def test_a_background_from_the_scored_task_or_its_sources_is_refused():
    task = _variant_task(["ACGTACGT"], [3], ["A"], name="shuffled-ccre", source_tasks=("ccre",))
    chain = fit_markov(_background(tasks=("ccre", "other")), 1)
    with pytest.raises(BackgroundLeakError, match=r"shuffled-ccre.*\['ccre'\]"):
        markov_scores(task, chain, _background(tasks=("ccre", "other")))
    built = background_from_tasks([_variant_task(["ACGT"], [0], ["C"], name="x", source_tasks=("ccre",))])
    assert built.tasks == ("x", "ccre")
    with pytest.raises(BackgroundLeakError):
        markov_scores(task, fit_markov(built, 1), built)


def test_bad_variant_rows_are_all_named():
    task = _variant_task(["ACGT", "ACGT"], [1, 2], ["N", "T"])
    bad = ZeroShotTask(
        name="vars", kind="variant", rows=task.rows.assign(ref=["C", "T"]), data_sha256="0" * 64
    )  # row 1: ref T but the window has G
    with pytest.raises(ValueError, match=r"row 0: alt 'N'.*row 1: ref 'T' but the window has 'G'"):
        markov_scores(bad, fit_markov(_background(), 1), _background())
