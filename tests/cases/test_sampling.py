"""Failure cases of kind `sampling` and probe training (../shared/cases/CASES.md): repeated few-shot
draws, a one-class training set, inner CV with too few members per class, convergence, scaling and
scikit-learn default drift."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from geneb.encoders.families.kmer import KmerEncoder
from geneb.probe.fit import TaskArrays, fit_all, fit_scaler
from geneb.probe.protocols import from_config
from geneb.probe.shots import ProbeInputError, build_shots
from geneb.tasks.prepare import stratified_cap


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    with threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def cfg(repo):
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())["probe"]


@pytest.fixture(scope="module")
def promoters(shared):
    """The real GUE core-promoter TATA task, 1000 training rows (stratified cap), 3-mer frequencies."""
    folder = shared / "data" / "tasks" / "gue_prom_core_tata"
    tr = pd.read_csv(folder / "train.csv.gz")
    tr = tr.iloc[stratified_cap(tr["label"].to_numpy(), 1000, 0)]
    te = pd.read_csv(folder / "test.csv.gz")
    enc = KmerEncoder(3)
    return TaskArrays(
        "gue_prom_core_tata",
        enc.embed(tr["sequence"].tolist()).embeddings,
        tr["label"].to_numpy(),
        np.arange(len(tr)),
        enc.embed(te["sequence"].tolist()).embeddings,
        te["label"].to_numpy(),
        np.arange(len(te)),
    )


def _shots(data, name, settings):
    return build_shots(data.task, name, data.y_train, data.rows_train, "h", settings)


def _tiny(y_train, y_test, seed=0, d=4):
    rng = np.random.default_rng(seed)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    X = lambda y: (rng.normal(size=(len(y), d)) + y[:, None]).astype(np.float32)  # noqa: E731
    return TaskArrays("tiny", X(y_train), y_train, np.arange(len(y_train)), X(y_test), y_test, np.arange(len(y_test)))


# ---- repeated few-shot draws must each use their own seed -------------------------------------------------


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_repeated_draws_use_distinct_seeds(cfg, protocol):
    # pool of 100 rows (50/50), 10-shot, experiments i = 0..4 whose seeds start at 7; every experiment's
    # seed is written in config and on every output row (GENEB has no hidden "base seed + experiment").
    y = np.array([0, 1] * 50)
    settings = {**cfg[protocol], "seeds": [7, 8, 9, 10, 11], "few_shot_k": [10]}
    shots = build_shots("pool", protocol, y, np.arange(100), "h", settings)
    sets = [tuple(sorted(d["rows"])) for d in shots["draws"]]
    assert [d["seed"] for d in shots["draws"]] == [7, 8, 9, 10, 11]
    assert all(np.bincount(y[list(s)]).tolist() == [10, 10] for s in sets)
    assert all(a != b for a, b in itertools.combinations(sets, 2))
    assert shots["distinct_draws"] == {"10shot": 5}
    again = build_shots("pool", protocol, y, np.arange(100), "h", {**settings, "seeds": [10]})
    assert again["draws"][0]["rows"] == shots["draws"][3]["rows"]  # (seed 7, i = 3) twice: identical lists


def test_whole_kind_every_draw_input_is_used(cfg, promoters):
    # an argument that is passed and never used: the nested draw must move with the data hash too, and the
    # probe must fit each seed on its own draw (different predictions), not one draw reused
    y = promoters.y_train
    a = build_shots("t", "geneb-strict", y, promoters.rows_train, "hash-a", cfg["geneb-strict"])
    b = build_shots("t", "geneb-strict", y, promoters.rows_train, "hash-b", cfg["geneb-strict"])
    assert all(set(x["rows"]) != set(z["rows"]) for x, z in zip(a["draws"], b["draws"]) if x["k"] > 1)
    for name in ("geneb-paper", "geneb-strict"):
        p = from_config(name, cfg[name])
        fits, _ = fit_all(promoters, p, _shots(promoters, name, cfg[name]))
        ten = [f.y_pred.tobytes() for f in fits if f.regime == "10shot"]
        assert len(ten) == len(p.seeds) and len(set(ten)) == len(ten)


@pytest.mark.parametrize(
    "damage",
    [
        "draw deleted",
        "row repeated",
        "full_rows cut",
        "draw repeated",
        "regime renamed",
        "row outside full",
        "one class short",
    ],
)
def test_a_shot_file_that_is_not_its_settings_draw_is_refused(cfg, damage):
    """Every model reads the same shot file; one edited or damaged by hand (a draw missing, so a seed silently
    drops out of the mean; a repeated row; a shortened full set) is refused, naming the file."""
    import copy

    from geneb.probe.shots import check_shots

    y, rows = np.array([0, 1, 2] * 40), np.arange(100, 220)
    settings = {**cfg["geneb-strict"], "seeds": [0, 1, 2]}
    good = build_shots("t", "geneb-strict", y, rows, "h", settings)
    check_shots(good, rows, y, path="shots.json")  # the real draw passes
    bad = copy.deepcopy(good)
    ten = next(d for d in bad["draws"] if d["regime"] == "10shot")
    if damage == "draw deleted":
        bad["draws"].remove(ten)
    elif damage == "row repeated":
        ten["rows"][1] = ten["rows"][0]
    elif damage == "full_rows cut":
        bad["full_rows"] = bad["full_rows"][:60]
    elif damage == "draw repeated":
        bad["draws"].append(copy.deepcopy(ten))
    elif damage == "regime renamed":
        ten["regime"] = "5shot"
    elif damage == "row outside full":
        ten["rows"][0] = int(rows[0]) - 1  # not a training row at all
    else:
        ten["rows"] = ten["rows"][:-1]
    with pytest.raises(ProbeInputError, match=r"shots.json: .*rerun write_shot_indices"):
        check_shots(bad, rows, y, path="shots.json")


# ---- a one-class training set is refused before any fit ---------------------------------------------------


def test_one_class_training_set_is_refused_before_fit(cfg, monkeypatch):
    data = _tiny([0, 0, 0, 1, 1, 1], [0, 1, 0, 1])
    shots = _shots(data, "geneb-paper", cfg["geneb-paper"])
    bad = next(d for d in shots["draws"] if d["regime"] == "1shot" and d["seed"] == 42)
    bad["rows"] = [0, 1]  # after sampling the training labels are [0, 0]

    def no_fit(*args, **kwargs):
        raise AssertionError("LogisticRegression.fit was called")

    monkeypatch.setattr(LogisticRegression, "fit", no_fit)
    with pytest.raises(ProbeInputError) as err:
        fit_all(data, from_config("geneb-paper", cfg["geneb-paper"]), shots)
    msg = str(err.value)
    assert "task 'tiny'" in msg and "regime '1shot'" in msg and "seed 42" in msg and "lacks class(es) [1]" in msg


def test_whole_kind_single_class_split_is_refused(cfg):
    data = _tiny([0, 0, 0], [0, 0])
    with pytest.raises(ProbeInputError, match=r"regime 'full', seed 13: .*fewer than 2 classes"):
        fit_all(data, from_config("geneb-paper", cfg["geneb-paper"]), _shots(data, "geneb-paper", cfg["geneb-paper"]))


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_one_row_per_class_fits_and_predicts(cfg, protocol):
    data = _tiny([0, 1], [0, 1, 1, 0])
    fits, _ = fit_all(data, from_config(protocol, cfg[protocol]), _shots(data, protocol, cfg[protocol]))
    assert all(f.n_train == 2 and len(f.y_pred) == 4 and set(f.y_pred) <= {0, 1} for f in fits)


# ---- no inner CV where the classes are too small ---------------------------------------------------------


@pytest.fixture
def kfold_spy(monkeypatch):
    made = []
    init = StratifiedKFold.__init__

    def spy(self, n_splits=5, *, shuffle=False, random_state=None):
        made.append(n_splits)
        init(self, n_splits, shuffle=shuffle, random_state=random_state)

    monkeypatch.setattr(StratifiedKFold, "__init__", spy)
    return made


def test_few_shot_regimes_never_run_inner_cv(cfg, promoters, kfold_spy):
    p = from_config("geneb-strict", cfg["geneb-strict"])
    fit_all(promoters, p, _shots(promoters, "geneb-strict", cfg["geneb-strict"]))
    assert kfold_spy == [5]  # only the full regime's inner CV, none for the 20 few-shot fits
    kfold_spy.clear()
    no_full = _shots(promoters, "geneb-strict", cfg["geneb-strict"])
    no_full["full_rows"] = no_full["draws"][1]["rows"]  # the full regime fed a 1-shot set: still no CV
    fits, _ = fit_all(promoters, p, no_full)
    assert kfold_spy == [] and fits[0].C_selection.startswith("fixed: a class has fewer than 2")


def test_inner_cv_folds_shrink_to_the_smallest_class(cfg, kfold_spy):
    data = _tiny([0] * 12 + [1] * 3, [0, 1] * 4, d=3)
    fits, _ = fit_all(
        data, from_config("geneb-strict", cfg["geneb-strict"]), _shots(data, "geneb-strict", cfg["geneb-strict"])
    )
    # 12:3 is imbalanced (>= 3:1): balanced class weights under balanced_if_imbalanced
    assert kfold_spy == [3] and fits[0].C_selection == "inner 3-fold CV (log_loss), class_weight balanced"


# ---- scaling on train rows only, convergence recorded, every hyperparameter explicit ------------------------


def _scaled(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 20)
    X = (rng.normal(size=(40, 3)) + y[:, None]) * 1e4
    Xt = (rng.normal(size=(30, 3)) + 5.0) * 1e4  # test rows far from the training mean
    return TaskArrays(
        "scaled", X.astype(np.float32), y, np.arange(40), Xt.astype(np.float32), np.repeat([0, 1], 15), np.arange(30)
    )


def test_scaler_is_fitted_on_train_rows_only(cfg):
    data = _scaled()
    scaler = fit_scaler(data.X_train)
    assert np.allclose(scaler.mean_, data.X_train.mean(axis=0))
    assert not np.allclose(scaler.mean_, np.vstack([data.X_train, data.X_test]).mean(axis=0))
    # behaviour, not just the helper: predictions of the first test rows ignore the rest of the test split
    p = from_config("geneb-strict", cfg["geneb-strict"])
    shots = _shots(data, "geneb-strict", cfg["geneb-strict"])
    whole, _ = fit_all(data, p, shots)
    half = TaskArrays(
        "scaled", data.X_train, data.y_train, data.rows_train, data.X_test[:10], data.y_test[:10], data.rows_test[:10]
    )
    part, _ = fit_all(half, p, shots)
    for a, b in zip(whole, part):
        assert np.array_equal(a.y_pred[:10], b.y_pred) and np.allclose(a.proba[:10], b.proba)


def test_non_convergence_is_recorded_not_swallowed(cfg):
    data = _scaled()
    p = from_config("geneb-paper", {**cfg["geneb-paper"], "max_iter": 3})  # raw 1e4-scale features
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # none may escape unrecorded
        fits, _ = fit_all(data, p, _shots(data, "geneb-paper", cfg["geneb-paper"]))
    full = fits[0]
    assert full.converged is False and full.n_iter == 3
    ok, _ = fit_all(
        data, from_config("geneb-strict", cfg["geneb-strict"]), _shots(data, "geneb-strict", cfg["geneb-strict"])
    )
    assert all(f.converged and f.n_iter < 1000 for f in ok)


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_every_hyperparameter_is_explicit_and_no_deprecated_argument_is_used(cfg, protocol):
    p = from_config(protocol, cfg[protocol])
    weight = p.class_weight_for(np.array([0] * 9 + [1] * 3))  # a 3:1 task
    lr = p.logistic_regression(p.C, seed=7, class_weight=weight).get_params()
    for key in ("C", "solver", "max_iter", "tol"):
        assert lr[key] == cfg[protocol][key]
    assert lr["class_weight"] == {"geneb-paper": None, "geneb-strict": "balanced"}[protocol]
    assert lr["l1_ratio"] == 0.0 and lr["penalty"] == "deprecated"  # L2 stated the scikit-learn >= 1.8 way
    assert lr["random_state"] == 7
    data = _scaled()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # penalty=, LogisticRegressionCV scoring/l1_ratios defaults
        warnings.simplefilter("error", DeprecationWarning)
        fit_all(data, p, _shots(data, protocol, cfg[protocol]))
