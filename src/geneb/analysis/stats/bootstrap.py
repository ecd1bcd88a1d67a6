"""Paired bootstrap replicates of per-task and per-category scores: the uncertainty every analysis shares.

Two sources of sampling noise are resampled, each *paired* across models (every model sees the same draw):

1. test rows (stage 1): within each task, the test rows are drawn with replacement and every model's MCC
   is recomputed on the drawn rows, for each probe seed, then averaged over seeds (the task score is a seed
   mean). Needs the per-row predictions (`results/predictions/...`); published results have none.
2. tasks (stage 2): within each category, the category's tasks are drawn with replacement and the category
   score is the mean over the drawn tasks; macro = mean of the category scores.

Replicate b combines row draw b with task draw b (a two-level, hierarchical bootstrap: tasks within categories,
then test rows within each drawn task, the task's MCC recomputed from its kept per-row predictions; Davison &
Hinkley 1997, section 3.8 "Hierarchical data"; Saravanan, Berman & Sober 2020, "Application of the hierarchical
bootstrap to multi-level data in neuroscience", NBDT 3). `two_level_replicates` is the one entry point every
analysis that draws tasks uses. Intervals are percentile intervals of the replicates (Efron & Tibshirani 1993,
ch. 13). Every draw comes from `numpy.random.default_rng` seeded with `[seed, stage, ...]`, so a replicate does
not depend on which other tasks or models are analysed.

No interval narrower than the data allow: a (model, column) whose replicates cannot vary (a category with one
task, or tasks not resampled, and no per-row predictions for a task of it; a macro over such a category) is
*undefined*: `CategoryReplicates.defined` is False there, `reasons` says why, and `interval` is NaN, never a
zero-width interval from a degenerate resample.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.probe.metrics import batched_mcc
from geneb.tables.scores import REGIMES, AnalysisInputError

#: resamples x rows held in memory at once when resampling test rows
MAX_CELLS = 10_000_000
PREDICTION_COLUMNS = ("regime", "seed", "row", "y_true", "y_pred")


def _task_key(task: str) -> int:
    return zlib.crc32(task.encode())


def load_predictions(
    root: str | Path, protocol: str, models: Sequence[str], tasks: Sequence[str]
) -> dict[tuple[str, str], pd.DataFrame]:
    """Read `root/{protocol}/{model}/{task}.parquet` for every (model, task) whose file exists.

    Returns {(model, task): frame}; a missing file is simply absent (that cell gets no row-level
    replicates). Raises AnalysisInputError when a file lacks a prediction column.
    """
    out = {}
    for model in models:
        for task in tasks:
            path = Path(root) / protocol / model / f"{task}.parquet"
            if not path.exists():
                continue
            df = integrity.read_parquet(path)
            missing = [c for c in PREDICTION_COLUMNS if c not in df.columns]
            if missing:
                raise AnalysisInputError(f"{path}: missing prediction columns {missing}")
            out[(model, task)] = df
    return out


def _mcc_rows(y_true: np.ndarray, y_pred: np.ndarray, idx: np.ndarray, n_classes: int) -> np.ndarray:
    return batched_mcc(y_true[idx], y_pred[idx], n_classes)


def row_replicates(
    predictions: Mapping[tuple[str, str], pd.DataFrame],
    models: Sequence[str],
    tasks: Sequence[str],
    regime: str,
    *,
    n_resamples: int,
    seed: int,
) -> np.ndarray:
    """Stage-1 replicates: per-task seed-mean MCC on resampled test rows, paired across models.

    predictions: {(model, task): frame with regime, seed, row, y_true, y_pred} (`load_predictions`).
    Returns float64 (n_resamples, len(models), len(tasks)); NaN where a (model, task) has no predictions for
    `regime`. Within a task every model is scored on the same drawn rows (the draw comes from
    `default_rng([seed, 1, crc32(task)])`). MCC is scikit-learn's (via `geneb.probe.metrics.batched_mcc`).
    Raises AnalysisInputError when two models' predictions of a task cover different test rows or disagree
    on y_true (a paired bootstrap needs the same rows), or when n_resamples < 1.
    """
    if n_resamples < 1:
        raise AnalysisInputError(f"n_resamples must be >= 1, got {n_resamples}")
    if regime not in REGIMES:
        raise AnalysisInputError(f"unknown regime {regime!r}")
    out = np.full((n_resamples, len(models), len(tasks)), np.nan)
    for t, task in enumerate(tasks):
        frames = {}
        for m, model in enumerate(models):
            df = predictions.get((model, task))
            if df is None:
                continue
            df = df[df["regime"] == regime]
            if not df.empty:
                frames[m] = df
        if not frames:
            continue
        ref_rows: np.ndarray | None = None
        ref_truth: np.ndarray | None = None
        per_model: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        labels = []
        for m, df in frames.items():
            seeds = []
            for s, g in df.groupby("seed", sort=True):
                g = g.sort_values("row")
                rows, truth = g["row"].to_numpy(), g["y_true"].to_numpy()
                if ref_rows is None:
                    ref_rows, ref_truth = rows, truth
                elif len(rows) != len(ref_rows) or not np.array_equal(rows, ref_rows):
                    raise AnalysisInputError(
                        f"task {task!r}, regime {regime!r}: model {models[m]!r} seed {s} predicts other test rows "
                        f"({len(rows)} rows) than the first model ({len(ref_rows)}); a paired bootstrap needs the same rows"
                    )
                elif ref_truth is None or not np.array_equal(truth, ref_truth):
                    raise AnalysisInputError(f"task {task!r}: model {models[m]!r} disagrees on y_true")
                pred = g["y_pred"].to_numpy()
                seeds.append((truth, pred))
                labels += [truth, pred]
            per_model[m] = seeds
        classes = np.unique(np.concatenate(labels))
        assert ref_rows is not None  # frames is not empty: the first model set it
        n = len(ref_rows)
        rng = np.random.default_rng([seed, 1, _task_key(task)])
        idx_all = rng.integers(0, n, size=(n_resamples, n))
        step = max(1, MAX_CELLS // max(1, n))
        for m, seeds in per_model.items():
            acc = np.zeros(n_resamples)
            for truth, pred in seeds:
                yt = np.searchsorted(classes, truth)
                yp = np.searchsorted(classes, pred)
                for start in range(0, n_resamples, step):
                    sl = slice(start, start + step)
                    acc[sl] += _mcc_rows(yt, yp, idx_all[sl], len(classes))
            out[:, m, t] = acc / len(seeds)
    return out


@dataclass(frozen=True)
class CategoryReplicates:
    """Bootstrap replicates of category and macro scores for one (protocol, regime).

    models: (M,) ids; categories: (C,) the categories present, official order; point: (M, C + 1) point
    estimates, last column macro; draws: (B, M, C + 1) replicates; n_tasks: (C,) tasks per category;
    rows_resampled: whether stage 1 (test rows) was part of the draw; defined: (M, C + 1) bool, whether the
    column's replicates have a source of variability for that model (module docstring); reasons: (M, C + 1) str,
    why not ("" where defined); seed: the bootstrap seed every draw derives from.
    """

    models: tuple[str, ...]
    categories: tuple[str, ...]
    point: np.ndarray
    draws: np.ndarray
    n_tasks: np.ndarray
    rows_resampled: bool
    defined: np.ndarray
    reasons: np.ndarray
    seed: int

    @property
    def columns(self) -> tuple[str, ...]:
        """Column labels of `point` and `draws` (categories then "macro")."""
        return (*self.categories, "macro")

    def interval(self, confidence: float) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval (low, high), each (M, C + 1); NaN where the (model, column) is not `defined`
        (no variability source: `reasons` says why)."""
        a = (1 - confidence) / 2
        low = np.nanquantile(self.draws, a, axis=0)
        high = np.nanquantile(self.draws, 1 - a, axis=0)
        low[~self.defined] = np.nan
        high[~self.defined] = np.nan
        return low, high

    def column_defined(self) -> np.ndarray:
        """(C + 1,) bool: the column is defined for every model (what a statistic over all models, a rank or
        a rank correlation, needs)."""
        return np.asarray(self.defined.all(axis=0))

    def column_reason(self, c: int) -> str:
        """The first model's reason why column c is undefined ("" when it is defined for every model)."""
        bad = [r for r in self.reasons[:, c] if r]
        return bad[0] if bad else ""


