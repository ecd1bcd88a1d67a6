"""Zero-shot metrics with bootstrap uncertainty (geneb.zeroshot.tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from geneb.zeroshot.tables import METRIC_COLUMNS, _paired_accuracy, _sign_test, score_metrics
from geneb.zeroshot.task import ZeroShotTask, row_scores


def _variant(labels: np.ndarray, groups: list[str] | None = None) -> ZeroShotTask:
    n = len(labels)
    rows = pd.DataFrame({"sequence": ["ACGT"] * n, "pos": 1, "ref": "C", "alt": "G", "label": labels})
    if groups is not None:
        rows["group"] = groups
    return ZeroShotTask(name="vars", kind="variant", rows=rows, data_sha256="0" * 64)


def _paired(n: int, groups: list[str] | None = None) -> ZeroShotTask:
    rows = pd.DataFrame({"sequence_a": ["ACGT"] * n, "sequence_b": ["TTTT"] * n})
    if groups is not None:
        rows["group"] = groups
    return ZeroShotTask(name="pairs", kind="paired", rows=rows, data_sha256="0" * 64)


def _metric(frame: pd.DataFrame, metric: str, group: str = "all") -> pd.Series:
    return frame[(frame["metric"] == metric) & (frame["group"] == group)].iloc[0]


def test_perfect_reversed_and_random_scores():
    labels = np.array([0] * 30 + [1] * 10)
    task = _variant(labels)
    perfect = score_metrics(task, row_scores(task, "s", labels + 0.1 * np.arange(40) / 40), n_boot=200)
    assert list(perfect.columns) == list(METRIC_COLUMNS)
    for metric in ("auroc", "auprc"):
        row = _metric(perfect, metric)
        assert [row["value"], row["ci_low"], row["ci_high"]] == pytest.approx([1.0, 1.0, 1.0], abs=1e-12)
        assert row["n"] == 40 and row["n_positive"] == 10 and np.isnan(row["p_value"])
    reversed_ = score_metrics(task, row_scores(task, "s", -labels.astype(float)), n_boot=200)
    assert _metric(reversed_, "auroc")["value"] == 0.0
    rng = np.random.default_rng(0)
    big = np.array([0, 1] * 2000)
    random = score_metrics(_variant(big), row_scores(_variant(big), "s", rng.normal(size=4000)), n_boot=100)
    row = _metric(random, "auroc")
    assert abs(row["value"] - 0.5) < 0.03 and row["ci_low"] < 0.5 < row["ci_high"]
    assert abs(_metric(random, "auprc")["value"] - 0.5) < 0.03


def test_groups_and_the_count_weighted_mean():
    labels = np.array([0, 0, 1, 1] * 5 + [0, 1, 0, 1])
    groups = ["chr1"] * 20 + ["chr2"] * 4
    task = _variant(labels, groups)
    score = np.where(np.arange(24) < 20, labels, 1 - labels).astype(float)  # chr1 perfect, chr2 reversed
    frame = score_metrics(task, row_scores(task, "s", score), n_boot=100, seed=3)
    assert _metric(frame, "auroc", "chr1")["value"] == 1.0 and _metric(frame, "auroc", "chr2")["value"] == 0.0
    mean = _metric(frame, "auroc", "weighted-mean")
    assert mean["value"] == pytest.approx(20 / 24) and mean["n"] == 24
    assert mean["ci_low"] <= mean["value"] <= mean["ci_high"]
    assert _metric(frame, "auroc")["value"] == pytest.approx(roc_auc_score(labels, score))


def test_a_one_class_group_gives_a_nan_row_with_a_note():
    labels = np.array([0, 1, 0, 1, 0, 0])
    task = _variant(labels, ["a", "a", "a", "a", "b", "b"])
    frame = score_metrics(task, row_scores(task, "s", labels.astype(float)), n_boot=50)
    row = _metric(frame, "auprc", "b")
    assert np.isnan(row["value"]) and np.isnan(row["ci_low"]) and "one class only" in row["note"]
    mean = _metric(frame, "auprc", "weighted-mean")
    assert mean["value"] == 1.0 and mean["n"] == 4 and "left out" in mean["note"] and "b" in mean["note"]
    # all, a, b, weighted mean for both metrics, and the within-strata AUROC of all rows: nothing dropped
    assert len(frame) == 2 * 4 + 1


def test_paired_accuracy_ties_and_a_known_sign_test():
    assert _paired_accuracy(np.array([1.0, -1.0, 0.0, 2.0])) == pytest.approx(2.5 / 4)
    # 9 of 10 untied rows positive: two-sided exact p = 2 * (C(10,9) + C(10,10)) / 2**10 = 22/1024
    score = np.array([1.0] * 9 + [-1.0] + [0.0] * 3)
    assert _sign_test(score) == pytest.approx(22 / 1024)
    task = _paired(13)
    row = _metric(score_metrics(task, row_scores(task, "llr", score), n_boot=200), "paired_accuracy")
    assert row["value"] == pytest.approx((9 + 1.5) / 13) and row["p_value"] == pytest.approx(22 / 1024)
    assert row["ci_low"] < row["value"] < row["ci_high"] and np.isnan(row["n_positive"])
    ties = _paired(3, ["g", "g", "h"])
    frame = score_metrics(ties, row_scores(ties, "llr", np.array([0.0, 0.0, 1.0])), n_boot=20)
    assert "tie" in _metric(frame, "paired_accuracy", "g")["note"] and np.isnan(
        _metric(frame, "paired_accuracy", "g")["p_value"]
    )
    assert _metric(frame, "paired_accuracy", "weighted-mean")["value"] == pytest.approx((2 * 0.5 + 1) / 3)


def test_the_bootstrap_is_determined_by_its_seed():
    rng = np.random.default_rng(1)
    labels = np.array([0, 1] * 50)
    task = _variant(labels)
    scores = row_scores(task, "s", labels + rng.normal(size=100))
    a, b = score_metrics(task, scores, n_boot=100, seed=7), score_metrics(task, scores, n_boot=100, seed=7)
    pd.testing.assert_frame_equal(a, b)
    c = score_metrics(task, scores, n_boot=100, seed=8)
    assert (a["seed"] == 7).all() and (a["n_boot"] == 100).all()
    assert not np.allclose(a["ci_low"], c["ci_low"])


def test_the_weighted_resample_metrics_equal_sklearns_with_sample_weights():
    """The vectorised metrics take a resample as row counts: equal to sklearn's on the same counts, ties included."""
    from sklearn.metrics import average_precision_score

    from geneb.zeroshot.resampling import weighted_auprc as _weighted_auprc
    from geneb.zeroshot.resampling import weighted_auroc as _weighted_auroc

    rng = np.random.default_rng(2)
    labels = rng.permutation([0] * 12 + [1] * 5)
    scores = rng.integers(0, 6, size=len(labels)).astype(float)  # many ties
    weights = rng.integers(0, 4, size=(30, len(labels))).astype(float)
    weights[:, labels == 1] += 1  # every resample keeps a positive
    weights[:, np.flatnonzero(labels == 0)[0]] += 1  # and a control
    np.testing.assert_allclose(
        _weighted_auroc(labels, scores, weights), [roc_auc_score(labels, scores, sample_weight=w) for w in weights]
    )
    np.testing.assert_allclose(
        _weighted_auprc(labels, scores, weights),
        [average_precision_score(labels, scores, sample_weight=w) for w in weights],
    )
    one_class = np.zeros((1, len(labels)))
    one_class[0, labels == 0] = 1
    assert np.isnan(_weighted_auroc(labels, scores, one_class)).all()
    assert np.isnan(_weighted_auprc(labels, scores, one_class)).all()


