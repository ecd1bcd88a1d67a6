"""Test-split scores and their uncertainty, on all test rows and on the clean subset.

Test-split scores and their uncertainty: MCC (primary), accuracy, macro-F1, AUROC; bootstrap and seed CIs.

Point estimates come from scikit-learn. The bootstrap needs MCC for thousands of resamples at once, so
`_mcc_from_confusion` computes it from confusion matrices with exactly scikit-learn's formula (Gorodkin 2004,
the K-category correlation coefficient; `sklearn.metrics.matthews_corrcoef`), including its rule that a zero
denominator gives 0, never NaN. The per-fit CI resamples the confusion matrix multinomially (exactly
the row bootstrap's distribution, see `bootstrap_mcc_ci`); the two-model comparison uses `scipy.stats.bootstrap`.

Defined behaviour for degenerate inputs (docs/protocols.md):
* constant predictions, or a test split with one class: MCC = 0 (scikit-learn's definition), the CI is
  [0, 0] when every resample is degenerate;
* AUROC is NaN when the test labels hold fewer than two classes or, for a multiclass task, lack a class;
* macro-F1 averages over every class of the task under `f1_labels: task` (geneb-strict): a class with no true
  and no predicted rows counts as 0 (`zero_division=0.0`) for every model alike; under `f1_labels: present`
  (geneb-paper, scikit-learn's default) over the classes present in truth or prediction.

Clean-subset scores: every fit scored again on the test rows without a training homolog.

The task audit (`geneb.tasks.audit`, rule `audit_task`) lists the test rows with a near-identical copy in the
training split (MMseqs2 candidates re-scored by the identity of the whole test row, both strands, >=
`task_audit.similarity_threshold`, exact and reverse-complement copies included). `clean_columns` scores the *same fitted probe* (its predictions) on the other
test rows, so full and clean values differ only by the rows scored:

* `value_clean`: MCC, Acc and macro-F1 (`metrics.label_scores`, the protocol's `f1_labels`) and, for binary tasks,
  AUROC from the stored positive-class probability; NaN for a multiclass AUROC (the prediction table keeps no
  per-class probabilities), for the `_dedup` rows, and when every test row is leaked;
* `ci_low_clean`, `ci_high_clean`: the bootstrap CI of the clean MCC (`metrics.bootstrap_mcc_ci`, the protocol's
  bootstrap settings) drawn with the same seed as the full-split CI of that fit (`default_rng([bootstrap.seed, k,
  seed])`, k = 0 for the full regime, the fit's first reported seed for a full fit reported under several seeds),
  so a task without leaked rows has clean values and CIs equal to the full ones, bit for bit; NaN for other metrics;
* `n_test_clean`: the rows scored (n_test minus the leaked rows).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef, roc_auc_score

from geneb.probe.protocols import Protocol


class MetricInputError(ValueError):
    """Inputs a metric cannot score: empty or mismatched arrays, a class code outside 0..K-1, an unknown label."""


METRICS = ("MCC", "Acc", "F1", "AUROC")
#: resamples x rows held in memory at once by the paired model-comparison bootstrap (about 160 MB of int64)
_BOOTSTRAP_CELLS = 20_000_000


def encode(y: np.ndarray, classes: np.ndarray, what: str) -> np.ndarray:
    """Map labels onto 0..K-1 by their position in sorted `classes`; int64 array like `y`.

    Raises MetricInputError naming `what`, the first offending position and the value when a label is not one
    of `classes`.
    """
    y = np.asarray(y)
    classes = np.asarray(classes)
    pos = np.searchsorted(classes, y)
    ok = (pos < len(classes)) & (classes[np.minimum(pos, len(classes) - 1)] == y)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise MetricInputError(
            f"{what}: label {y.flat[i].item()!r} at position {i} is not one of the classes {classes.tolist()}"
        )
    return pos.astype(np.int64)


def _mcc_from_confusion(cm: np.ndarray) -> np.ndarray:
    """MCC of confusion matrices cm (..., K, K) (rows = true class, columns = predicted), scikit-learn's formula.

    Returns float64 (...); 0.0 where the denominator is 0 (constant truth or prediction), never NaN.
    Source: Gorodkin (2004) as implemented by `sklearn.metrics.matthews_corrcoef`.
    """
    cm = np.asarray(cm, dtype=np.float64)
    t_sum = cm.sum(axis=-1)
    p_sum = cm.sum(axis=-2)
    n_correct = np.trace(cm, axis1=-2, axis2=-1)
    n = p_sum.sum(axis=-1)
    cov_ytyp = n_correct * n - (t_sum * p_sum).sum(axis=-1)
    cov_ypyp = n**2 - (p_sum * p_sum).sum(axis=-1)
    cov_ytyt = n**2 - (t_sum * t_sum).sum(axis=-1)
    denom = cov_ypyp * cov_ytyt
    return np.where(denom == 0, 0.0, cov_ytyp / np.sqrt(np.where(denom == 0, 1.0, denom)))


def _confusion(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Confusion counts int64 (..., K, K) of encoded label vectors (..., n); see `encode`. Raises
    MetricInputError for mismatched or empty inputs and for a code outside 0..K-1 (it would be counted in
    another vector's matrix)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape or y_true.shape[-1] == 0:
        raise MetricInputError(f"MCC: y_true {y_true.shape} and y_pred {y_pred.shape} must match and be non-empty")
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        lo, hi = int(y.min()), int(y.max())
        if lo < 0 or hi >= n_classes:
            raise MetricInputError(f"MCC: {name} holds class code {lo if lo < 0 else hi}, outside 0..{n_classes - 1}")
    lead = y_true.shape[:-1]
    b = int(np.prod(lead, dtype=np.int64))
    k = int(n_classes)
    cells = (y_true.reshape(b, -1) * k + y_pred.reshape(b, -1)) + (np.arange(b)[:, None] * k * k)
    return np.bincount(cells.ravel(), minlength=b * k * k).reshape(*lead, k, k)


def batched_mcc(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """MCC of many label vectors at once, identical to scikit-learn's `matthews_corrcoef` row by row.

    y_true, y_pred: int arrays (..., n) with values in 0..n_classes-1 (see `encode`), n >= 1. Returns float64
    (...): the MCC of each trailing-axis vector; 0.0 where the denominator is 0, never NaN.
    Raises MetricInputError for empty or mismatched inputs.
    """
    return _mcc_from_confusion(_confusion(y_true, y_pred, n_classes))


_F1_LABELS = ("present", "task")


def label_scores(
    y_true: np.ndarray, y_pred: np.ndarray, classes: np.ndarray, f1_labels: str = "task"
) -> dict[str, float]:
    """MCC, Acc and macro-F1 (scikit-learn, `zero_division=0.0`) of predicted labels y_pred (n,) against y_true
    (n,): the label-only part of `score_predictions`, also used for the deduplicated test split.

    classes: the task's classes (K,). f1_labels (the protocol's setting): "task" averages F1 over every class
    of the task (`labels=classes`), so a class absent from the test split counts 0 for every model alike;
    "present" is scikit-learn's default and the paper's, the classes present in y_true or y_pred, a
    denominator that can change with a model's predictions when the test split lacks a class. Raises
    ValueError for another f1_labels."""
    if f1_labels not in _F1_LABELS:
        raise ValueError(f"f1_labels must be one of {_F1_LABELS}, got {f1_labels!r}")
    labels = np.asarray(classes) if f1_labels == "task" else None
    return {
        "MCC": float(matthews_corrcoef(y_true, y_pred)),
        "Acc": float(accuracy_score(y_true, y_pred)),
        "F1": float(f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0.0)),
    }


def score_predictions(
    y_true: np.ndarray, y_pred: np.ndarray, proba: np.ndarray, classes: np.ndarray, f1_labels: str = "task"
) -> dict[str, float]:
    """MCC, Acc, macro-F1 (scikit-learn) and AUROC (binary; one-vs-rest macro for multiclass) on one test split.

    y_true, y_pred: labels (n,); proba: class probabilities (n, K) in the order of sorted `classes` (K,).
    f1_labels: see `label_scores`. AUROC is NaN when it is undefined (see module docstring). Raises MetricInputError for empty or mismatched
    inputs.
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if len(y_true) == 0 or y_true.shape != y_pred.shape or len(proba) != len(y_true):
        raise MetricInputError(
            f"scores: y_true {y_true.shape}, y_pred {y_pred.shape}, proba {np.shape(proba)} must match and be non-empty"
        )
    out = {**label_scores(y_true, y_pred, classes, f1_labels), "AUROC": float("nan")}
    present = np.unique(y_true)
    if len(classes) == 2 and len(present) == 2:
        out["AUROC"] = float(roc_auc_score(y_true, proba[:, 1]))
    elif len(classes) > 2 and len(present) == len(classes):
        out["AUROC"] = float(roc_auc_score(y_true, proba, multi_class="ovr", average="macro", labels=classes))
    return out


