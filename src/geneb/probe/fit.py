"""Fitting probes: one logistic-regression fit with its convergence and the choice of C, and every probe of
one (model, task).

One logistic-regression fit with its convergence recorded, and the choice of the regularization strength C by
stratified inner cross-validation on the training rows (docs/protocols.md, `geneb-strict`).

Every probe of one (model, task): all regimes and seeds of one protocol in one call, in memory.

Input is the frozen embeddings of both splits, the labels, and the persisted shot draws (`shots.py`); output
is one score row per (regime, seed, metric) and one prediction row per (regime, seed, test row). No files
are read or written here (`job.py` does that).

What is fitted (docs/protocols.md):
* full regime: one fit on the whole (possibly capped) training split. With a deterministic solver (lbfgs,
  newton-cg, newton-cholesky ignore `random_state`) there is nothing random left, so it is fitted once; the
  paper protocol reports that one fit under each of its seeds (as the reference, whose five fits are
  identical), geneb-strict reports it once under `cv_seed`. With C_grid set, C is chosen by stratified inner
  CV on the training split (LogisticRegressionCV, the protocol's cv_scoring, ties to the middle of the tied
  run: `_best_C_index`), then refitted.
* k-shot regimes: per seed one fit on the drawn rows with the fixed C; never inner CV (too few rows per
  class). Its class weights (`Protocol.class_weight_for`) are decided by the draw's label counts only, never
  the training split's.
* standardize: a StandardScaler fitted on the training split (its rows only, never test rows) transforms
  both splits; the k-shot probes therefore use training-split statistics, not the statistics of 2 rows.
"""

from __future__ import annotations

import logging
import typing
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info, threadpool_limits

import geneb.probe.metrics as metrics
from geneb.probe.protocols import CV_SCORERS, Protocol, penalty_kwargs
from geneb.probe.shots import ProbeInputError, require_all_classes

_log = logging.getLogger(__name__)


class Estimator(typing.Protocol):
    """What `_fit_recorded` fits: a scikit-learn estimator (LogisticRegression, LogisticRegressionCV)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...


def _fit_recorded(estimator: Estimator, X: np.ndarray, y: np.ndarray, where: str) -> int:
    """Fit, turning ConvergenceWarnings into a count (logged, recorded) and passing other warnings on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    n_conv = 0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            n_conv += 1
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if n_conv:
        _log.warning("%s: %d ConvergenceWarning(s) (recorded as converged=false)", where, n_conv)
    return n_conv


def single_fit(
    protocol: Protocol, X: np.ndarray, y: np.ndarray, C: float, seed: int, where: str, class_weight: str | None
) -> tuple[LogisticRegression, bool, int]:
    lr = protocol.logistic_regression(C, seed, class_weight)
    n_conv = _fit_recorded(lr, X, y, where)
    n_iter = int(np.max(lr.n_iter_))
    return lr, (n_conv == 0 and n_iter < protocol.max_iter), n_iter


