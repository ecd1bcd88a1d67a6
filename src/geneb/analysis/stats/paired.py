"""A paired test between any two cells of one task: two (model, view, protocol, regime) combinations scored on
the same test items.

Every fit's test predictions are kept (`results/predictions/{protocol}/{model}/{task}.parquet`, one row per
(view, regime, seed, test row); docs/data-dictionary.md, stage 3), so two cells of a task can be compared item by
item:

* the paired bootstrap: the test rows are drawn with replacement (`numpy.random.default_rng([seed, 4,
  crc32(task)])`, the same draw for both cells) and each cell's seed-mean MCC is recomputed on the drawn rows; the
  percentile interval of MCC(a) - MCC(b) (Efron & Tibshirani 1993, ch. 13) and the two-sided bootstrap p-value
  (`bootstrap.bootstrap_p_value`);
* McNemar's exact test where it fits (each cell has one prediction per item: the full regime, or every seed
  predicting alike): the items one cell gets right and the other wrong, b and c, against Binomial(b + c, 1/2)
  (`scipy.stats.binomtest`, two-sided; McNemar 1947, the exact form: Fagerland et al. 2013).

`geneb compare-cells` prints it; the best-layer analysis counts the tasks on which it separates two layers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.evaluation.choices import DEFAULT_VIEW, select_view
from geneb.analysis.stats.bootstrap import MAX_CELLS, bootstrap_p_value
from geneb.core import integrity
from geneb.probe.metrics import batched_mcc
from geneb.tables.scores import AnalysisInputError

#: the columns a cell's prediction rows need
CELL_COLUMNS = ("regime", "seed", "row", "y_true", "y_pred")


def read_cell(
    root: str | Path,
    *,
    protocol: str,
    model: str,
    task: str,
    view: str | None,
    regime: str,
    cache: dict[Path, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """The prediction rows of one cell: `root/{protocol}/{model}/{task}.parquet` filtered to `view` and `regime`.

    view None: the file's only view (or "default" for a file without a `view` column); cache: {path: frame} of
    files read before (filled here), so that many cells of one file read it once. Returns the rows (all seeds).
    Raises AnalysisInputError when the file is missing or lacks a column, or the view or regime is not in it
    (the message lists what is).
    """
    path = Path(root) / protocol / model / f"{task}.parquet"
    if cache is not None and path in cache:
        df = cache[path]
    elif not path.exists():
        raise AnalysisInputError(f"no predictions for protocol {protocol!r}, model {model!r}, task {task!r}: {path}")
    else:
        df = integrity.read_parquet(path)
        if cache is not None:
            cache[path] = df
    missing = [c for c in CELL_COLUMNS if c not in df.columns]
    if missing:
        raise AnalysisInputError(f"{path}: missing prediction columns {missing}")
    have = sorted(df["view"].fillna(DEFAULT_VIEW).astype(str).unique()) if "view" in df.columns else [DEFAULT_VIEW]
    if view is None:
        if len(have) != 1:
            raise AnalysisInputError(f"{path} holds the views {have}; name one (view=...)")
        view = have[0]
    cell = select_view(df, view)
    if cell.empty:
        raise AnalysisInputError(f"{path} has no view {view!r}; it has {have}")
    out = cell[cell["regime"] == regime]
    if out.empty:
        raise AnalysisInputError(
            f"{path}, view {view!r}: no regime {regime!r}; it has {sorted(cell['regime'].unique())}"
        )
    return out


def _seeds(cell: pd.DataFrame, what: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(rows, y_true, [y_pred per seed]) of one cell, rows sorted; every seed must predict the same rows."""
    rows: np.ndarray | None = None
    truth: np.ndarray | None = None
    preds: list[np.ndarray] = []
    for s, g in cell.groupby("seed", sort=True):
        g = g.sort_values("row")
        if rows is None:
            rows, truth = g["row"].to_numpy(), g["y_true"].to_numpy()
        elif not np.array_equal(g["row"].to_numpy(), rows):
            raise AnalysisInputError(f"{what}: seed {s} predicts other test rows than the first seed")
        preds.append(g["y_pred"].to_numpy())
    if rows is None or truth is None:
        raise AnalysisInputError(f"{what}: no prediction rows")
    if len(np.unique(rows)) != len(rows):
        raise AnalysisInputError(f"{what}: a test row is predicted twice under one seed (several views mixed?)")
    return rows, truth, preds


def _seed_mean_mcc(y: np.ndarray, preds: list[np.ndarray], idx: np.ndarray, k: int) -> np.ndarray:
    """Seed-mean MCC on the row draws idx (B, n) -> (B,)."""
    return np.mean([batched_mcc(y[idx], p[idx], k) for p in preds], axis=0)


@dataclass(frozen=True)
class PairedDraws:
    """The paired bootstrap of two cells of one task: mcc_a, mcc_b (seed-mean MCC on all n_rows test rows) and
    draws (B,) of MCC(a) - MCC(b) on the same B row draws; y, preds_a, preds_b: the labels and each seed's
    predictions (n_rows,), for tests that need the items (`mcnemar`)."""

    n_rows: int
    mcc_a: float
    mcc_b: float
    draws: np.ndarray
    y: np.ndarray
    preds_a: list[np.ndarray]
    preds_b: list[np.ndarray]


