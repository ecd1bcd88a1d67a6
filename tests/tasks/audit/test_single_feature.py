"""Single-feature AUROC and its published flags, on synthetic data with a planted shortcut and on real tasks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from geneb.tasks.audit import _feature_auroc, _flag_auroc, _headline, _single_feature_aurocs, load_task


def _random_dna(rng: np.random.Generator, n: int, length: int, p_gc: float) -> list[str]:
    p = [(1 - p_gc) / 2, p_gc / 2, p_gc / 2, (1 - p_gc) / 2]
    return ["".join(rng.choice(list("ACGT"), size=length, p=p)) for _ in range(n)]


def test_flag_boundaries():
    assert _flag_auroc(0.6, 300) == "pass"
    assert _flag_auroc(0.6001, 300) == "warning"
    assert _flag_auroc(0.7, 300) == "warning"
    assert _flag_auroc(0.7001, 300) == "fail"
    assert _flag_auroc(0.99, 249) == "unknown"
    assert _flag_auroc(float("nan"), 1000) == "unknown"


def test_planted_gc_shortcut_fails_and_random_labels_pass():
    rng = np.random.default_rng(0)
    seqs = _random_dna(rng, 300, 100, 0.4) + _random_dna(rng, 300, 100, 0.6)
    y = np.array([0] * 300 + [1] * 300)
    table = _single_feature_aurocs(seqs, y).set_index("feature")
    assert table.loc["gc", "auroc"] > 0.9 and table.loc["gc", "flag"] == "fail"
    assert table.loc["length", "auroc"] == 0.5 and table.loc["length", "flag"] == "pass"
    assert _headline(table.reset_index())["flag"] == "fail"
    # direction is discarded: the swapped labels give the same AUROC
    swapped = _single_feature_aurocs(seqs, 1 - y).set_index("feature")
    assert swapped.loc["gc", "auroc"] == pytest.approx(table.loc["gc", "auroc"])
    shuffled = _single_feature_aurocs(seqs, rng.permutation(y))
    assert _headline(shuffled)["flag"] == "pass"


def test_multiclass_is_one_vs_rest_folded_macro():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.normal(m, 1, 200) for m in (0.0, 1.0, 2.0)])
    y = np.repeat([0, 1, 2], 200)
    per_class = [roc_auc_score(y == c, values) for c in range(3)]
    expected = np.mean([max(a, 1 - a) for a in per_class])
    assert _feature_auroc(values, y) == pytest.approx(expected)
    binary = roc_auc_score(y[:400] == 1, values[:400])
    assert _feature_auroc(values[:400], y[:400]) == pytest.approx(max(binary, 1 - binary))


def test_undefined_rows_are_counted_not_imputed():
    rng = np.random.default_rng(2)
    seqs = _random_dna(rng, 260, 50, 0.5) + _random_dna(rng, 260, 50, 0.5) + ["N" * 50] * 7
    y = np.array([0] * 260 + [1] * 267)
    table = _single_feature_aurocs(seqs, y).set_index("feature")
    assert table.loc["gc", "n_undefined"] == 7 and table.loc["gc", "n_rows"] == 520
    assert table.loc["length", "n_undefined"] == 0


def test_bad_labels_are_refused():
    with pytest.raises(ValueError, match="task 'x', split 'train', a single class"):
        _single_feature_aurocs(["ACGT", "GGCC"], np.array([1, 1]), where="task 'x', split 'train', ")
    with pytest.raises(ValueError, match="2 sequences but 3 labels"):
        _single_feature_aurocs(["ACGT", "GGCC"], np.array([0, 1, 1]))


def test_real_tasks(shared):
    root = shared / "data" / "tasks"
    small = load_task("idna_ms_4mc_c_equisetifolia", root)["train"]  # 183 rows per class: under the floor
    table = _single_feature_aurocs(small["sequence"].tolist(), small["label"].to_numpy())
    head = _headline(table)
    assert head["best_auroc"] > 0.7 and head["flag"] == "unknown"
    three = load_task("ienhancer2l_types_3class", root)["train"]  # 3 classes, >= 742 rows each
    head = _headline(_single_feature_aurocs(three["sequence"].tolist(), three["label"].to_numpy()))
    assert head["best_feature"] == "gc" and head["best_auroc"] > 0.7 and head["flag"] == "fail"
