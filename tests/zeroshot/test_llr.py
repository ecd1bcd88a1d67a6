"""The `llr` scorer through its real code, on heads whose LLR has a closed form (an order-k Markov chain exposed as
a causal and as a masked head): scores equal the chain's likelihoods computed in numpy, batched equals naive."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lm_heads_support import CLS, SEP, chain_log_likelihood, chain_table, markov_model
from scipy.special import logsumexp

from geneb.zeroshot.llr import _reverse_complement, _reverse_variant, score_llr, score_llr_naive
from geneb.zeroshot.task import NotApplicable, ZeroShotTask

ORDER = 2
TABLE = chain_table(ORDER, seed=7)


def _variant_task(n: int = 12, seed: int = 3) -> ZeroShotTask:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        length = int(rng.choice([16, 16, 21]))  # repeated lengths share batches, another length its own
        seq = "".join(rng.choice(list("ACGT"), size=length))
        pos = [0, length - 1][i] if i < 2 else int(rng.integers(length))  # both window edges included
        alt = str(rng.choice([b for b in "ACGT" if b != seq[pos]]))
        rows.append({"sequence": seq, "pos": pos, "ref": seq[pos], "alt": alt, "label": i % 2})
    return ZeroShotTask(name="variants", kind="variant", rows=pd.DataFrame(rows), data_sha256="0" * 64)


def _paired_task(n: int = 5, seed: int = 4) -> ZeroShotTask:
    rng = np.random.default_rng(seed)
    pairs = [
        {
            "sequence_a": "".join(rng.choice(list("ACGT"), size=int(rng.integers(8, 14)))),
            "sequence_b": "".join(rng.choice(list("ACGT"), size=int(rng.integers(8, 14)))),
        }
        for _ in range(n)
    ]
    return ZeroShotTask(name="pairs", kind="paired", rows=pd.DataFrame(pairs), data_sha256="0" * 64)


def _expected_variant(task: ZeroShotTask, strands: int) -> np.ndarray:
    """Both heads: the masked conditional's normaliser cancels and the causal terms before the variant cancel,
    so LLR_ref_minus_alt = log P(ref window) - log P(alt window) under the chain, per strand, averaged."""
    out = []
    for r in task.rows.itertuples():
        views = [(r.sequence, r.pos, r.ref, r.alt), _reverse_variant(r.sequence, r.pos, r.ref, r.alt)][:strands]
        per_strand = []
        for seq, pos, _ref, alt in views:
            alt_seq = seq[:pos] + alt + seq[pos + 1 :]
            per_strand.append(chain_log_likelihood(seq, TABLE, ORDER) - chain_log_likelihood(alt_seq, TABLE, ORDER))
        out.append(np.mean(per_strand))
    return np.asarray(out)


def _pll_per_base(seq: str) -> float:
    total = 0.0
    for i in range(len(seq)):
        alts = [chain_log_likelihood(seq[:i] + b + seq[i + 1 :], TABLE, ORDER) for b in "ACGT"]
        total += chain_log_likelihood(seq, TABLE, ORDER) - logsumexp(alts)
    return total / len(seq)


@pytest.mark.parametrize(
    "kind,prefix,suffix,mask",
    [
        ("causal", (), (), False),
        ("causal", (CLS,), (), False),
        ("masked", (CLS,), (SEP,), False),  # equal-length batches only
        ("masked", (CLS,), (), True),  # right-padded with the attention mask; no SEP, so a leaked pad would count
    ],
)
@pytest.mark.parametrize("strands", [1, 2])
def test_variant_llr_equals_the_chains_closed_form(kind, prefix, suffix, mask, strands):
    model = markov_model(kind, TABLE, ORDER, prefix=prefix, suffix=suffix, takes_attention_mask=mask)
    task = _variant_task()
    frame = score_llr(model, task, batch_size=5, strands=strands)
    assert not isinstance(frame, NotApplicable)
    np.testing.assert_allclose(frame["score"].to_numpy(), _expected_variant(task, strands), rtol=1e-9, atol=1e-9)
    naive = score_llr_naive(model, task, strands=strands)
    np.testing.assert_allclose(naive["score"].to_numpy(), frame["score"].to_numpy(), rtol=1e-9, atol=1e-9)


def test_the_reverse_strand_changes_the_score():
    # an order-2 chain is not strand-symmetric: averaging both strands must differ from the forward one alone
    task = _variant_task()
    one = score_llr(markov_model("causal", TABLE, ORDER), task, strands=1)["score"].to_numpy()
    two = score_llr(markov_model("causal", TABLE, ORDER), task, strands=2)["score"].to_numpy()
    assert not np.allclose(one, two)


def test_paired_causal_is_the_per_base_log_likelihood_difference():
    task = _paired_task()
    for prefix in [(), (CLS,)]:
        first = 0 if prefix else 1
        model = markov_model("causal", TABLE, ORDER, prefix=prefix)
        frame = score_llr(model, task, batch_size=3)

        def per_base(seq: str, first: int = first) -> float:
            return chain_log_likelihood(seq, TABLE, ORDER, first=first) / (len(seq) - first)

        expected = [
            np.mean([per_base(a) - per_base(b), per_base(_reverse_complement(a)) - per_base(_reverse_complement(b))])
            for a, b in zip(task.rows["sequence_a"], task.rows["sequence_b"])
        ]
        np.testing.assert_allclose(frame["score"].to_numpy(), expected, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(score_llr_naive(model, task)["score"].to_numpy(), expected, rtol=1e-9, atol=1e-9)


def test_paired_masked_is_the_per_base_pseudo_log_likelihood_difference():
    task = _paired_task()
    model = markov_model("masked", TABLE, ORDER, prefix=(CLS,), suffix=(SEP,), takes_attention_mask=True)
    frame = score_llr(model, task, batch_size=7)
    expected = [
        np.mean(
            [
                _pll_per_base(a) - _pll_per_base(b),
                _pll_per_base(_reverse_complement(a)) - _pll_per_base(_reverse_complement(b)),
            ]
        )
        for a, b in zip(task.rows["sequence_a"], task.rows["sequence_b"])
    ]
    np.testing.assert_allclose(frame["score"].to_numpy(), expected, rtol=1e-9, atol=1e-9)


def test_a_model_without_a_head_is_not_applicable():
    result = score_llr(object(), _variant_task())
    assert isinstance(result, NotApplicable) and "no language-model head" in result.reason


def test_a_window_longer_than_the_model_is_named_by_row():
    import dataclasses

    model = dataclasses.replace(markov_model("masked", TABLE, ORDER, prefix=(CLS,), suffix=(SEP,)), max_tokens=18)
    with pytest.raises(ValueError, match=r"task variants: \d+ rows need more than .* 18 tokens.*row 0: 23 tokens"):
        score_llr(model, _variant_task())


def test_every_unscorable_row_is_named_at_once():
    task = _variant_task()
    rows = task.rows.copy()
    for row in (3, 7):
        rows.loc[row, "ref"] = next(b for b in "ACGT" if b != rows.loc[row, "sequence"][rows.loc[row, "pos"]])
    broken = ZeroShotTask(name="broken", kind="variant", rows=rows, data_sha256="0" * 64)
    with pytest.raises(
        ValueError, match=r"task broken, model markov-causal: 2 rows cannot be scored: row 3: .*; row 7:"
    ):
        score_llr(markov_model("causal", TABLE, ORDER), broken)
