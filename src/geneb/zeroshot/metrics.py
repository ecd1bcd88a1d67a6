"""Metrics of zero-shot scores, with seeded bootstrap uncertainty: one long table per (task, scorer).

* variant tasks: AUROC (`sklearn.metrics.roc_auc_score`) and AUPRC (`average_precision_score`) of `score` against
  `label`, over all rows (group "all"), by `group` where the task has groups, and the count-weighted mean over the
  groups (group "weighted-mean", as TraitGym averages AUPRC over chromosomes weighted by their variant counts);
  each with a percentile bootstrap CI from stratified resamples (positives and controls resampled separately, so
  every resample has both classes; the resamples' AUROC and AUPRC are computed vectorised, checked equal to
  sklearn's in the tests);
* paired tasks: paired accuracy, the share of rows with score > 0, a tie (score exactly 0) counting 0.5; the
  exact two-sided sign test (`scipy.stats.binomtest` of #(score > 0) in #(score != 0) at p = 0.5: ties dropped for
  the test, as a sign test does) as `p_value`; a percentile bootstrap CI of rows resampled; by group and the
  count-weighted group mean as for variant tasks.

A degenerate case (a group with one class only, a paired group whose rows are all ties) gives its row with value
NaN and a `note` saying why, never a crash or a dropped row; the weighted mean leaves such groups out and names
them in its note. The bootstrap draws `n_boot` resamples from `numpy.random.default_rng([seed, crc32(group)])`: the
same resamples for every scorer of a task (common random numbers), independent of the order of the groups.

Torch-free.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.stats import binomtest, rankdata
from sklearn.metrics import average_precision_score, roc_auc_score

from geneb.zeroshot.scores import check_row_scores
from geneb.zeroshot.task import GROUP_COLUMN, ZeroShotTask

METRIC_COLUMNS: tuple[str, ...] = (
    "task", "scorer", "metric", "group", "value", "ci_low", "ci_high", "n", "n_positive", "p_value", "n_boot",
    "seed", "ci_level", "note",
)  # fmt: skip
ALL = "all"
WEIGHTED_MEAN = "weighted-mean"
N_BOOT = 1000
CI_LEVEL = 0.95

Metric = Callable[[np.ndarray, np.ndarray], float]
#: variant metrics: (labels int (n,), scores float (n,)) -> value, the point estimates
VARIANT_METRICS: dict[str, Metric] = {
    "auroc": lambda y, s: float(roc_auc_score(y, s)),
    "auprc": lambda y, s: float(average_precision_score(y, s)),
}


def resampled_auroc(labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """AUROC of each resample, float64 (b,), from labels and scores (b, n) with both classes in every row: the
    Mann-Whitney form (mean rank of the positives, ties at mid-rank; `scipy.stats.rankdata`), equal to
    `roc_auc_score` (its trapezoids count a tie as 1/2), vectorised because a bootstrap calls it thousands of times."""
    positives = labels.sum(axis=1)
    negatives = labels.shape[1] - positives
    ranks = rankdata(scores, axis=1)
    return np.asarray(((ranks * labels).sum(axis=1) - positives * (positives + 1) / 2) / (positives * negatives))


def resampled_auprc(labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Average precision of each resample, float64 (b,), as `average_precision_score` defines it (sum over the
    distinct score thresholds of recall gained x precision there; tied scores are one threshold), vectorised."""
    order = np.argsort(-scores, axis=1, kind="stable")
    y = np.take_along_axis(labels, order, axis=1).astype(np.float64)
    s = np.take_along_axis(scores, order, axis=1)
    n = s.shape[1]
    true_pos = np.cumsum(y, axis=1)
    block_end = np.concatenate([s[:, 1:] != s[:, :-1], np.ones((len(s), 1), bool)], axis=1)
    # each position's tie block ends at the next block end at or after it
    end = np.where(block_end, np.arange(n), n)[:, ::-1]
    end = np.minimum.accumulate(end, axis=1)[:, ::-1]
    precision = np.take_along_axis(true_pos, end, axis=1) / (end + 1)
    return np.asarray((y * precision).sum(axis=1) / y.sum(axis=1))


