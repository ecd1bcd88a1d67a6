"""k-shot class weights: decided by the draw's own labels under geneb-strict; geneb-paper fits no weights at all.

A real task (GUE core TATA promoters, 3-mer frequencies) whose training split keeps only 6 rows of class 1: the
training split is then 1:~400 imbalanced (balanced_if_imbalanced would weight it), while a 10-shot draw holds
10 + 6 rows (1.7:1, below IMBALANCE_RATIO: no weights). A k-shot fit that read the training split's counts would
weight its classes and move its predictions.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from geneb.probe.fit import TaskArrays, fit_all
from geneb.probe.shots import _paper_draw, build_shots

TASK = "gue_prom_core_tata"
N_SHORT = 6  # class-1 training rows kept: fewer than k = 10, more than 10 / IMBALANCE_RATIO


def _short_class_task(real_task) -> TaskArrays:
    data = real_task(TASK, max_train=2000)
    keep = np.concatenate([np.flatnonzero(data.y_train == 0), np.flatnonzero(data.y_train == 1)[:N_SHORT]])
    return dataclasses.replace(
        data, X_train=data.X_train[keep], y_train=data.y_train[keep], rows_train=data.rows_train[keep]
    )


def _shots(data, name, probe_config):
    return build_shots(data.task, name, data.y_train, data.rows_train, "test-hash", probe_config[name])


def test_strict_kshot_weights_come_from_the_draw_not_the_training_split(real_task, protocols, probe_config):
    data = _short_class_task(real_task)
    p = protocols["geneb-strict"]
    assert p.class_weight_for(data.y_train) == "balanced"  # the training split is imbalanced
    shots = _shots(data, "geneb-strict", probe_config)
    fits, _ = fit_all(data, p, shots)
    scaler = StandardScaler().fit(data.X_train)
    X_tr, X_te = scaler.transform(data.X_train), scaler.transform(data.X_test)
    pos_of = {int(r): i for i, r in enumerate(data.rows_train)}
    n_moved = 0
    for f, d in zip([f for f in fits if f.regime != "full"], shots["draws"]):
        assert (f.regime, f.seeds[0]) == (d["regime"], d["seed"])
        pos = np.array([pos_of[int(r)] for r in d["rows"]])
        y = data.y_train[pos]
        if f.regime == "10shot":
            assert np.bincount(y).tolist() == [10, N_SHORT]  # a short class: the draw is 10:6
        assert p.class_weight_for(y) is None  # 10:6 and 1:1 are below the imbalance ratio
        unweighted = LogisticRegression(C=p.C, max_iter=p.max_iter, tol=p.tol).fit(X_tr[pos], y).predict(X_te)
        assert np.array_equal(f.y_pred, unweighted), (f.regime, f.seeds[0])
        balanced = LogisticRegression(C=p.C, max_iter=p.max_iter, tol=p.tol, class_weight="balanced")
        n_moved += int((balanced.fit(X_tr[pos], y).predict(X_te) != f.y_pred).sum())
    assert n_moved > 0  # the training split's weights would have changed predictions: this test can fail


def test_paper_kshot_fits_stay_the_reference_scripts_unweighted_fits(real_task, protocols, probe_config):
    data = _short_class_task(real_task)
    p = protocols["geneb-paper"]
    assert p.class_weight is None  # the reference passes no class_weight (scikit-learn's default None)
    fits, _ = fit_all(data, p, _shots(data, "geneb-paper", probe_config))
    for f in fits:
        if f.regime == "full":
            continue
        k, seed = int(f.regime.removesuffix("shot")), f.seeds[0]
        idx = _paper_draw(data.y_train, k, seed)
        ref = LogisticRegression(max_iter=1000, random_state=seed).fit(data.X_train[idx], data.y_train[idx])
        assert np.array_equal(ref.predict(data.X_test), f.y_pred), (f.regime, seed)
        assert np.allclose(ref.predict_proba(data.X_test), f.proba, rtol=0, atol=1e-12)