def paired_draws(a: pd.DataFrame, b: pd.DataFrame, *, task: str, n_resamples: int = 1000, seed: int = 0) -> PairedDraws:
    """The paired bootstrap of MCC(a) - MCC(b) over the test rows of `task` (module docstring: the rows drawn
    with `numpy.random.default_rng([seed, 4, crc32(task)])`, the same draw for both cells).

    a, b: the prediction rows of one cell each (`read_cell`: columns regime, seed, row, y_true, y_pred; any number
    of seeds, each predicting every test row once); a cell's MCC is the mean over its seeds (as in the score
    table). Raises AnalysisInputError when the cells cover different test rows or disagree on a label, or
    n_resamples < 1."""
    if n_resamples < 1:
        raise AnalysisInputError(f"n_resamples must be >= 1, got {n_resamples}")
    rows_a, y, pa = _seeds(a, f"task {task!r}, cell a")
    rows_b, y_b, pb = _seeds(b, f"task {task!r}, cell b")
    if not np.array_equal(rows_a, rows_b):
        raise AnalysisInputError(
            f"task {task!r}: the cells predict different test rows ({len(rows_a)} and {len(rows_b)}); "
            "a paired test needs the same items"
        )
    if not np.array_equal(y, y_b):
        raise AnalysisInputError(f"task {task!r}: the cells disagree on y_true (different test splits?)")
    classes = np.unique(np.concatenate([y, *pa, *pb]))
    yc = np.searchsorted(classes, y)
    ca = [np.searchsorted(classes, p) for p in pa]
    cb = [np.searchsorted(classes, p) for p in pb]
    k, n = len(classes), len(y)
    whole = np.arange(n)[None, :]
    rng = np.random.default_rng([seed, 4, zlib.crc32(task.encode())])
    idx = rng.integers(0, n, size=(n_resamples, n))
    step = max(1, MAX_CELLS // max(1, n))
    diff = np.concatenate(
        [
            _seed_mean_mcc(yc, ca, idx[s : s + step], k) - _seed_mean_mcc(yc, cb, idx[s : s + step], k)
            for s in range(0, n_resamples, step)
        ]
    )
    return PairedDraws(
        n_rows=n,
        mcc_a=float(_seed_mean_mcc(yc, ca, whole, k)[0]),
        mcc_b=float(_seed_mean_mcc(yc, cb, whole, k)[0]),
        draws=diff,
        y=y,
        preds_a=pa,
        preds_b=pb,
    )


def compare_cells(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    task: str,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """MCC(a) - MCC(b) of two cells of `task` on the same test items, with its paired bootstrap (`paired_draws`)
    and McNemar test.

    Returns {n_rows, n_seeds_a, n_seeds_b, mcc_a, mcc_b, difference, ci_low, ci_high, p_bootstrap,
    a_only_correct, b_only_correct, p_mcnemar, mcnemar_note, n_resamples, seed, confidence}: a_only_correct /
    b_only_correct count the items one cell gets right and the other wrong (NA, with the reason in mcnemar_note,
    when a cell's seeds predict differently: McNemar needs one prediction per item and cell). Raises
    AnalysisInputError when the cells cover different test rows or disagree on a label, n_resamples < 1, or
    confidence is outside (0, 1).
    """
    if not 0 < confidence < 1:
        raise AnalysisInputError(f"confidence must be in (0, 1), got {confidence}")
    d = paired_draws(a, b, task=task, n_resamples=n_resamples, seed=seed)
    alpha = (1 - confidence) / 2
    out: dict[str, Any] = {
        "n_rows": d.n_rows,
        "n_seeds_a": len(d.preds_a),
        "n_seeds_b": len(d.preds_b),
        "mcc_a": d.mcc_a,
        "mcc_b": d.mcc_b,
        "difference": d.mcc_a - d.mcc_b,
        "ci_low": float(np.quantile(d.draws, alpha)),
        "ci_high": float(np.quantile(d.draws, 1 - alpha)),
        "p_bootstrap": float(bootstrap_p_value(d.draws)),
        "n_resamples": n_resamples,
        "seed": seed,
        "confidence": confidence,
    }
    return {**out, **mcnemar(d.y, d.preds_a, d.preds_b)}


def mcnemar(y: np.ndarray, preds_a: list[np.ndarray], preds_b: list[np.ndarray]) -> dict[str, Any]:
    """McNemar's exact test of two cells' per-item correctness: {a_only_correct, b_only_correct, p_mcnemar,
    mcnemar_note}.

    y: labels (n,); preds_a, preds_b: the cells' predictions per seed, each (n,). Applies only when every seed of
    a cell predicts alike (one prediction per item); otherwise the counts and p are NA and the note says why.
    p = two-sided `scipy.stats.binomtest(b, b + c, 0.5)`, 1 when no item is discordant.
    """
    for name, preds in (("a", preds_a), ("b", preds_b)):
        if any(not np.array_equal(p, preds[0]) for p in preds[1:]):
            return {
                "a_only_correct": pd.NA,
                "b_only_correct": pd.NA,
                "p_mcnemar": float("nan"),
                "mcnemar_note": f"cell {name}'s {len(preds)} seeds predict differently: McNemar needs one prediction "
                "per item (use the bootstrap)",
            }
    right_a, right_b = preds_a[0] == y, preds_b[0] == y
    b, c = int(np.sum(right_a & ~right_b)), int(np.sum(~right_a & right_b))
    p = 1.0 if b + c == 0 else float(stats.binomtest(b, b + c, 0.5).pvalue)
    return {"a_only_correct": b, "b_only_correct": c, "p_mcnemar": p, "mcnemar_note": ""}