#: the same metrics over bootstrap resamples: (labels (b, n), scores (b, n)) -> (b,)
RESAMPLED_METRICS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "auroc": resampled_auroc,
    "auprc": resampled_auprc,
}
PAIRED_ACCURACY = "paired_accuracy"


def paired_accuracy(scores: np.ndarray) -> np.ndarray:
    """Share of rows with score > 0, a tie (score == 0) counting 0.5, along the last axis: (n,) -> scalar array,
    (b, n) -> (b,)."""
    return np.asarray(((scores > 0) + 0.5 * (scores == 0)).mean(axis=-1), dtype=np.float64)


def sign_test(scores: np.ndarray) -> float:
    """Exact two-sided sign test p-value of #(score > 0) among the rows with score != 0 (ties dropped), p = 0.5;
    NaN when every row is a tie."""
    nonzero = scores[scores != 0]
    if len(nonzero) == 0:
        return float("nan")
    return float(binomtest(int((nonzero > 0).sum()), len(nonzero), 0.5, alternative="two-sided").pvalue)


def _rng(seed: int, group: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(group.encode())])


def stratified_resamples(strata: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap row indices int (n_boot, n): each stratum (a label) resampled with replacement to its own size."""
    out = np.empty((n_boot, len(strata)), dtype=np.int64)
    start = 0
    for value in np.unique(strata):
        members = np.flatnonzero(strata == value)
        out[:, start : start + len(members)] = rng.choice(members, size=(n_boot, len(members)), replace=True)
        start += len(members)
    return out


def _interval(replicates: np.ndarray) -> tuple[float, float]:
    if len(replicates) == 0:
        return float("nan"), float("nan")
    tail = (1 - CI_LEVEL) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return float(low), float(high)


def _row(task: str, scorer: str, metric: str, group: str, value: float, reps: np.ndarray, n: int, **kw: object) -> dict[str, object]:  # fmt: skip
    low, high = _interval(reps) if np.isfinite(value) else (float("nan"), float("nan"))
    return {"task": task, "scorer": scorer, "metric": metric, "group": group, "value": value, "ci_low": low,
            "ci_high": high, "n": n, "n_positive": kw.get("n_positive", np.nan), "p_value": kw.get("p_value", np.nan),
            "note": kw.get("note", "")}  # fmt: skip


def _groups(task: ZeroShotTask) -> list[tuple[str, np.ndarray]]:
    """(group name, row positions) of every group of the task, in sorted order; [] without groups."""
    if not task.has_groups:
        return []
    labels = task.rows[GROUP_COLUMN].astype(str).to_numpy()
    reserved = sorted({ALL, WEIGHTED_MEAN} & set(labels))
    if reserved:
        raise ValueError(f"zero-shot task {task.name}: group name(s) {reserved} are reserved for the summary rows")
    return [(str(g), np.flatnonzero(labels == g)) for g in sorted(set(labels))]


def _weighted_mean(
    task: str, scorer: str, metric: str, parts: list[tuple[str, int, float, np.ndarray]]
) -> dict[str, object]:
    """The count-weighted mean of the groups' values, and its CI from the groups' replicates (resample b of every
    group together). parts: (group, n, value, replicates (n_boot,)); NaN-valued groups are left out, named."""
    used = [p for p in parts if np.isfinite(p[2])]
    left_out = [p[0] for p in parts if not np.isfinite(p[2])]
    note = f"groups left out (no value): {', '.join(left_out)}" if left_out else ""
    n = sum(p[1] for p in used)
    if not used:
        return _row(task, scorer, metric, WEIGHTED_MEAN, float("nan"), np.array([]), 0, note=note or "no groups")
    weights = np.array([p[1] for p in used], dtype=np.float64) / n
    value = float(np.dot(weights, [p[2] for p in used]))
    reps = np.stack([p[3] for p in used]).T @ weights
    return _row(task, scorer, metric, WEIGHTED_MEAN, value, reps, n, note=note)


def _variant_rows(task: ZeroShotTask, scorer: str, score: np.ndarray, n_boot: int, seed: int) -> list[dict[str, object]]:  # fmt: skip
    label = task.rows["label"].to_numpy()
    bad = sorted(set(np.unique(label).tolist()) - {0, 1})
    if bad:
        raise ValueError(f"zero-shot task {task.name}: labels must be 0 or 1, got {bad}")
    label = label.astype(np.int64)
    rows: list[dict[str, object]] = []
    parts: dict[str, list[tuple[str, int, float, np.ndarray]]] = {m: [] for m in VARIANT_METRICS}
    for group, members in [(ALL, np.arange(task.n)), *_groups(task)]:
        y, s = label[members], score[members]
        n_pos = int(y.sum())
        for metric, fn in VARIANT_METRICS.items():
            if n_pos in (0, len(y)):
                what = "no effect rows (label 1)" if n_pos == 0 else "no control rows (label 0)"
                row = _row(task.name, scorer, metric, group, float("nan"), np.array([]), len(y), n_positive=n_pos,
                           note=f"one class only: {what}")  # fmt: skip
                rows.append(row)
                if group != ALL:
                    parts[metric].append((group, len(y), float("nan"), np.full(n_boot, np.nan)))
                continue
            idx = stratified_resamples(y, n_boot, _rng(seed, group))
            value = fn(y, s)
            reps = RESAMPLED_METRICS[metric](y[idx], s[idx])
            rows.append(_row(task.name, scorer, metric, group, value, reps, len(y), n_positive=n_pos))
            if group != ALL:
                parts[metric].append((group, len(y), value, reps))
    if task.has_groups:
        rows += [_weighted_mean(task.name, scorer, metric, parts[metric]) for metric in VARIANT_METRICS]
    return rows


def _paired_rows(task: ZeroShotTask, scorer: str, score: np.ndarray, n_boot: int, seed: int) -> list[dict[str, object]]:  # fmt: skip
    rows: list[dict[str, object]] = []
    parts: list[tuple[str, int, float, np.ndarray]] = []
    for group, members in [(ALL, np.arange(task.n)), *_groups(task)]:
        s = score[members]
        p_value = sign_test(s)
        note = "every row a tie (score 0): no sign test" if not np.isfinite(p_value) else ""
        idx = stratified_resamples(np.zeros(len(s), np.int64), n_boot, _rng(seed, group))
        value = float(paired_accuracy(s))
        reps = paired_accuracy(s[idx])
        rows.append(_row(task.name, scorer, PAIRED_ACCURACY, group, value, reps, len(s), p_value=p_value, note=note))
        if group != ALL:
            parts.append((group, len(s), value, reps))
    if task.has_groups:
        rows.append(_weighted_mean(task.name, scorer, PAIRED_ACCURACY, parts))
    return rows


def score_metrics(task: ZeroShotTask, scores: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """The metric rows (`METRIC_COLUMNS`) of one `RowScores` frame of `task` (module docstring).

    value: the metric on all rows of the group; ci_low/ci_high: the percentile CI (`CI_LEVEL`) of `n_boot`
    seeded resamples; n: rows in the group; n_positive: label-1 rows (variant; NaN for paired); p_value: the sign
    test (paired; NaN for variant); note: why a value is NaN, or which groups a weighted mean left out.
    Raises ZeroShotScoreError for a frame that breaks the RowScores contract, ValueError for n_boot < 1, a
    variant label other than 0/1, or a group named `all` or `weighted-mean` (the summary rows' names).
    """
    check_row_scores(task, scores)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    scorer = str(scores["scorer"].iloc[0])
    score = scores["score"].to_numpy(dtype=np.float64)
    build = _variant_rows if task.kind == "variant" else _paired_rows
    frame = pd.DataFrame(build(task, scorer, score, n_boot, seed))
    frame["n_boot"], frame["seed"], frame["ci_level"] = n_boot, seed, CI_LEVEL
    return frame[list(METRIC_COLUMNS)]
