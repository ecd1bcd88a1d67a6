"""One logistic-regression fit with its convergence recorded, and the choice of the regularization strength C by
stratified inner cross-validation on the training rows (docs/protocols.md, `geneb-strict`)."""

from __future__ import annotations

import logging
import typing
import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold

from geneb.probe.protocols import CV_SCORERS, Protocol, penalty_kwargs

log = logging.getLogger(__name__)


class Estimator(typing.Protocol):
    """What `fit_recorded` fits: a scikit-learn estimator (LogisticRegression, LogisticRegressionCV)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> Any: ...


def fit_recorded(estimator: Estimator, X: np.ndarray, y: np.ndarray, where: str) -> int:
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
        log.warning("%s: %d ConvergenceWarning(s) (recorded as converged=false)", where, n_conv)
    return n_conv


def single_fit(
    protocol: Protocol, X: np.ndarray, y: np.ndarray, C: float, seed: int, where: str, class_weight: str | None
) -> tuple[LogisticRegression, bool, int]:
    lr = protocol.logistic_regression(C, seed, class_weight)
    n_conv = fit_recorded(lr, X, y, where)
    n_iter = int(np.max(lr.n_iter_))
    return lr, (n_conv == 0 and n_iter < protocol.max_iter), n_iter


def best_C_index(mean_scores: np.ndarray) -> int:
    """The grid position of the chosen C from the mean inner-CV score per C (ascending grid, higher is better):
    the best; among C values tied at the best (within 1e-12), the middle one of the tied run, so that a flat
    score curve (near-random folds) picks neither the grid's smallest nor its largest C."""
    tied = np.flatnonzero(mean_scores >= mean_scores.max() - 1e-12)
    return int(tied[(len(tied) - 1) // 2])


def select_C(
    protocol: Protocol, X: np.ndarray, y: np.ndarray, where: str, class_weight: str | None
) -> tuple[float, str, int]:
    """Choose the full-regime C by stratified inner CV on the training rows (X already standardized).

    n_splits = min(cv_folds, smallest class count); below 2 there is no CV and the fixed C is used.
    Scoring: `protocol.cv_scoring` (log_loss in geneb-strict: smooth where MCC on small or hard folds is
    a step function of a few rows); ties: `best_C_index`. class_weight: the task's (`class_weight_for`).
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
        **lrcv_kwargs(),
    )
    fit_recorded(lrcv, X, y, f"{where} inner CV")
    raw = lrcv.scores_
    raw = next(iter(raw.values())) if isinstance(raw, dict) else raw  # legacy layout: {class: (folds, Cs)}
    scores = np.asarray(raw).reshape(n_splits, -1, len(protocol.C_grid))[:, 0, :]
    best = best_C_index(scores.mean(axis=0))
    n_iter = np.asarray(lrcv.n_iter_)
    how = f"inner {n_splits}-fold CV ({protocol.cv_scoring}), class_weight {class_weight}"
    return float(protocol.C_grid[best]), how, int((n_iter >= protocol.max_iter).sum())


def lrcv_kwargs() -> dict:
    kw = dict(penalty_kwargs())
    if "l1_ratio" in kw:  # scikit-learn >= 1.8: grid of mixing ratios, and the new attribute layout
        kw = {"l1_ratios": (kw["l1_ratio"],)}
        if "use_legacy_attributes" in LogisticRegressionCV().get_params():
            kw["use_legacy_attributes"] = False
    return kw