def _best_C_index(mean_scores: np.ndarray) -> int:
    """The grid position of the chosen C from the mean inner-CV score per C (ascending grid, higher is better):
    the best; among C values tied at the best (within 1e-12), the middle one of the tied run, so that a flat
    score curve (near-random folds) picks neither the grid's smallest nor its largest C."""
    tied = np.flatnonzero(mean_scores >= mean_scores.max() - 1e-12)
    return int(tied[(len(tied) - 1) // 2])


def _select_C(
    protocol: Protocol, X: np.ndarray, y: np.ndarray, where: str, class_weight: str | None
) -> tuple[float, str, int]:
    """Choose the full-regime C by stratified inner CV on the training rows (X already standardized).

    n_splits = min(cv_folds, smallest class count); below 2 there is no CV and the fixed C is used.
    Scoring: `protocol.cv_scoring` (log_loss in geneb-strict: smooth where MCC on small or hard folds is
    a step function of a few rows); ties: `_best_C_index`. class_weight: the task's (`class_weight_for`).
    Returns (C, how it was chosen, number of inner fits that did not converge).
    """
    if not protocol.tunes_C:
        return protocol.C, "fixed", 0
    n_splits = min(protocol.cv_folds, int(np.bincount(np.unique(y, return_inverse=True)[1]).min()))
    if n_splits < 2:
        return protocol.C, "fixed: a class has fewer than 2 training rows, no inner CV", 0
    cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=protocol.cv_seed)
    lrcv = LogisticRegressionCV(
        Cs=list(protocol.C_grid),
        cv=cv,
        scoring=CV_SCORERS[protocol.cv_scoring],
        solver=protocol.solver,
        tol=protocol.tol,
        max_iter=protocol.max_iter,
        class_weight=class_weight,
        refit=False,
        random_state=protocol.cv_seed,
        **_lrcv_kwargs(),
    )
    _fit_recorded(lrcv, X, y, f"{where} inner CV")
    raw = lrcv.scores_
    raw = next(iter(raw.values())) if isinstance(raw, dict) else raw  # legacy layout: {class: (folds, Cs)}
    scores = np.asarray(raw).reshape(n_splits, -1, len(protocol.C_grid))[:, 0, :]
    best = _best_C_index(scores.mean(axis=0))
    n_iter = np.asarray(lrcv.n_iter_)
    how = f"inner {n_splits}-fold CV ({protocol.cv_scoring}), class_weight {class_weight}"
    return float(protocol.C_grid[best]), how, int((n_iter >= protocol.max_iter).sum())


def _lrcv_kwargs() -> dict:
    kw = dict(penalty_kwargs())
    if "l1_ratio" in kw:  # scikit-learn >= 1.8: grid of mixing ratios, and the new attribute layout
        kw = {"l1_ratios": (kw["l1_ratio"],)}
        if "use_legacy_attributes" in LogisticRegressionCV().get_params():
            kw["use_legacy_attributes"] = False
    return kw


_log = logging.getLogger(__name__)

#: scikit-learn settings inside the fitting and scoring loops: inputs are already checked here (finite
#: embeddings in TaskArrays.validate, hyperparameters in protocols.from_config), so scikit-learn's per-call
#: re-validation is skipped (`sklearn.config_context`; results are identical, only checks are skipped)
PREVALIDATED = {"assume_finite": True, "skip_parameter_validation": True}

#: threads of every thread pool (BLAS and OpenMP) inside every probe fit and score: one, so that a result never
#: depends on the `threads` knob or on the machine's core count (docs/performance.md, "Agreement across machines")
_PROBE_THREADS = 1
#: the thread-pool fields `thread_record` keeps from threadpoolctl's threadpool_info()
_THREAD_FIELDS = ("user_api", "internal_api", "version", "architecture", "threading_layer", "num_threads")

#: solvers whose fit does not depend on random_state
_DETERMINISTIC_SOLVERS = ("lbfgs", "newton-cg", "newton-cholesky")


@dataclass
class TaskArrays:
    """One task's inputs. X_*: float (n, d) embeddings; y_*: int labels (n,); rows_*: int64 row ids (n,)."""

    task: str
    X_train: np.ndarray
    y_train: np.ndarray
    rows_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    rows_test: np.ndarray

    def validate(self) -> np.ndarray:
        """Check shapes, finiteness and labels; return the task's classes (sorted train labels).

        Raises ProbeInputError naming the task, split, row id and value of the first problem, including a
        test label that never occurs in the training split (no probe could predict it).
        """
        for split, X, y, rows in (
            ("train", self.X_train, self.y_train, self.rows_train),
            ("test", self.X_test, self.y_test, self.rows_test),
        ):
            where = f"task {self.task!r}, split {split!r}"
            if X.ndim != 2 or X.shape[0] != len(y) or len(rows) != len(y) or len(y) == 0:
                raise ProbeInputError(
                    f"{where}: X {X.shape}, labels ({len(y)},), rows ({len(rows)},) do not match or are empty"
                )
            if not np.issubdtype(np.asarray(y).dtype, np.integer):
                raise ProbeInputError(f"{where}: labels must be integers, got dtype {np.asarray(y).dtype}")
            bad = ~np.isfinite(X).all(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ProbeInputError(f"{where}: non-finite embedding at row id {int(rows[i])}")
        if self.X_train.shape[1] != self.X_test.shape[1]:
            raise ProbeInputError(
                f"task {self.task!r}: train width {self.X_train.shape[1]} != test width {self.X_test.shape[1]}"
            )
        classes = np.unique(self.y_train)
        unseen = ~np.isin(self.y_test, classes)
        if unseen.any():
            i = int(np.flatnonzero(unseen)[0])
            raise ProbeInputError(
                f"task {self.task!r}, split 'test': row id {int(self.rows_test[i])} has label {int(self.y_test[i])}, "
                f"which no training row has (training classes {classes.tolist()})"
            )
        return classes


@dataclass
class Fit:
    """One fitted probe's test-split outcome and its record."""

    regime: str
    seeds: tuple[int, ...]  # the seeds this fit is reported under
    y_pred: np.ndarray
    proba: np.ndarray
    n_train: int
    C: float
    C_selection: str
    converged: bool
    n_iter: int
    cv_not_converged: int = 0
    n_short_classes: int = 0


def fit_scaler(X_train: np.ndarray) -> StandardScaler:
    """StandardScaler fitted on the training split's rows only (never test rows)."""
    return StandardScaler().fit(X_train)


def _positions(rows_train: np.ndarray, wanted: list[int], task: str, regime: str, seed: int | None) -> np.ndarray:
    order = np.argsort(rows_train)
    ids = np.asarray(wanted, dtype=np.int64)
    pos = np.searchsorted(rows_train, ids, sorter=order)
    pos = np.minimum(pos, len(order) - 1)
    found = rows_train[order[pos]] == ids
    if not found.all():
        bad = int(ids[np.flatnonzero(~found)[0]])
        raise ProbeInputError(
            f"task {task!r}, regime {regime!r}, seed {seed}: shot row id {bad} is not in the training embeddings"
        )
    return order[pos]


def _training_sets(data: TaskArrays, protocol: Protocol, shots: dict) -> tuple[np.ndarray, np.ndarray, list]:
    """Validate the task, resolve every training set to positions and check it has every class."""
    classes = data.validate()
    task = data.task
    full_pos = _positions(data.rows_train, shots["full_rows"], task, "full", None)
    require_all_classes(data.y_train[full_pos], classes, task=task, regime="full", seed=protocol.seeds[0])
    draws = []
    for d in shots["draws"]:
        regime, seed = d["regime"], int(d["seed"])
        pos = _positions(data.rows_train, d["rows"], task, regime, seed)
        require_all_classes(data.y_train[pos], classes, task=task, regime=regime, seed=seed)
        draws.append((regime, seed, pos, len(d.get("short_classes", {}))))
    return classes, full_pos, draws


def fit_all(data: TaskArrays, protocol: Protocol, shots: dict) -> tuple[list[Fit], np.ndarray]:
    """Fit every regime and seed of `protocol` on one task; return the fits and the task's classes.

    shots: the parsed shot file (`shots.read_shots`): `full_rows` (training row ids of the full regime) and
    `draws` [{regime, seed, rows, short_classes}]. Every training set is resolved and checked to contain every
    class before anything is fitted. Raises ProbeInputError for bad input (see TaskArrays.validate,
    unknown shot rows, missing classes).
    """
    classes, full_pos, draws = _training_sets(data, protocol, shots)
    task = data.task
    fits: list[Fit] = []
    with sklearn.config_context(**PREVALIDATED):
        X_tr, X_te = data.X_train, data.X_test
        if protocol.standardize:
            scaler = fit_scaler(X_tr[full_pos])
            X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)

        def add(
            fitted: tuple[LogisticRegression, bool, int],
            regime: str,
            seeds: tuple[int, ...],
            n_train: int,
            C: float,
            how: str,
            **kw: int,
        ) -> None:
            lr, converged, n_iter = fitted
            fits.append(
                Fit(
                    regime,
                    tuple(seeds),
                    lr.predict(X_te),
                    lr.predict_proba(X_te),
                    n_train,
                    C,
                    how,
                    converged,
                    n_iter,
                    **kw,
                )
            )

        y_full = data.y_train[full_pos]
        where = f"task {task!r}, regime 'full'"
        weight = protocol.class_weight_for(y_full)
        C, how, cv_nc = _select_C(protocol, X_tr[full_pos], y_full, where, weight)
        fit_seeds = [protocol.seeds[0]] if protocol.report_full_per_seed else [protocol.cv_seed]
        if protocol.report_full_per_seed and protocol.solver not in _DETERMINISTIC_SOLVERS:
            fit_seeds = list(protocol.seeds)  # sag/saga shuffle with random_state: one real fit per seed
        for s in fit_seeds:
            reported = protocol.seeds if (protocol.report_full_per_seed and len(fit_seeds) == 1) else (s,)
            add(
                single_fit(protocol, X_tr[full_pos], y_full, C, s, f"{where}, seed {s}", weight),
                "full",
                reported,
                len(full_pos),
                C,
                how,
                cv_not_converged=cv_nc,
            )
        for regime, seed, pos, n_short in draws:
            y_draw = data.y_train[pos]  # the draw's own labels decide its weights: nothing beyond the draw
            fitted = single_fit(
                protocol,
                X_tr[pos],
                y_draw,
                protocol.C,
                seed,
                f"task {task!r}, regime {regime!r}, seed {seed}",
                protocol.class_weight_for(y_draw),
            )
            add(fitted, regime, (seed,), len(pos), protocol.C, "fixed", n_short_classes=n_short)
    return fits, classes


def score_fits(
    data: TaskArrays, protocol: Protocol, fits: list[Fit], classes: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every fit on the test split and lay the results out in long format.

    Returns (scores, predictions). scores: one row per (regime, seed, metric) with value, bootstrap CI on MCC
    (NaN for other metrics), the seed mean/sd/t-CI of the regime, n_train, n_test, n_short_classes, C,
    C_selection, converged, n_iter, cv_not_converged, degenerate_predictions (the fit predicted one class for
    every test row: its MCC is 0 and its CI [0, 0] by definition, not by measurement). predictions: one row per (regime, seed, test row) with
    y_true, y_pred, score (positive-class probability for binary tasks, NaN otherwise) and proba (multiclass tasks:
    the list of float32 probabilities of the sorted classes; None for binary tasks, whose score says it). The bootstrap of a
    fit uses `numpy.random.default_rng([bootstrap.seed, k, seed])` (k = 0 for the full regime).
    """
    b = protocol.bootstrap
    y_enc = metrics.encode(data.y_test, classes, f"task {data.task!r}, split 'test'")
    rows, pred_frames = [], []
    with sklearn.config_context(**PREVALIDATED):
        for f in fits:
            k = 0 if f.regime == "full" else int(f.regime.removesuffix("shot"))
            vals = metrics.score_predictions(data.y_test, f.y_pred, f.proba, classes, protocol.f1_labels)
            rng = np.random.default_rng([b.seed, k, f.seeds[0]])
            p_enc = metrics.encode(f.y_pred, classes, f"task {data.task!r}, regime {f.regime!r} predictions")
            low, high = metrics.bootstrap_mcc_ci(
                y_enc, p_enc, len(classes), n_resamples=b.n_resamples, confidence=b.confidence, method=b.method, rng=rng
            )
            score = f.proba[:, 1] if len(classes) == 2 else np.full(len(f.y_pred), np.nan)
            # multiclass: every class probability, float32 (binary: `score` holds them; kept compact)
            proba = [None] * len(f.y_pred) if len(classes) == 2 else list(f.proba.astype(np.float32))
            degenerate = bool(len(np.unique(f.y_pred)) < 2)  # a constant predictor: MCC 0 with CI [0, 0]
            for seed in f.seeds:
                for m in metrics.METRICS:
                    rows.append(
                        {
                            "regime": f.regime,
                            "seed": seed,
                            "metric": m,
                            "value": vals[m],
                            "ci_low": low if m == "MCC" else np.nan,
                            "ci_high": high if m == "MCC" else np.nan,
                            "n_train": f.n_train,
                            "n_test": len(data.y_test),
                            "n_short_classes": f.n_short_classes,
                            "C": f.C,
                            "C_selection": f.C_selection,
                            "converged": f.converged,
                            "n_iter": f.n_iter,
                            "cv_not_converged": f.cv_not_converged,
                            "degenerate_predictions": degenerate,
                        }
                    )
                pred_frames.append(
                    pd.DataFrame(
                        {
                            "regime": f.regime,
                            "seed": seed,
                            "row": data.rows_test,
                            "y_true": data.y_test,
                            "y_pred": f.y_pred,
                            "score": score,
                            "proba": proba,
                        }
                    )
                )
    scores = pd.DataFrame(rows)
    summary = []
    for (regime, metric), g in scores.groupby(["regime", "metric"], sort=False):
        s = metrics.seed_summary(g["value"].to_numpy(), b.confidence)
        summary.append(
            {
                "regime": regime,
                "metric": metric,
                "seed_mean": s["mean"],
                "seed_sd": s["sd"],
                "seed_ci_low": s["ci_low"],
                "seed_ci_high": s["ci_high"],
                "n_seeds": s["n"],
            }
        )
    scores = scores.merge(pd.DataFrame(summary), on=["regime", "metric"], how="left", validate="many_to_one")
    preds = pd.concat(pred_frames, ignore_index=True)
    return scores, preds


@contextmanager
def probe_thread_limits() -> Iterator[None]:
    """Every BLAS and OpenMP thread pool loaded in the process limited to PROBE_THREADS threads while the block
    runs (threadpoolctl.threadpool_limits with no user_api: both kinds), restored afterwards."""
    with threadpool_limits(limits=_PROBE_THREADS):
        yield


def thread_record() -> dict[str, Any]:
    """The thread pools a probe fit runs with, as recorded beside its scores (geneb.probe.job): {"limit":
    PROBE_THREADS, "pools": [{field: value} for THREAD_FIELDS of each BLAS / OpenMP library threadpoolctl sees
    under `probe_thread_limits`, sorted, duplicates dropped]}. The BLAS library, version and kernel
    architecture (e.g. openblas 0.3.30 Haswell) are what differ between machines' last digits."""
    with probe_thread_limits():
        pools = {
            tuple((k, str(info.get(k) or "")) for k in _THREAD_FIELDS if k != "num_threads")
            + (("num_threads", int(info.get("num_threads", 0))),)
            for info in threadpool_info()
        }
    return {"limit": _PROBE_THREADS, "pools": [dict(p) for p in sorted(pools)]}


def run_task(data: TaskArrays, protocol: Protocol, shots: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`fit_all` then `score_fits`: every regime, seed and metric of one (model, task) under one protocol.

    Runs on one thread per BLAS and OpenMP pool (PROBE_THREADS, `probe_thread_limits`) whatever the caller's
    thread limit: lbfgs on float32
    embeddings follows the BLAS reduction order, so the execution knob `threads` would otherwise change a score
    (measured: kmer-3to6 on derived_plant_species_of_origin_5class, full regime, MCC 0.4798 on one thread and
    0.4785 on two; tests/probe/test_reference_loop.py). One thread is also what the reference loop gives on one.
    """
    with probe_thread_limits():
        fits, classes = fit_all(data, protocol, shots)
        return score_fits(data, protocol, fits, classes)
