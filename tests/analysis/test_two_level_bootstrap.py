"""The two-level bootstrap (tasks within categories, then test rows within each drawn task): never an interval
narrower than the data allow.

The test labels are real (the test splits of mirrored tasks in ../shared); the predictions are the labels with a
seeded share of rows flipped (`synth.predictions`), so each model's per-task MCC is known and its row-level
spread is real sampling noise.
"""

import numpy as np
import pandas as pd
import pytest

from geneb.analysis import stats
from geneb.analysis.evaluation import _compare_leaderboards
from geneb.analysis.published import compare_intervals
from geneb.analysis.ranking import rank_intervals
from geneb.probe.metrics import batched_mcc
from synth import predictions

#: one real binary task per category (test splits of 400 to 1,500 rows)
ONE_PER_CATEGORY = {
    "gue_emp_h3__devtrain": "Histone Mod.",
    "gue_prom_core_tata": "Promoters",
    "ienhancer2l_enhancer_vs_non": "Enhancers",
}
#: models and their accuracies: close enough that the rows decide their order
ACCURACY = {"m1": 0.80, "m2": 0.78, "m3": 0.76}


def _labels(shared, task: str) -> np.ndarray:
    y = pd.read_csv(shared / "data" / "tasks" / task / "test.csv.gz", usecols=["label"])["label"].to_numpy()
    return y[:400]


def _run(shared, tasks: dict[str, str], accuracy=ACCURACY):
    """(matrix (models, tasks) of seed-mean MCC, categories, predictions {(model, task): frame})."""
    preds, cells = {}, {}
    for t_i, task in enumerate(tasks):
        y = _labels(shared, task)
        for m_i, (model, acc) in enumerate(accuracy.items()):
            df = predictions(y, acc, seed=100 * t_i + m_i)
            preds[(model, task)] = df
            idx = np.arange(len(y))[None]
            cells[(model, task)] = float(batched_mcc(y[idx], df["y_pred"].to_numpy()[idx], 2)[0])
    matrix = pd.Series(cells).unstack()
    return matrix.loc[list(accuracy), list(tasks)], pd.Series(tasks), preds


def test_one_task_per_category_varies_with_rows_and_is_undefined_without(shared):
    matrix, cats, preds = _run(shared, ONE_PER_CATEGORY)
    rep, rows = stats.two_level_replicates(matrix, cats, preds, "full", n_resamples=400, seed=5)
    assert rows is not None and rep.rows_resampled and rep.defined.all() and rep.seed == 5
    low, high = rep.interval(0.95)
    assert (high - low > 0.01).all()  # every category and the macro: rows vary, so the interval is not a point
    # the point estimates are the task MCCs, whatever is resampled
    assert np.allclose(rep.point[:, :-1], matrix.to_numpy())

    bare, none = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=400, seed=5)
    assert none is None and not bare.defined.any()
    low, high = bare.interval(0.95)
    assert np.isnan(low).all() and np.isnan(high).all()  # undefined, not [point, point]
    assert bare.reasons[0, 0].startswith("category 'Histone Mod.' has one task and no per-row predictions")
    ri = rank_intervals(bare, 0.95)
    assert ri["rank_low"].isna().all() and ri["p_top1"].isna().all()
    assert (ri["interval_reason"] != "").all() and (ri["seed"] == 5).all()
    ri = rank_intervals(rep, 0.95)
    assert ri["rank_low"].notna().all() and (ri["interval_reason"] == "").all()
    assert (ri["rank_high"] > ri["rank_low"]).any()  # close models: the order is not resolved by the rows


def test_a_model_without_predictions_of_a_single_task_category_is_undefined_there(shared):
    matrix, cats, preds = _run(shared, ONE_PER_CATEGORY)
    del preds[("m2", "gue_prom_core_tata")]
    rep, _ = stats.two_level_replicates(matrix, cats, preds, "full", n_resamples=200, seed=1)
    promoters = rep.columns.index("Promoters")
    assert not rep.defined[1, promoters] and not rep.defined[1, -1]  # its category and its macro
    assert "no per-row predictions of 'm2' for gue_prom_core_tata" in rep.reasons[1, promoters]
    assert rep.defined[[0, 2]].all() and rep.defined[1, [0, 2]].all()
    low, _ = rep.interval(0.95)
    assert np.isnan(low[1, promoters]) and np.isfinite(low[0, promoters])
    # a statistic over every model (ranks) is undefined in that column
    ri = rank_intervals(rep, 0.95)
    assert ri.loc[ri["category"] == "Promoters", "rank_low"].isna().all()
    assert ri.loc[ri["category"] == "Histone Mod.", "rank_low"].notna().all()