def _transcripts(n_groups: int, effect: np.ndarray) -> tuple[ZeroShotTask, np.ndarray]:
    """A variant task of `n_groups` transcripts with 2 effect + 2 control rows each, and scores where each
    transcript's rows share a transcript-level offset (`effect` per group, added to the effect rows only)."""
    labels = np.tile([1, 1, 0, 0], n_groups)
    groups = [f"t{g}" for g in range(n_groups) for _ in range(4)]
    task = _variant(labels, groups)
    scores = np.repeat(effect, 4) * labels + np.tile([0.01, 0.02, 0.0, 0.03], n_groups)
    return task, scores


def test_a_task_with_groups_resamples_its_groups_not_its_rows():
    """Rows of one transcript are not independent: the all-rows interval of a grouped task comes from a bootstrap
    over groups (wider than the rows' bootstrap when the effect varies between transcripts), recorded as such."""
    rng = np.random.default_rng(5)
    task, scores = _transcripts(20, rng.choice([-1.0, 1.0], size=20))
    grouped = score_metrics(task, row_scores(task, "s", scores), n_boot=400, seed=1)
    flat = ZeroShotTask(name="vars", kind="variant", rows=task.rows.drop(columns="group"), data_sha256="0" * 64)
    rows = score_metrics(flat, row_scores(flat, "s", scores), n_boot=400, seed=1)
    g, r = _metric(grouped, "auroc"), _metric(rows, "auroc")
    assert g["value"] == pytest.approx(r["value"])
    assert g["resample_unit"] == "groups" and r["resample_unit"] == "rows"
    assert g["ci_high"] - g["ci_low"] > 1.3 * (r["ci_high"] - r["ci_low"])
    assert _metric(grouped, "auroc", "t0")["resample_unit"] == "rows"
    assert _metric(grouped, "auroc", "weighted-mean")["resample_unit"] == "rows within each group"


