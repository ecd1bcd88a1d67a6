"""Matched pairs: derivation from metadata, a planted effect found only where planted, BH via scipy."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geneb.analysis import paper
from geneb.analysis import stats as paired_stats
from geneb.tables.scores import AnalysisInputError
from synth import meta, predictions

CATS = {"p1": "Promoters", "p2": "Promoters", "e1": "Enhancers", "e2": "Enhancers"}


def test_pairs_differ_in_exactly_one_factor_within_the_size_ratio():
    m = meta(
        {
            "enc_bpe_h": {
                "params": 100e6,
                "architecture_family": "transformer-encoder",
                "tokenizer_type": "bpe",
                "pretraining_domain": "human",
            },
            "enc_kmer_h": {
                "params": 150e6,
                "architecture_family": "transformer-encoder",
                "tokenizer_type": "k-mer",
                "pretraining_domain": "human",
            },
            "ssm_bpe_h": {
                "params": 110e6,
                "architecture_family": "ssm",
                "tokenizer_type": "bpe",
                "pretraining_domain": "human",
            },
            "enc_bpe_ms_big": {
                "params": 900e6,
                "architecture_family": "transformer-encoder",
                "tokenizer_type": "bpe",
                "pretraining_domain": "multispecies",
            },
            "enc_bpe_unknown": {"params": 100e6, "architecture_family": "transformer-encoder", "tokenizer_type": "bpe"},
            "twin": {
                "params": 100e6,
                "architecture_family": "transformer-encoder",
                "tokenizer_type": "bpe",
                "pretraining_domain": "human",
            },
        }
    )
    got = {(tuple(p["models"]), p["differs_in"]) for p in paper._derive_pairs(m, list(m.index), 2.0)}
    assert got == {
        (("enc_bpe_h", "enc_kmer_h"), "tokenizer"),
        (("enc_bpe_h", "ssm_bpe_h"), "architecture"),
        (("enc_kmer_h", "twin"), "tokenizer"),
        (("ssm_bpe_h", "twin"), "architecture"),
    }  # the 9x larger multispecies model is too big; the unknown domain is never paired; twins differ in nothing
    with pytest.raises(AnalysisInputError):
        paper._derive_pairs(m, list(m.index), 0.5)


def _replicates():
    """a beats b on the Promoters tasks (accuracy 0.9 vs 0.7); on Enhancers they predict identically."""
    rng = np.random.default_rng(0)
    preds = {}
    for t in CATS:
        y = rng.integers(0, 2, 300)
        pa = predictions(y, 0.9 if CATS[t] == "Promoters" else 0.75, seed=hash(t) % 1000)
        pb = predictions(y, 0.7, seed=hash(t) % 1000 + 1) if CATS[t] == "Promoters" else pa.copy()
        preds[("a", t)], preds[("b", t)] = pa, pb
    rows = paired_stats.row_replicates(preds, ["a", "b"], list(CATS), "full", n_resamples=600, seed=1)
    matrix = pd.DataFrame(np.nanmean(rows, axis=0), index=["a", "b"], columns=list(CATS))
    return paired_stats.category_replicates(matrix, pd.Series(CATS), rows, n_resamples=600, seed=1)


def test_planted_effect_is_significant_only_where_planted():
    rep = _replicates()
    out = paper._pair_effects(
        rep,
        [{"id": "a~b", "models": ["a", "b"], "differs_in": "tokenizer"}],
        confidence=0.95,
        alpha=0.05,
        min_tasks_without_rows=5,
    ).set_index("category")
    assert out.loc["Promoters", "diff"] > 0.2 and out.loc["Promoters", "significant"]
    assert out.loc["Enhancers", "diff"] == pytest.approx(0.0) and not out.loc["Enhancers", "significant"]
    assert out.loc["Promoters", "ci_low"] > 0
    assert out["rows_resampled"].all() and out["tested"].all()
    # q-values are scipy's Benjamini-Hochberg adjustment of the p-values
    assert out["q_value"].to_numpy() == pytest.approx(
        stats.false_discovery_control(out["p_value"].to_numpy(), method="bh")
    )


def test_without_rows_small_categories_are_not_tested():
    matrix = pd.DataFrame({"p1": [0.6, 0.5], "p2": [0.7, 0.4], "e1": [0.3, 0.3], "e2": [0.2, 0.1]}, index=["a", "b"])
    rep = paired_stats.category_replicates(matrix, pd.Series(CATS), None, n_resamples=200, seed=0)
    out = paper._pair_effects(
        rep,
        [{"models": ["a", "b"], "differs_in": "architecture"}],
        confidence=0.95,
        alpha=0.05,
        min_tasks_without_rows=3,
    ).set_index("category")
    assert not out.loc["Promoters", "tested"] and np.isnan(out.loc["Promoters", "p_value"])
    assert out.loc["macro", "tested"]  # 4 tasks >= 3
    assert out.loc["Promoters", "diff"] == pytest.approx(0.2)
