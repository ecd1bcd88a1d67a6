"""The zero-shot leaderboard (incomplete entries never ranked) and its Kendall tau against the probe ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geneb.zeroshot.tables import _zeroshot_leaderboard, _zeroshot_vs_probe

KINDS = {"motif": "variant", "shuffled": "paired"}


def _metric(model, scorer, task, metric, value):
    return dict(
        model=model,
        scorer=scorer,
        task=task,
        metric=metric,
        value=value,
        ci_low=value - 0.1,
        ci_high=value + 0.1,
        n=100,
        group="all",
    )


def _metrics():
    rows = []
    for model, base in (("a", 0.9), ("b", 0.7), ("c", 0.6)):
        rows.append(_metric(model, "embedding-cosine", "motif", "auroc", base))
        rows.append(_metric(model, "embedding-cosine", "motif", "auprc", 0.1))  # not the primary metric
        rows.append(_metric(model, "llr", "motif", "auroc", base - 0.1))
        rows.append(_metric(model, "llr", "shuffled", "paired_accuracy", base))
    rows.append(_metric("a", "embedding-cosine", "motif", "auroc", 0.2) | {"group": "chr1"})  # a group row
    return pd.DataFrame(rows)


def _na():
    return pd.DataFrame(
        [
            dict(model=m, task="shuffled", scorer="embedding-cosine", reason="a paired task needs a likelihood")
            for m in "abc"
        ]
    )


def test_macro_is_the_mean_of_primary_metrics_over_the_scorers_scope():
    na = pd.concat([_na(), pd.DataFrame([dict(model="d", task=t, scorer="llr", reason="lm_head none") for t in KINDS])])
    board = _zeroshot_leaderboard(_metrics(), KINDS, na)
    macro = board[board["task"] == "macro"].set_index(["model", "scorer"])
    assert macro.loc[("a", "llr"), "value"] == pytest.approx((0.8 + 0.9) / 2)
    assert macro.loc[("a", "llr"), "scope"] == "variant+paired"
    assert macro.loc[("a", "llr"), "rank"] == 1 and macro.loc[("c", "llr"), "rank"] == 3
    # the embedding distances score variant tasks only: their macro covers those, ranked among themselves
    cos = macro.loc[("a", "embedding-cosine")]
    assert cos["complete"] and cos["scope"] == "variant" and cos["value"] == 0.9 and cos["rank"] == 1
    assert cos["n_tasks_expected"] == 1
    # a model whose scorer does not apply (no language-model head) is listed, unranked, with the reason
    d = macro.loc[("d", "llr")]
    assert not d["complete"] and pd.isna(d["rank"]) and np.isnan(d["value"])
    assert "shuffled (lm_head none)" in d["incomplete_reason"]
    task_rows = board[(board["task"] == "motif") & (board["scorer"] == "embedding-cosine")].set_index("model")
    assert task_rows.loc["a", "value"] == 0.9 and task_rows.loc["a", "rank"] == 1  # group rows and auprc not read


def test_a_task_scored_by_no_scorer_is_named():
    board = _zeroshot_leaderboard(_metrics(), KINDS | {"recall": "paired"}, _na())
    macro = board[(board["task"] == "macro") & (board["scorer"] == "llr")]
    assert not macro["complete"].any()
    assert macro["incomplete_reason"].str.contains("recall (not scored)", regex=False).all()


def test_stray_or_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="not configured"):
        _zeroshot_leaderboard(_metrics(), {"motif": "variant"})
    with pytest.raises(ValueError, match="unknown kind"):
        _zeroshot_leaderboard(_metrics(), {"motif": "variant", "shuffled": "triplet"})


def test_tau_against_the_probe_ranking():
    board = _zeroshot_leaderboard(_metrics(), KINDS, _na())
    probe = pd.DataFrame(
        [
            dict(protocol="geneb-paper", regime="full", model=m, category="macro", value=v, complete=True)
            for m, v in (("a", 0.5), ("b", 0.4), ("c", 0.3))
        ]
        + [
            dict(protocol="geneb-paper", regime="1-shot", model=m, category="macro", value=v, complete=True)
            for m, v in (("a", 0.1), ("b", 0.2), ("c", 0.3))
        ]
    )
    vs = _zeroshot_vs_probe(board, probe, n_boot=200, seed=3).set_index(["scorer", "regime"])
    assert vs.loc[("llr", "full"), "tau"] == pytest.approx(1.0)
    assert vs.loc[("llr", "1-shot"), "tau"] == pytest.approx(-1.0)
    assert vs.loc[("llr", "full"), "n_models"] == 3
    assert vs.loc[("embedding-cosine", "full"), "tau"] == pytest.approx(1.0)
    again = _zeroshot_vs_probe(board, probe, n_boot=200, seed=3).set_index(["scorer", "regime"])
    assert again.loc[("llr", "full"), "n_boot_used"] == vs.loc[("llr", "full"), "n_boot_used"]


def test_reference_rows_are_named_and_each_model_stands_beside_its_twin():
    """Markov baselines and random-init twins are labelled reference rows; a model's row carries its twin's value
    and the gain over it for the same scorer and task; AUPRC stands beside a variant task's AUROC."""
    rows = _metrics().to_dict("records")
    rows.append(_metric("a-twin", "llr", "motif", "auroc", 0.65))
    rows.append(_metric("a-twin", "llr", "shuffled", "paired_accuracy", 0.5))
    rows.append(_metric("markov-3", "markov-3", "motif", "auroc", 0.55))
    board = _zeroshot_leaderboard(pd.DataFrame(rows), KINDS, _na(), twins={"a-twin": "a"})
    by = board.set_index(["model", "scorer", "task"])
    assert by.loc[("a-twin", "llr", "motif"), "reference"] == "random-init twin of a"
    assert by.loc[("markov-3", "markov-3", "motif"), "reference"] == "markov baseline"
    assert by.loc[("a", "llr", "motif"), "reference"] == ""
    a = by.loc[("a", "llr", "motif")]
    assert a["twin"] == "a-twin" and a["twin_value"] == 0.65 and a["gain_over_twin"] == pytest.approx(0.8 - 0.65)
    assert by.loc[("a", "llr", "macro"), "gain_over_twin"] == pytest.approx((0.8 + 0.9) / 2 - (0.65 + 0.5) / 2)
    # no twin scored with this scorer: nothing beside it
    assert by.loc[("a", "embedding-cosine", "motif"), "twin"] == "" and np.isnan(
        by.loc[("a", "embedding-cosine", "motif"), "gain_over_twin"]
    )
    assert by.loc[("a", "embedding-cosine", "motif"), "auprc"] == 0.1
    assert np.isnan(by.loc[("a", "llr", "shuffled"), "auprc"])