def test_auroc_within_strata_ignores_what_the_strata_alone_separate():
    """A score that only reads the substitution separates effects from controls overall (AUROC 1) but earns
    chance within substitution x codon-position strata; a real effect score keeps its AUROC there."""
    n = 40
    labels = np.array([1, 0] * n)
    ref = np.array(["C", "C"] * n)
    alt = np.where(np.arange(2 * n) % 4 < 2, "T", "A")  # half the pairs C>T, half C>A
    alt[labels == 1] = np.where(np.arange(n) < n // 2 + 15, "T", "A")  # effects lean to C>T: 35 of 40
    rows = pd.DataFrame({"sequence": ["ACGTAC"] * 2 * n, "pos": 3, "ref": ref, "alt": alt, "label": labels})
    meta = {"reading_frame": 0}
    task = ZeroShotTask(name="vars", kind="variant", rows=rows, data_sha256="0" * 64, meta=meta)
    assert (task.codon_positions == 0).all()
    substitution_only = (alt == "T").astype(float)
    frame = score_metrics(task, row_scores(task, "s", substitution_only), n_boot=100)
    assert _metric(frame, "auroc")["value"] > 0.6
    within = _metric(frame, "auroc_within_strata")
    assert within["value"] == pytest.approx(0.5)
    assert "substitution x codon position" in within["note"] and "2 of 2 hold both classes" in within["note"]
    informative = labels + 0.1 * np.arange(2 * n) / n
    assert _metric(score_metrics(task, row_scores(task, "s", informative), n_boot=50), "auroc_within_strata")[
        "value"
    ] == pytest.approx(1.0)
    separated = rows.assign(alt=np.where(labels == 1, "T", "A"))
    task = ZeroShotTask(name="vars", kind="variant", rows=separated, data_sha256="0" * 64)
    row = _metric(score_metrics(task, row_scores(task, "s", informative), n_boot=50), "auroc_within_strata")
    assert np.isnan(row["value"]) and "no stratum (substitution) holds both classes" in row["note"]


def test_a_group_named_like_a_summary_row_is_refused():
    task = _variant(np.array([0, 1]), ["all", "x"])
    with pytest.raises(ValueError, match=r"\['all'\] are reserved"):
        score_metrics(task, row_scores(task, "s", np.array([0.0, 1.0])), n_boot=5)
