"""From chunk vectors to row vectors: the cross-chunk pooling of a long row (long_policy chunk_mean).

A row longer than the model's maximum is embedded as several chunks; each chunk's vector arrives with the
number of positions it pooled, in whatever order the batches ran. Mean pooling weights each chunk's mean by
its positions (so the row's vector is the mean over all its pooled positions, as if it had been embedded in
one piece), max pooling takes the elementwise maximum, cls/last keep the single chunk's vector. Sums are in
float64 and follow the arrival order, so the result does not depend on the batching beyond float32 noise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RowAccumulator"]


class RowAccumulator:
    """Accumulate pooled chunk vectors into `n_rows` row vectors.

    method: the pooling ("mean", "max", "cls", "last"). The width d is taken from the first `add`. Raises
    ValueError for an unknown method.
    """

    def __init__(self, n_rows: int, method: str) -> None:
        if method not in ("mean", "max", "cls", "last"):
            raise ValueError(f"unknown pooling {method!r}")
        self.n_rows = int(n_rows)
        self.method = method
        self.acc: np.ndarray | None = None  # float64 (n_rows, d) once the first chunk arrived
        self.counts = np.zeros(self.n_rows, np.int64)

    @property
    def started(self) -> bool:
        """True once a chunk vector has been added."""
        return self.acc is not None

    def add(self, rows: np.ndarray, pooled: np.ndarray, used: np.ndarray) -> None:
        """Add k chunk vectors: rows int (k,) row index of each chunk (0 <= row < n_rows), pooled float (k, d)
        its pooled vector, used int (k,) the positions it pooled (all pooled positions for mean/max, 1 for
        cls/last). Raises ValueError when the shapes disagree with each other or with earlier chunks."""
        rows = np.asarray(rows, dtype=np.int64)
        pooled = np.asarray(pooled, dtype=np.float64)
        used = np.asarray(used, dtype=np.int64)
        if pooled.ndim != 2 or rows.shape != (pooled.shape[0],) or used.shape != rows.shape:
            raise ValueError(f"chunks: rows {rows.shape}, pooled {pooled.shape}, used {used.shape} do not match")
        if self.acc is None:
            self.acc = np.zeros((self.n_rows, pooled.shape[1]), np.float64)
            if self.method == "max":
                self.acc[:] = -np.inf
        elif pooled.shape[1] != self.acc.shape[1]:
            raise ValueError(f"chunk vectors of width {pooled.shape[1]} after width {self.acc.shape[1]}")
        if self.method == "mean":
            np.add.at(self.acc, rows, pooled * used[:, None])  # in arrival order, like a loop of +=
        elif self.method == "max":
            np.maximum.at(self.acc, rows, pooled)
        else:  # cls / last: one chunk per row (chunking refuses more)
            self.acc[rows] = pooled
        np.add.at(self.counts, rows, used)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(vectors float32 (n_rows, d), pooled positions int32 (n_rows,)). Raises ValueError before any
        `add` (the width is unknown) and when a mean-pooled row received no position."""
        if self.acc is None:
            raise ValueError("no chunk vectors were added")
        acc = self.acc
        if self.method == "mean":
            if (self.counts == 0).any():
                raise ValueError(f"row {int(np.flatnonzero(self.counts == 0)[0])} received no pooled position")
            acc = acc / self.counts[:, None]
        return acc.astype(np.float32), self.counts.astype(np.int32)
