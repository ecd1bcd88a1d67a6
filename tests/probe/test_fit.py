"""The probe agrees with plain scikit-learn fits on real tasks, and its tables have the documented layout."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from geneb.probe.fit import TaskArrays, fit_all, run_task
from geneb.probe.shots import ProbeInputError, _paper_draw, build_shots

TASK = "gue_prom_core_tata"  # real GUE promoter task, 4904 train / 613 test rows


def _shots(data, name, probe_config):
    return build_shots(data.task, name, data.y_train, data.rows_train, "test-hash", probe_config[name])


def test_paper_protocol_equals_the_reference_script_fits(real_task, protocols, probe_config):
    data = real_task(TASK)
    p = protocols["geneb-paper"]
    fits, _ = fit_all(data, p, _shots(data, "geneb-paper", probe_config))
    full = [f for f in fits if f.regime == "full"]
    assert len(full) == 1 and full[0].seeds == p.seeds  # one deterministic fit, reported under every seed
    for seed in p.seeds:  # the reference fits five times; lbfgs ignores random_state, so all five are this one
        ref = LogisticRegression(max_iter=1000, random_state=seed).fit(data.X_train, data.y_train)
        assert np.array_equal(ref.predict(data.X_test), full[0].y_pred)
        assert np.allclose(ref.predict_proba(data.X_test), full[0].proba, rtol=0, atol=1e-12)
    for f in fits:
        if f.regime == "full":
            continue
        k, seed = int(f.regime.removesuffix("shot")), f.seeds[0]
        idx = _paper_draw(data.y_train, k, seed)
        ref = LogisticRegression(max_iter=1000, random_state=seed).fit(data.X_train[idx], data.y_train[idx])
        assert np.array_equal(ref.predict(data.X_test), f.y_pred), (f.regime, seed)


def test_strict_protocol_equals_plain_scikit_learn_pipelines(real_task, protocols, probe_config):
    data = real_task(TASK, max_train=2000)
    p = protocols["geneb-strict"]
    fits, _ = fit_all(data, p, _shots(data, "geneb-strict", probe_config))
    full = next(f for f in fits if f.regime == "full")
    counts = np.unique(data.y_train, return_counts=True)[1]
    weight = "balanced" if counts.max() >= 3 * counts.min() else None  # balanced_if_imbalanced, written out
    cv = StratifiedKFold(p.cv_folds, shuffle=True, random_state=p.cv_seed)
    lrcv = make_pipeline(
        StandardScaler(),
        LogisticRegressionCV(
            Cs=list(p.C_grid),
            cv=cv,
            scoring="neg_log_loss",
            class_weight=weight,
            max_iter=p.max_iter,
            tol=p.tol,
            l1_ratios=(0.0,),
            use_legacy_attributes=False,
        ),
    ).fit(data.X_train, data.y_train)
    assert full.C == lrcv[-1].C_ and full.C_selection == f"inner 5-fold CV (log_loss), class_weight {weight}"
    assert full.seeds == (p.cv_seed,)
    plain = make_pipeline(StandardScaler(), LogisticRegression(C=full.C, class_weight=weight, max_iter=1000))
    assert np.array_equal(plain.fit(data.X_train, data.y_train).predict(data.X_test), full.y_pred)
    scaler = StandardScaler().fit(data.X_train)  # k-shot probes use the training split's statistics
    shots = _shots(data, "geneb-strict", probe_config)
    for f, d in zip([f for f in fits if f.regime != "full"], shots["draws"]):
        assert (f.regime, f.seeds[0]) == (d["regime"], d["seed"])
        y_draw = data.y_train[d["rows"]]  # the draw's own counts decide its weights (balanced_if_imbalanced)
        draw_counts = np.unique(y_draw, return_counts=True)[1]
        draw_weight = "balanced" if draw_counts.max() >= 3 * draw_counts.min() else None
        lr = LogisticRegression(C=1.0, class_weight=draw_weight, max_iter=1000)
        lr.fit(scaler.transform(data.X_train[d["rows"]]), y_draw)
        assert np.array_equal(lr.predict(scaler.transform(data.X_test)), f.y_pred)


def test_score_table_layout_and_seed_statistics(real_task, protocols, probe_config):
    data = real_task("ienhancer2l_types_3class", max_train=1200)  # real 3-class task
    for name, n_full in (("geneb-paper", 5), ("geneb-strict", 1)):
        p = protocols[name]
        scores, preds = run_task(data, p, _shots(data, name, probe_config))
        n_fits = n_full + len(p.seeds) * len(p.few_shot_k)
        assert len(scores) == 4 * n_fits and len(preds) == n_fits * len(data.y_test)
        assert set(scores["regime"]) == set(p.regimes) and set(scores["metric"]) == {"MCC", "Acc", "F1", "AUROC"}
        mcc = scores[scores["metric"] == "MCC"]
        assert mcc[["ci_low", "ci_high"]].notna().all().all()
        assert (mcc["ci_low"] <= mcc["value"]).all() and (mcc["value"] <= mcc["ci_high"]).all()
        assert scores.loc[scores["metric"] != "MCC", "ci_low"].isna().all()
        assert scores.loc[scores["metric"] == "AUROC", "value"].between(0, 1).all()
        for _key, g in scores.groupby(["regime", "metric"]):
            assert g["seed_mean"].iloc[0] == pytest.approx(g["value"].mean())
            assert g["n_seeds"].iloc[0] == len(g)
        # every prediction row's MCC is the reported value
        for (regime, seed), g in preds.groupby(["regime", "seed"]):
            v = mcc[(mcc["regime"] == regime) & (mcc["seed"] == seed)]["value"].item()
            assert matthews_corrcoef(g["y_true"], g["y_pred"]) == pytest.approx(v, abs=1e-12)
        few = mcc[mcc["regime"] == "1shot"]
        assert few["seed"].tolist() == list(p.seeds) and few["value"].nunique() > 1  # each seed its own fit
        assert np.isnan(preds["score"]).all()  # multiclass: no single positive-class score
        # multiclass: every class probability kept, float32, summing to 1, its arg-max the predicted label
        proba = np.stack(preds["proba"].to_numpy())
        assert proba.dtype == np.float32 and proba.shape == (len(preds), 3)
        assert np.allclose(proba.sum(axis=1), 1, atol=1e-5)
        # the predicted label's probability is the row's largest (two classes can tie once rounded to float32,
        # where the float64 arg-max decided)
        picked = np.searchsorted(np.sort(np.unique(data.y_train)), preds["y_pred"].to_numpy())
        assert (proba[np.arange(len(proba)), picked] == proba.max(axis=1)).all()


def test_unknown_shot_row_and_unseen_test_label_are_named(real_task, protocols, probe_config):
    data = real_task(TASK)
    shots = _shots(data, "geneb-strict", probe_config)
    shots["draws"][3]["rows"] = [*shots["draws"][3]["rows"][:-1], 10**9]
    d = shots["draws"][3]
    with pytest.raises(ProbeInputError, match=rf"regime '{d['regime']}', seed {d['seed']}: shot row id 1000000000"):
        fit_all(data, protocols["geneb-strict"], shots)
    y_test = data.y_test.copy()
    y_test[5] = 4
    bad = dataclasses.replace(data, y_test=y_test)
    with pytest.raises(ProbeInputError, match=r"split 'test': row id 5 has label 4"):
        fit_all(bad, protocols["geneb-paper"], _shots(data, "geneb-paper", probe_config))


def test_degenerate_predictions_are_flagged_in_the_score_rows(protocols, probe_config):
    """A probe that predicts one class for every test row scores MCC 0 with CI [0, 0]: its rows say so
    (`degenerate_predictions`), and a probe that predicts both classes is not flagged."""
    rng = np.random.default_rng(0)
    y_train = np.repeat([0, 1], 30)
    X_train = (rng.normal(size=(60, 4)) + y_train[:, None] * 3).astype(np.float32)
    y_test = np.tile([0, 1], 10)
    constant = np.full((20, 4), 10.0, np.float32)  # far on the class-1 side: every row predicted 1
    split = (X_train, y_train, np.arange(60, dtype=np.int64))
    rows_test = np.arange(20, dtype=np.int64)
    for X_test, flagged in ((constant, True), ((rng.normal(size=(20, 4)) + y_test[:, None] * 3), False)):
        data = TaskArrays("synthetic", *split, X_test.astype(np.float32), y_test, rows_test)
        p = protocols["geneb-paper"]
        scores, preds = run_task(data, p, _shots(data, "geneb-paper", probe_config))
        full = scores[scores["regime"] == "full"]
        assert full["degenerate_predictions"].dtype == bool
        assert full["degenerate_predictions"].all() == flagged and full["degenerate_predictions"].any() == flagged
        if flagged:
            mcc = full[full["metric"] == "MCC"]
            assert (mcc["value"] == 0).all() and (mcc[["ci_low", "ci_high"]] == 0).all().all()
        for (regime, seed), g in preds.groupby(["regime", "seed"]):
            row = scores[(scores["regime"] == regime) & (scores["seed"] == seed)]
            assert (row["degenerate_predictions"] == (g["y_pred"].nunique() == 1)).all()
