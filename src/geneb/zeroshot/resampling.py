"""Bootstrap resamples as row weights, and the zero-shot metrics over weighted rows: what the zero-shot tables
(`geneb.zeroshot.tables`) and the model-free baselines (`geneb.zeroshot.shortcuts`) both resample with.

A resample is a vector of row counts (`draw_counts`: of rows, or of groups spread over their rows), so a metric is
computed once per resample from one sort of the scores (`weighted_auroc`, `weighted_auprc`,
`weighted_paired_accuracy`), each equal to scikit-learn's with those counts as `sample_weight` (tested).
Percentile intervals of the replicates: `percentile_interval`. Torch-free.
"""

from __future__ import annotations

import numpy as np


def _tie_blocks(score: np.ndarray, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): the row order that sorts `score` (n,) and the start of each run of equal scores in it."""
    order = np.argsort(-score if descending else score, kind="stable")
    s = score[order]
    starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]])) if len(s) else np.array([], np.int64)
    return order, starts


def auroc_parts(label: np.ndarray, score: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, pairs) of the weighted Mann-Whitney AUROC, each (b,): numerator = the sum over (positive,
    control) pairs of w_pos x w_control x [score_pos > score_control, 1/2 for a tie], pairs = W_pos x W_control.
    label int (n,), score float (n,), weights float (b, n) (a bootstrap resample's row counts, or ones)."""
    order, starts = _tie_blocks(score, descending=False)
    y = label[order].astype(np.float64)
    w = weights[:, order]
    if w.shape[1] == 0:
        return np.zeros(len(w)), np.zeros(len(w))
    pos = np.add.reduceat(w * y, starts, axis=1)
    neg = np.add.reduceat(w * (1 - y), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    return (pos * (below + 0.5 * neg)).sum(axis=1), pos.sum(axis=1) * neg.sum(axis=1)


def weighted_auroc(label: np.ndarray, score: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC of each weighting, float64 (b,), NaN where a weighting leaves one class only: the Mann-Whitney form
    with rows weighted (`auroc_parts`), equal to `roc_auc_score(label, score, sample_weight=w)` (its trapezoids
    count a tie as 1/2); a bootstrap resample is its row counts, so one sort serves every resample."""
    numerator, pairs = auroc_parts(label, score, weights)
    return np.divide(numerator, pairs, out=np.full(len(pairs), np.nan), where=pairs > 0)


def weighted_auprc(label: np.ndarray, score: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average precision of each weighting, float64 (b,), NaN without positive weight, as
    `average_precision_score(label, score, sample_weight=w)` defines it: the sum over the distinct score thresholds
    (descending; tied scores are one threshold) of the recall gained there x the precision there."""
    order, starts = _tie_blocks(score, descending=True)
    y = label[order].astype(np.float64)
    w = weights[:, order]
    if w.shape[1] == 0:
        return np.full(len(w), np.nan)
    pos = np.add.reduceat(w * y, starts, axis=1)
    seen = np.cumsum(np.add.reduceat(w, starts, axis=1), axis=1)
    precision = np.divide(np.cumsum(pos, axis=1), seen, out=np.zeros_like(seen), where=seen > 0)
    total = pos.sum(axis=1)
    return np.divide((pos * precision).sum(axis=1), total, out=np.full(len(total), np.nan), where=total > 0)


def weighted_paired_accuracy(diff: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Paired accuracy of each weighting, float64 (b,): the weighted share of rows with a score difference > 0, a tie
    (difference exactly 0) counting 0.5; diff (n,), weights (b, n)."""
    won = (diff > 0) + 0.5 * (diff == 0)
    return np.asarray(weights @ won / weights.sum(axis=1), dtype=np.float64)


def draw_counts(draws: np.ndarray, size: int) -> np.ndarray:
    """How often each of `size` items was drawn in each resample: float64 (b, size) from draws int (b, m)."""
    offsets = draws + size * np.arange(len(draws))[:, None]
    return np.bincount(offsets.ravel(), minlength=len(draws) * size).reshape(len(draws), size).astype(np.float64)


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval at `level` of the finite `replicates` (b,); (NaN, NaN) when none is finite."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)