def bootstrap_mcc_ci(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    n_classes: int,
    *,
    n_resamples: int,
    confidence: float,
    method: str,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Bootstrap CI of the test MCC: test rows resampled with replacement, (y_true, y_pred) kept paired.

    MCC depends on the rows only through the K x K confusion matrix, and resampling n rows with replacement
    gives a confusion matrix distributed exactly as Multinomial(n, observed cell shares). So each resample is
    one multinomial draw over the K^2 cells: the same bootstrap distribution as resampling rows
    (scipy.stats.bootstrap, checked in tests/probe/test_metrics.py) at O(n_resamples * K^2) instead of
    O(n_resamples * n) cost. y_true, y_pred: encoded labels (n,) (see `encode`). method: "percentile" or
    "basic" (Efron & Tibshirani 1993, ch. 13; percentiles as numpy.percentile, like scipy; its reflected ends are
    clipped to MCC's range [-1, 1]). Returns (low, high); (0, 0) when truth or prediction is constant (every
    resample then has MCC 0).
    """
    if method not in ("percentile", "basic"):
        raise ValueError(f"bootstrap method must be 'percentile' or 'basic', got {method!r}")
    yt = np.asarray(y_true, dtype=np.int64)
    yp = np.asarray(y_pred, dtype=np.int64)
    if (yt == yt[0]).all() or (yp == yp[0]).all():
        return 0.0, 0.0  # every resample has a zero MCC denominator: MCC is 0 by definition
    cm = _confusion(yt, yp, n_classes).ravel()
    draws = rng.multinomial(len(yt), cm / cm.sum(), size=n_resamples).reshape(n_resamples, n_classes, n_classes)
    dist = _mcc_from_confusion(draws)
    alpha = (1.0 - confidence) / 2
    low, high = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)])
    if method == "basic":
        theta = float(_mcc_from_confusion(cm.reshape(n_classes, n_classes)))
        # reflected around the estimate, the ends can leave MCC's range [-1, 1]; an interval for MCC stays in it
        low, high = max(-1.0, 2 * theta - high), min(1.0, 2 * theta - low)
    return float(low), float(high)


def paired_bootstrap_mcc_difference(
    y_true: np.ndarray,
    pred_a: np.ndarray,
    pred_b: np.ndarray,
    classes: np.ndarray,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float]:
    """MCC(a) - MCC(b) of two models' predictions on the same test rows, with a paired percentile bootstrap CI.

    y_true, pred_a, pred_b: labels (n,) for the same rows in the same order (join the prediction tables on
    `row`). Returns {"difference", "ci_low", "ci_high"}; a CI excluding 0 means the gap is larger than the
    test-set sampling noise. Raises MetricInputError for mismatched lengths or unknown labels.
    """
    if not (len(y_true) == len(pred_a) == len(pred_b)):
        raise MetricInputError(f"paired bootstrap: lengths differ ({len(y_true)}, {len(pred_a)}, {len(pred_b)})")
    k = len(classes)
    yt, a, b = (encode(v, classes, name) for v, name in ((y_true, "y_true"), (pred_a, "pred_a"), (pred_b, "pred_b")))

    def statistic(t: np.ndarray, pa: np.ndarray, pb: np.ndarray, axis: int = -1) -> np.ndarray:
        t, pa, pb = (np.moveaxis(v, axis, -1) for v in (t, pa, pb))
        return batched_mcc(t, pa, k) - batched_mcc(t, pb, k)

    batch = max(1, min(n_resamples, _BOOTSTRAP_CELLS // max(1, len(yt))))
    res = stats.bootstrap(
        (yt, a, b),
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        batch=batch,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    diff = float(batched_mcc(yt, a, k) - batched_mcc(yt, b, k))
    return {
        "difference": diff,
        "ci_low": float(res.confidence_interval.low),
        "ci_high": float(res.confidence_interval.high),
    }


def seed_summary(values: np.ndarray, confidence: float) -> dict[str, float]:
    """Mean, sample sd (ddof=1) and Student-t CI of the mean over seeds (scipy.stats.t.interval).

    values: per-seed scores (n_seeds,). With one seed sd and CI are NaN; with zero spread the CI is
    [mean, mean]. NaN scores (e.g. undefined AUROC) propagate.
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    mean = float(v.mean()) if n else float("nan")
    if n < 2:
        return {"mean": mean, "sd": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": n}
    sd = float(v.std(ddof=1))
    if sd == 0.0:
        return {"mean": mean, "sd": 0.0, "ci_low": mean, "ci_high": mean, "n": n}
    low, high = stats.t.interval(confidence, df=n - 1, loc=mean, scale=sd / np.sqrt(n))
    return {"mean": mean, "sd": sd, "ci_low": float(low), "ci_high": float(high), "n": n}


#: the columns `clean_columns` adds to a score table
_CLEAN_COLUMNS = ("value_clean", "ci_low_clean", "ci_high_clean", "n_test_clean")


def clean_columns(
    scores: pd.DataFrame, preds: pd.DataFrame, leaked_rows: Iterable[int], classes: np.ndarray, protocol: Protocol
) -> pd.DataFrame:
    """`scores` (one row per regime, seed, metric) with CLEAN_COLUMNS added (module docstring).

    preds: the prediction table of the same fits (regime, seed, row, y_true, y_pred, score); leaked_rows: test row
    ids (the parquet `row`) with a training homolog; classes: the task's classes (K,). Rows and their order are
    unchanged. Raises ValueError when a leaked row id is not a test row."""
    leaked = {int(r) for r in leaked_rows}
    unknown = leaked - set(preds["row"].unique()) if len(preds) else set()
    if unknown:
        raise ValueError(f"leaked test row ids {sorted(unknown)[:5]} are not rows of the test split")
    b = protocol.bootstrap
    out: dict[tuple[str, int, str], dict[str, float]] = {}
    first_seed: dict[str, int] = {}
    full = _full_values(scores, binary=len(classes) == 2)
    for key, g in preds.groupby(["regime", "seed"], sort=False):
        regime, seed = str(key[0]), int(str(key[1]))  # a two-column groupby key: (regime, seed)
        first_seed.setdefault(regime, seed)
        keep = ~g["row"].isin(leaked).to_numpy()
        n = int(keep.sum())
        vals = {"MCC": np.nan, "Acc": np.nan, "F1": np.nan, "AUROC": np.nan}
        low = high = np.nan
        if n == len(g) and (regime, seed) in full:
            # no row left out: the same predictions scored by the same functions with the same bootstrap seed, so
            # the full values are the clean ones bit for bit (module docstring); copied, not computed again
            vals, low, high = full[(regime, seed)]
        elif n:
            yt, yp = g["y_true"].to_numpy()[keep], g["y_pred"].to_numpy()[keep]
            vals.update(label_scores(yt, yp, classes, protocol.f1_labels))
            score = g["score"].to_numpy()[keep]
            if len(classes) == 2 and len(np.unique(yt)) == 2 and np.isfinite(score).all():
                vals["AUROC"] = float(roc_auc_score(yt, score))
            k = 0 if regime == "full" else int(regime.removesuffix("shot"))
            rng_seed = first_seed[regime] if regime == "full" else seed
            low, high = bootstrap_mcc_ci(
                encode(yt, classes, "clean test rows"),
                encode(yp, classes, "clean predictions"),
                len(classes),
                n_resamples=b.n_resamples,
                confidence=b.confidence,
                method=b.method,
                rng=np.random.default_rng([b.seed, k, rng_seed]),
            )
        for metric, value in vals.items():
            out[(regime, seed, metric)] = {
                "value_clean": value,
                "ci_low_clean": low if metric == "MCC" else np.nan,
                "ci_high_clean": high if metric == "MCC" else np.nan,
                "n_test_clean": n,
            }
    result = scores.copy()
    keys = zip(result["regime"].astype(str), result["seed"].astype(int), result["metric"].astype(str))
    found = [out.get(key) for key in keys]
    for col in _CLEAN_COLUMNS:
        default = -1 if col == "n_test_clean" else np.nan
        result[col] = [f[col] if f is not None else default for f in found]
    result["n_test_clean"] = result["n_test_clean"].astype("int64")
    return result


def _full_values(scores: pd.DataFrame, *, binary: bool) -> dict[tuple[str, int], tuple[dict[str, float], float, float]]:
    """{(regime, seed): ({metric: full-split value}, MCC ci_low, MCC ci_high)} of the fits with every label metric
    in `scores`; AUROC kept for a binary task only (the clean AUROC of a multiclass task is NaN: module docstring)."""
    out = {}
    rows = scores[scores["metric"].isin(["MCC", "Acc", "F1", "AUROC"])]
    for (regime, seed), g in rows.groupby(["regime", "seed"], sort=False):
        by_metric = g.set_index("metric")
        if not {"MCC", "Acc", "F1"} <= set(by_metric.index) or by_metric.index.duplicated().any():
            continue
        vals = {m: float(by_metric.at[m, "value"]) for m in ("MCC", "Acc", "F1")}
        auroc = by_metric.at["AUROC", "value"] if binary and "AUROC" in by_metric.index else np.nan
        vals["AUROC"] = float(auroc)
        out[(str(regime), int(seed))] = (
            vals,
            float(by_metric.at["MCC", "ci_low"]),
            float(by_metric.at["MCC", "ci_high"]),
        )
    return out