def category_replicates(
    matrix: pd.DataFrame,
    task_category: pd.Series,
    rows: np.ndarray | None,
    *,
    n_resamples: int,
    seed: int,
    resample_tasks: bool = True,
) -> CategoryReplicates:
    """Stage-2 replicates: category means over tasks drawn with replacement within each category, paired
    across models, on top of the stage-1 row replicates when given.

    matrix: (M, T) task scores (index model, columns task), no NaN; task_category: task -> category;
    rows: stage-1 replicates (B, M, T) in the same model/task order, or None (tasks only); n_resamples: B
    (must equal rows.shape[0] when rows is given); the task draw comes from `default_rng([seed, 2, c])`
    (c = category position in the official order). Raises AnalysisInputError for NaN cells, a task without
    a category, or mismatched shapes.
    """
    if matrix.isna().to_numpy().any():
        bad = matrix.columns[matrix.isna().any()].tolist()[:3]
        raise AnalysisInputError(f"category replicates need every model on every task; missing cells on {bad}")
    missing = [t for t in matrix.columns if t not in task_category.index]
    if missing:
        raise AnalysisInputError(f"tasks without a category: {missing[:3]}")
    point_t = matrix.to_numpy(dtype=float)
    m_models, n_t = point_t.shape
    has_rows = np.zeros((m_models, n_t), dtype=bool)
    if rows is not None:
        if rows.shape != (n_resamples, m_models, n_t):
            raise AnalysisInputError(f"row replicates {rows.shape} do not match ({n_resamples}, {m_models}, {n_t})")
        has_rows = ~np.isnan(rows).any(axis=0)
        rows = np.where(np.isnan(rows), point_t[None], rows)
    cats = [c for c in CATEGORIES if c in set(task_category[matrix.columns])]
    draws = np.empty((n_resamples, m_models, len(cats) + 1))
    point = np.empty((m_models, len(cats) + 1))
    n_tasks = np.empty(len(cats), dtype=int)
    b_idx = np.arange(n_resamples)[:, None, None]
    m_idx = np.arange(m_models)[None, :, None]
    for c, cat in enumerate(cats):
        cols = np.flatnonzero(task_category[matrix.columns].to_numpy() == cat)
        n_tasks[c] = len(cols)
        point[:, c] = point_t[:, cols].mean(axis=1)
        src = (
            rows[:, :, cols]
            if rows is not None
            else np.broadcast_to(point_t[None][:, :, cols], (n_resamples, m_models, len(cols)))
        )
        if resample_tasks:
            rng = np.random.default_rng([seed, 2, CATEGORIES.index(cat)])
            pick = rng.integers(0, len(cols), size=(n_resamples, len(cols)))
            draws[:, :, c] = src[b_idx, m_idx, pick[:, None, :]].mean(axis=2)
        else:
            draws[:, :, c] = src.mean(axis=2)
    point[:, -1] = point[:, :-1].mean(axis=1)
    draws[:, :, -1] = draws[:, :, :-1].mean(axis=2)
    defined, reasons = _variability(matrix, task_category, cats, has_rows, resample_tasks, rows is not None)
    return CategoryReplicates(
        tuple(matrix.index), tuple(cats), point, draws, n_tasks, rows is not None, defined, reasons, seed
    )


