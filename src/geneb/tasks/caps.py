"""Per-task caps: a seeded, stratified subsample of a split, recorded in the task card.

Allocation (largest-remainder rule): class c gets floor(cap * n_c / n) rows, the leftover rows go to the
classes with the largest fractional parts (ties broken by sorted label), and every class present keeps at
least one row when the cap allows. Within a class, rows are drawn without replacement by
`numpy.random.default_rng(seed).choice`, classes taken in sorted label order; the kept rows are returned in
source order. A pure function of (labels, cap, seed).
"""

from __future__ import annotations

import numpy as np


def stratified_cap(labels: np.ndarray, cap: int, seed: int) -> np.ndarray:
    """Positions (sorted, int64) of at most `cap` rows, stratified by `labels` (shape (n,)).

    Returns all positions when n <= cap. Raises ValueError if cap < number of classes (a class would vanish).
    """
    labels = np.asarray(labels)
    n = len(labels)
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    classes, counts = np.unique(labels, return_counts=True)
    if cap < len(classes):
        raise ValueError(f"cap {cap} is smaller than the number of classes ({len(classes)}); a class would vanish")
    exact = cap * counts / n
    take = np.maximum(np.floor(exact).astype(int), 1)
    while take.sum() > cap:  # the max(…, 1) floor can overshoot: trim the most over-allocated class that has > 1
        take[np.argmax(np.where(take > 1, take - exact, -np.inf))] -= 1
    leftover = cap - take.sum()
    order = np.lexsort((np.arange(len(classes)), -(exact - np.floor(exact))))
    for i in order:
        if leftover == 0:
            break
        if take[i] < counts[i]:
            take[i] += 1
            leftover -= 1
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(labels == c), size=int(k), replace=False) for c, k in zip(classes, take)]
    return np.sort(np.concatenate(picked)).astype(np.int64)
