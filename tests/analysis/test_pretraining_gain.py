"""Model minus random-init twin (geneb.analysis.controls): the paired row bootstrap per task, Holm's
correction, the two-level category interval (never of zero width for a one-task category while rows vary), and
NA with the reason when predictions are missing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import matthews_corrcoef
from statsmodels.stats.multitest import multipletests

from geneb.analysis.controls import _holm, _twin_pairs, pretraining_gain_tables
from geneb.analysis.inputs import RunContext

SETTINGS = {"confidence": 0.95, "bootstrap": {"n_resamples": 400, "seed": 0}}
#: (task, category, accuracy of the model, accuracy of its twin)
TASKS = [("t_prom_a", "Promoters", 0.9, 0.6), ("t_prom_b", "Promoters", 0.8, 0.8), ("t_enh", "Enhancers", 0.75, 0.7)]


def _predictions(root, rng):
    cells = []
    for task, category, acc_model, acc_twin in TASKS:
        y = rng.integers(0, 2, 400)
        for model, acc in (("m", acc_model), ("m-twin", acc_twin)):
            preds = [np.where(rng.random(len(y)) < acc, y, 1 - y) for _ in range(2)]
            frame = pd.concat(
                pd.DataFrame({"regime": "full", "seed": s, "row": np.arange(len(y)), "y_true": y, "y_pred": p})
                for s, p in enumerate(preds)
            )
            (root / "geneb-paper" / model).mkdir(parents=True, exist_ok=True)
            frame.to_parquet(root / "geneb-paper" / model / f"{task}.parquet")
            value = float(np.mean([matthews_corrcoef(y, p) for p in preds]))
            cells.append(
                {
                    "protocol": "geneb-paper",
                    "model": model,
                    "task": task,
                    "category": category,
                    "regime": "full",
                    "value": value,
                }
            )
    return pd.DataFrame(cells)


def _context(cells, root):
    meta = pd.DataFrame({"twin_of": ["", "m"]}, index=pd.Index(["m", "m-twin"], name="model"))
    return RunContext(
        scores=cells.assign(metric="MCC"),
        model_meta=meta,
        task_meta=None,
        declared_pairs=[],
        settings=SETTINGS,
        used=cells,
        contaminated=cells.iloc[:0],
        board=pd.DataFrame(),
        predictions_root=root,
    )


@pytest.fixture
def run(tmp_path):
    cells = _predictions(tmp_path / "predictions", np.random.default_rng(7))
    return cells, tmp_path / "predictions"


def test_gains_tests_and_intervals_per_task_category_and_macro(run):
    cells, root = run
    ctx = _context(cells, root)
    table = pretraining_gain_tables(ctx)["pretraining_gain"]
    tasks = table[table["level"] == "task"].set_index("task")
    value = cells.pivot(index="task", columns="model", values="value")
    np.testing.assert_allclose(tasks["gain"], (value["m"] - value["m-twin"])[tasks.index])
    # 0.9 against 0.6 accuracy on 400 rows: a significant win; 0.8 against 0.8: none
    assert tasks.loc["t_prom_a", "n_wins"] == 1 and tasks.loc["t_prom_a", "gain_ci_low"] > 0
    assert tasks.loc["t_prom_b", "n_wins"] == 0 and tasks.loc["t_prom_b", "n_losses"] == 0
    np.testing.assert_allclose(tasks["p_holm"], multipletests(tasks["p_bootstrap"], method="holm")[1])
    cats = table[table["level"] != "task"].set_index("category")
    assert cats.loc["Promoters", "n_tasks"] == 2 and cats.loc["Promoters", "fraction_won"] == 0.5
    assert cats.loc["macro", "n_tasks"] == 3
    assert cats.loc["macro", "gain"] == pytest.approx(tasks["gain"].mean())
    # the one-task category keeps the row level: its interval is that task's row-bootstrap interval, not a point
    enh = cats.loc["Enhancers"]
    assert enh["gain_ci_high"] - enh["gain_ci_low"] > 0.02
    assert (enh["gain_ci_low"], enh["gain_ci_high"]) == (
        tasks.loc["t_enh", "gain_ci_low"],
        tasks.loc["t_enh", "gain_ci_high"],
    )
    assert (table["twin"] == "m-twin").all() and (table["seed"] == 0).all() and (table["alpha"] == 0.05).all()
    head = ctx.summary["pretraining_gain"]["headlines"][0]
    assert (head["n_wins"], head["n_tested"]) == (int(tasks["n_wins"].sum()), 3)
    assert head["sentence"].startswith(f"pretraining beats its random-init twin significantly on {head['n_wins']} of 3")
    # one seed, one table
    again = pretraining_gain_tables(_context(cells, root))["pretraining_gain"]
    pd.testing.assert_frame_equal(table, again)


def test_missing_predictions_give_na_with_the_reason_and_no_twin_gives_a_note(run):
    cells, root = run
    (root / "geneb-paper" / "m-twin" / "t_enh.parquet").unlink()
    table = pretraining_gain_tables(_context(cells, root))["pretraining_gain"].set_index(["level", "category"])
    enh = table.loc[("task", "Enhancers")]
    assert pd.isna(enh["gain_ci_low"]) and pd.isna(enh["n_wins"]) and "no predictions" in enh["note"]
    assert (
        pd.isna(table.loc[("macro", "macro"), "gain_ci_low"])
        and "no predictions" in table.loc[("macro", "macro"), "note"]
    )
    assert table.loc[("category", "Promoters"), "gain_ci_low"] > -1  # the other categories keep theirs
    ctx = _context(cells[cells["model"] == "m"], root)
    assert pretraining_gain_tables(ctx)["pretraining_gain"].empty
    assert "twins: true" in ctx.summary["pretraining_gain"]["note"]


def test_pairs_and_holm():
    meta = pd.DataFrame({"twin_of": ["", "a", "", "zz"]}, index=["a", "a-twin", "b", "zz-twin"])
    assert _twin_pairs(meta, ["a", "a-twin", "b", "zz-twin"]) == [("a", "a-twin")]
    p = np.array([0.01, np.nan, 0.04, 0.03])
    out = _holm(p)
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])
