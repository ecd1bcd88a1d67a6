"""Clean-subset scores (geneb.probe.metrics): the same fitted probe scored on the test rows without a training
homolog, through the probe job with a real audit file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import matthews_corrcoef, roc_auc_score

from geneb.probe import metrics
from geneb.probe.job import fit_probes, write_shot_indices
from geneb.probe.metrics import clean_columns
from geneb.probe.protocols import from_config
from geneb.tasks.audit import _AUDIT_SCHEMA_VERSION, AuditFileError

TASK = "gue_emp_h3__devtrain"  # tests/probe/conftest.py STAGE_TASK


def _audit(task_dir, path, rows, data_hash=None):
    card = json.loads((task_dir / "card.json").read_text())
    record = {
        "schema_version": _AUDIT_SCHEMA_VERSION,
        "task": TASK,
        "data_hash": data_hash or card["data_hash"],
        "leaked_test_rows": rows,
    }
    path.write_text(json.dumps(record))
    return path


def _fit(stage, probe_config, audit, name):
    root, task_dir = stage
    shots = root / "shots" / f"{TASK}-clean.json"
    write_shot_indices(
        train=task_dir / "train.parquet",
        card=task_dir / "card.json",
        output=shots,
        task=TASK,
        protocol="geneb-paper",
        settings=probe_config["geneb-paper"],
    )
    return fit_probes(
        train=task_dir / "train.parquet",
        test=task_dir / "test.parquet",
        card=task_dir / "card.json",
        embeddings=root / "kmer-3.h5",
        shots=shots,
        scores_out=root / name / "scores.parquet",
        predictions_out=root / name / "preds.parquet",
        task=TASK,
        model="kmer-3",
        protocol="geneb-paper",
        settings=probe_config["geneb-paper"],
        audit=audit,
    )


def test_no_leaked_rows_gives_clean_equal_to_full_bit_for_bit(stage, probe_config):
    audit = _audit(stage[1], stage[0] / "audit-none.json", [])
    scores = _fit(stage, probe_config, audit, "none")
    base = scores[~scores["metric"].str.endswith("_dedup") & (scores["metric"] != "AUROC")]
    assert np.array_equal(base["value"].to_numpy(), base["value_clean"].to_numpy())
    mcc = scores[scores["metric"] == "MCC"]
    assert np.array_equal(mcc["ci_low"], mcc["ci_low_clean"]) and np.array_equal(mcc["ci_high"], mcc["ci_high_clean"])
    assert (mcc["n_test_clean"] == mcc["n_test"]).all()
    # the copied full values are what scoring every test row again computes (the path of a task with leaked rows)
    proto = from_config("geneb-paper", probe_config["geneb-paper"])
    b = proto.bootstrap
    preds = pd.read_parquet(stage[0] / "none" / "preds.parquet")
    classes = np.unique(preds["y_true"])
    for (regime, seed), g in preds.groupby(["regime", "seed"]):
        got = scores[(scores["regime"] == regime) & (scores["seed"] == seed)].set_index("metric")
        want = metrics.label_scores(g["y_true"].to_numpy(), g["y_pred"].to_numpy(), classes, proto.f1_labels)
        want["AUROC"] = roc_auc_score(g["y_true"], g["score"])
        assert {m: got.at[m, "value_clean"] for m in want} == want
        k = 0 if regime == "full" else int(regime.removesuffix("shot"))
        rng = np.random.default_rng([b.seed, k, proto.seeds[0] if regime == "full" else seed])
        ci = metrics.bootstrap_mcc_ci(
            g["y_true"].to_numpy(),
            g["y_pred"].to_numpy(),
            2,
            n_resamples=b.n_resamples,
            confidence=b.confidence,
            method=b.method,
            rng=rng,
        )
        assert (got.at["MCC", "ci_low_clean"], got.at["MCC", "ci_high_clean"]) == ci


def test_leaked_rows_are_left_out_of_the_clean_value_only(stage, probe_config):
    test = pd.read_parquet(stage[1] / "test.parquet")
    leaked = test["row"].iloc[: len(test) // 3].astype(int).tolist()
    full = _fit(stage, probe_config, _audit(stage[1], stage[0] / "audit-none2.json", []), "base")
    scores = _fit(stage, probe_config, _audit(stage[1], stage[0] / "audit-third.json", leaked), "third")
    # the full-split scores do not move
    assert np.array_equal(full["value"].to_numpy(), scores["value"].to_numpy(), equal_nan=True)
    preds = pd.read_parquet(stage[0] / "third" / "preds.parquet")
    g = preds[(preds["regime"] == "10shot") & (preds["seed"] == 42)]
    kept = g[~g["row"].isin(leaked)]
    row = scores[(scores["regime"] == "10shot") & (scores["seed"] == 42) & (scores["metric"] == "MCC")].iloc[0]
    assert row["value_clean"] == pytest.approx(matthews_corrcoef(kept["y_true"], kept["y_pred"]), abs=1e-12)
    assert row["n_test_clean"] == len(test) - len(leaked)
    assert row["ci_low_clean"] <= row["value_clean"] <= row["ci_high_clean"]


def test_an_audit_of_other_data_is_refused(stage, probe_config):
    audit = _audit(stage[1], stage[0] / "audit-other.json", [], data_hash="0" * 64)
    with pytest.raises(AuditFileError, match="other data"):
        _fit(stage, probe_config, audit, "other")


def test_every_row_leaked_gives_nan_not_an_error(probe_config):
    proto = from_config("geneb-paper", probe_config["geneb-paper"])
    preds = pd.DataFrame({"regime": "full", "seed": 13, "row": [0, 1, 2], "y_true": [0, 1, 0], "y_pred": [0, 1, 1]})
    preds["score"] = [0.2, 0.8, 0.6]
    scores = pd.DataFrame({"regime": "full", "seed": 13, "metric": ["MCC", "AUROC"], "value": [0.5, 1.0]})
    out = clean_columns(scores, preds, [0, 1, 2], np.array([0, 1]), proto)
    assert out["value_clean"].isna().all() and (out["n_test_clean"] == 0).all()
    with pytest.raises(ValueError, match="not rows of the test split"):
        clean_columns(scores, preds, [9], np.array([0, 1]), proto)