def test_sensitivity_tau_interval_has_width_from_rows_and_a_reason_without(shared):
    matrix, cats, preds = _run(shared, ONE_PER_CATEGORY)
    # the alternative view: the same models, a little worse and reordered (other predictions of the same rows)
    alt_m, _, alt_preds = _run(shared, ONE_PER_CATEGORY, {"m1": 0.75, "m2": 0.79, "m3": 0.77})
    kw = {"n_resamples": 300, "seed": 3, "confidence": 0.95}
    st, *_ = _compare_leaderboards(matrix, alt_m, cats, predictions=(preds, alt_preds), regime="full", **kw)
    assert st["ci_reason"] == "" and st["tau_ci_high"] > st["tau_ci_low"]
    assert st["winners_changed_ci_high"] >= st["winners_changed_ci_low"]
    st, *_ = _compare_leaderboards(matrix, alt_m, cats, **kw)  # no predictions: one task per category
    assert np.isnan(st["tau_ci_low"]) and np.isnan(st["tau_ci_high"]) and np.isnan(st["winners_changed_ci_low"])
    assert "has one task and no per-row predictions" in st["ci_reason"]
    assert np.isfinite(st["kendall_tau"])  # the point statistic stays


def test_many_tasks_per_category_match_the_task_bootstrap(shared):
    rng = np.random.default_rng(0)
    tasks = {f"t{i}": ("Promoters" if i < 20 else "Enhancers") for i in range(40)}
    matrix = pd.DataFrame(rng.uniform(0.1, 0.9, (3, 40)), index=list(ACCURACY), columns=list(tasks))
    cats = pd.Series(tasks)
    # without predictions: exactly the task-only bootstrap of before (same draws, same intervals)
    rep, _ = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=500, seed=2)
    old = stats.category_replicates(matrix, cats, None, n_resamples=500, seed=2)
    assert np.array_equal(rep.draws, old.draws) and rep.defined.all()
    lo, hi = rep.interval(0.95)
    assert np.isfinite(lo).all() and (hi > lo).all()
    # with per-row predictions of 400 real test rows: the task spread dominates, the interval barely widens
    y = _labels(shared, "gue_prom_core_tata")
    preds, cells = {}, {}
    for t_i, task in enumerate(tasks):
        for m_i, model in enumerate(ACCURACY):
            df = predictions(y, 0.55 + 0.4 * matrix.iloc[m_i, t_i], seed=1000 + 10 * t_i + m_i)
            preds[(model, task)] = df
            idx = np.arange(len(y))[None]
            cells[(model, task)] = float(batched_mcc(y[idx], df["y_pred"].to_numpy()[idx], 2)[0])
    matrix = pd.Series(cells).unstack().loc[list(ACCURACY), list(tasks)]
    task_only, _ = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=500, seed=2)
    both, _ = stats.two_level_replicates(matrix, cats, preds, "full", n_resamples=500, seed=2)
    t_lo, t_hi = task_only.interval(0.95)
    b_lo, b_hi = both.interval(0.95)
    width_t, width_b = t_hi - t_lo, b_hi - b_lo
    assert (width_b >= 0.9 * width_t).all() and (width_b <= 1.35 * width_t).all()
    assert np.abs((b_lo + b_hi) / 2 - (t_lo + t_hi) / 2).max() < 0.03


def test_compare_intervals_mark_the_undefined_with_a_reason():
    rng = np.random.default_rng(4)
    tasks = {"a1": "Promoters", "a2": "Promoters", "a3": "Promoters", "b1": "Coding/NC"}
    rows = [
        {"protocol": "geneb-paper", "regime": "full", "model": m, "task": t, "category": c, "value": rng.uniform()}
        for m in ("p1", "p2", "p3")
        for t, c in tasks.items()
    ]
    cells = pd.DataFrame(rows)
    board = pd.DataFrame(
        [
            {"protocol": "geneb-paper", "regime": "full", "category": c, "model": m, "rank": 1}  # every one ranked
            for m in ("p1", "p2", "p3")
            for c in ("Promoters", "Coding/NC", "macro")
        ]
    )
    out = compare_intervals(board, cells, confidence=0.95, n_resamples=200, seed=9).set_index(["category", "model"])
    assert out.loc["Promoters", "ci_low"].notna().all() and (out.loc["Promoters", "interval_reason"] == "").all()
    for col in ("Coding/NC", "macro"):  # one task, no rows: nothing varies, nor in a macro over it
        assert out.loc[col, "ci_low"].isna().all() and out.loc[col, "rank_low"].isna().all()
        assert (out.loc[col, "interval_reason"] != "").all()
    assert (out["seed"] == 9).all()
    assert out.loc[("Promoters", "p1"), "ci_low"] <= out.loc[("Promoters", "p1"), "ci_high"]


def test_two_level_replicates_are_seeded():
    matrix = pd.DataFrame({"a": [0.5, 0.4], "b": [0.3, 0.6], "c": [0.2, 0.1]}, index=["x", "y"])
    cats = pd.Series({"a": "Promoters", "b": "Promoters", "c": "Promoters"})
    one, _ = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=100, seed=1)
    two, _ = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=100, seed=1)
    other, _ = stats.two_level_replicates(matrix, cats, None, "full", n_resamples=100, seed=2)
    assert np.array_equal(one.draws, two.draws) and not np.array_equal(one.draws, other.draws)
    with pytest.raises(Exception, match="missing cells"):
        stats.two_level_replicates(matrix.assign(a=[np.nan, 0.1]), cats, None, "full", n_resamples=10, seed=1)