def _variability(
    matrix: pd.DataFrame,
    task_category: pd.Series,
    cats: list[str],
    has_rows: np.ndarray,
    resample_tasks: bool,
    rows_given: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(defined, reasons), each (M, C + 1): a category column varies when its tasks are resampled and it has
    at least 2, or when every task of it has row replicates for the model; the macro when every category does."""
    tasks = matrix.columns.to_numpy()
    of = task_category[matrix.columns].to_numpy()
    defined = np.ones((len(matrix), len(cats) + 1), dtype=bool)
    reasons = np.full(defined.shape, "", dtype=object)
    for m, model in enumerate(matrix.index):
        for c, cat in enumerate(cats):
            cols = np.flatnonzero(of == cat)
            if (resample_tasks and len(cols) >= 2) or has_rows[m, cols].all():
                continue
            lacking = [str(t) for t in tasks[cols][~has_rows[m, cols]]]
            why = f"category {cat!r} has one task" if resample_tasks else "tasks are not resampled"
            source = "no per-row predictions" if not rows_given else f"no per-row predictions of {model!r}"
            defined[m, c] = False
            reasons[m, c] = f"{why} and {source} for {', '.join(lacking[:3])}: nothing to resample"
        if not defined[m, :-1].all():
            bad = [cats[c] for c in np.flatnonzero(~defined[m, :-1])]
            defined[m, -1] = False
            first = reasons[m, int(np.flatnonzero(~defined[m, :-1])[0])]
            reasons[m, -1] = f"macro over categories without a source of variability ({'; '.join(bad)}); {first}"
    return defined, reasons


def two_level_replicates(
    matrix: pd.DataFrame,
    task_category: pd.Series,
    predictions: Mapping[tuple[str, str], pd.DataFrame] | None,
    regime: str,
    *,
    n_resamples: int,
    seed: int,
    resample_tasks: bool = True,
) -> tuple[CategoryReplicates, np.ndarray | None]:
    """The two-level bootstrap every analysis that draws tasks uses: tasks within categories, then test rows
    within each drawn task (module docstring). Returns (replicates, row replicates (B, M, T) or None).

    matrix: (M, T) seed-mean task scores (index: the models' labels, columns: tasks), no NaN; predictions:
    {(label, task): per-row prediction frame} (`load_predictions`, keyed by the matrix's index labels; None or
    empty: no row level); the rows of a task are drawn by `default_rng([seed, 1, crc32(task)])` (`row_replicates`;
    a task drawn twice in one replicate reuses that replicate's row draw), the tasks by `default_rng([seed, 2,
    category])` (`category_replicates`). Cells without predictions keep their point score in every replicate;
    where that leaves a column without variability it is undefined (`CategoryReplicates.defined`, `reasons`).
    Raises AnalysisInputError as `row_replicates` and `category_replicates` do.
    """
    rows = None
    if predictions:
        wanted = {k: v for k, v in predictions.items() if k[0] in matrix.index and k[1] in matrix.columns}
        if wanted:
            rows = row_replicates(
                wanted, list(matrix.index), list(matrix.columns), regime, n_resamples=n_resamples, seed=seed
            )
    rep = category_replicates(
        matrix, task_category, rows, n_resamples=n_resamples, seed=seed, resample_tasks=resample_tasks
    )
    return rep, rows


def bootstrap_p_value(draws: np.ndarray, null: float = 0.0) -> np.ndarray:
    """Two-sided bootstrap p-value of H0: statistic == null, by inverting the percentile interval.

    draws: (B, ...) replicates of the statistic. p = min(1, 2 * min(#(d <= null) + 1, #(d >= null) + 1) /
    (B + 1)): the smallest alpha at which the (1 - alpha) percentile interval excludes `null` (Efron &
    Tibshirani 1993, section 16.4; the +1 keeps p > 0 with finitely many replicates). Returns (...).
    """
    d = np.asarray(draws, dtype=float)
    b = d.shape[0]
    low = (np.sum(d <= null, axis=0) + 1) / (b + 1)
    high = (np.sum(d >= null, axis=0) + 1) / (b + 1)
    return np.minimum(1.0, 2 * np.minimum(low, high))
