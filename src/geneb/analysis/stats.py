"""The statistics every analysis shares: paired (two-level) bootstrap replicates and paired tests between
cells.

Paired bootstrap replicates of per-task and per-category scores: the uncertainty every analysis shares.

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

A paired test between any two cells of one task: two (model, view, protocol, regime) combinations scored on
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

The statistics every analysis shares: paired (two-level) bootstrap replicates and paired tests between cells.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.inputs import DEFAULT_VIEW, select_view
from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.probe.metrics import batched_mcc
from geneb.tables.scores import REGIMES, AnalysisInputError

#: resamples x rows held in memory at once when resampling test rows
_MAX_CELLS = 10_000_000
_PREDICTION_COLUMNS = ("regime", "seed", "row", "y_true", "y_pred")


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
            missing = [c for c in _PREDICTION_COLUMNS if c not in df.columns]
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
        step = max(1, _MAX_CELLS // max(1, n))
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


#: the columns a cell's prediction rows need
_CELL_COLUMNS = ("regime", "seed", "row", "y_true", "y_pred")


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
    missing = [c for c in _CELL_COLUMNS if c not in df.columns]
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
    predictions (n_rows,), for tests that need the items (`_mcnemar`)."""

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
    step = max(1, _MAX_CELLS // max(1, n))
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
    return {**out, **_mcnemar(d.y, d.preds_a, d.preds_b)}


def _mcnemar(y: np.ndarray, preds_a: list[np.ndarray], preds_b: list[np.ndarray]) -> dict[str, Any]:
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
