"""The paired test between two cells of a task (geneb.analysis.stats) and `geneb compare-cells`."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import matthews_corrcoef

from geneb.analysis.stats import _mcnemar, compare_cells
from geneb.cli import main
from geneb.probe.metrics import paired_bootstrap_mcc_difference
from geneb.tables.scores import AnalysisInputError


def _cell(y, preds, seeds=None):
    seeds = seeds or list(range(len(preds)))
    return pd.concat(
        [
            pd.DataFrame({"regime": "full", "seed": s, "row": np.arange(len(y)), "y_true": y, "y_pred": p})
            for s, p in zip(seeds, preds)
        ]
    )


def test_difference_ci_and_mcnemar_match_independent_computations():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    a = np.where(rng.random(300) < 0.85, y, 1 - y)
    b = np.where(rng.random(300) < 0.70, y, 1 - y)
    r = compare_cells(_cell(y, [a, a]), _cell(y, [b]), task="t", n_resamples=2000, seed=1)
    assert r["mcc_a"] == pytest.approx(matthews_corrcoef(y, a)) and r["mcc_b"] == pytest.approx(matthews_corrcoef(y, b))
    ref = paired_bootstrap_mcc_difference(y, a, b, np.array([0, 1]), n_resamples=2000, seed=1)
    assert r["difference"] == pytest.approx(ref["difference"])
    assert r["ci_low"] == pytest.approx(ref["ci_low"], abs=0.03) and r["ci_high"] == pytest.approx(
        ref["ci_high"], abs=0.03
    )
    only_a, only_b = int(np.sum((a == y) & (b != y))), int(np.sum((a != y) & (b == y)))
    assert (r["a_only_correct"], r["b_only_correct"]) == (only_a, only_b)
    assert r["p_mcnemar"] == pytest.approx(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)
    assert r["p_bootstrap"] < 0.05 and r["ci_low"] > 0


def test_mcnemar_needs_one_prediction_per_item_and_equal_cells_give_p_one():
    y = np.array([0, 1, 0, 1])
    out = _mcnemar(y, [y, 1 - y], [y])
    assert pd.isna(out["p_mcnemar"]) and "predict differently" in out["mcnemar_note"]
    assert _mcnemar(y, [y], [y])["p_mcnemar"] == 1.0


def test_cells_on_different_items_are_refused():
    y = np.array([0, 1, 0, 1])
    other = _cell(y, [y]).assign(row=lambda d: d["row"] + 10)
    with pytest.raises(AnalysisInputError, match="different test rows"):
        compare_cells(_cell(y, [y]), other, task="t")


def test_compare_cells_command(view_run, capsys, monkeypatch):
    monkeypatch.chdir(view_run)
    a = "model=m-mid,view=L2|mean|rc0,protocol=geneb-paper"
    assert main(["compare-cells", "--task", "t00", "--a", a, "--b", "view=L4|mean|rc0", "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "b: model=m-mid view=L4|mean|rc0 protocol=geneb-paper regime=full" in out
    assert "MCC(a) - MCC(b) = +0.2" in out and "McNemar (exact binomial)" in out
    assert main(["compare-cells", "--task", "t00", "--a", "model=m-mid", "--b", "model=m-a"]) == 2
    assert "name one (protocol=...)" in capsys.readouterr().err
    assert main(["compare-cells", "--task", "t00", "--a", a, "--b", "view=L9|mean|rc0"]) == 2
    assert "has no view 'L9|mean|rc0'" in capsys.readouterr().err
