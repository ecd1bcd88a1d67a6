"""Single-feature AUROC: how well one shortcut feature alone separates a task's classes, with the published
pass/warning/fail flags.

The method and every constant follow genomic-benchmarks-qc (github.com/genomic-benchmarks/genomic-benchmarks-qc,
docs/guide/how-it-works.md and src/genomic_benchmarks_qc/utils/testing.py: `_compute_metrics_from_arrays`,
`_flag_on_score`, `MIN_SEQUENCES_PER_CLASS`):

* the feature value is read as a classifier's score and scored with `sklearn.metrics.roc_auc_score`;
* direction is discarded: an AUROC below 0.5 is reported as 1 - AUROC ("class A has more GC" and "less GC"
  are the same finding), so every value is in [0.5, 1]; a feature constant over the rows scores 0.5;
* flags: `pass` at AUROC <= 0.6, `warning` above 0.6 up to 0.7, `fail` above 0.7 (`PASS_MAX`,
  `FAIL_ABOVE`); `unknown` when the smallest class has fewer than 250 rows (`MIN_ROWS_PER_CLASS`): below it,
  their simulation shows noise alone pushing the worst per-sequence check over 0.6 in 19.4% of null
  replicates at 100 per class, 0.2% at 250. The AUROC is still computed and reported for such a task; only
  the flag says `unknown` (not evidence of a clean task);
* a headline over several features is the worst (largest) AUROC.

Where GENEB differs, on purpose:

* multiclass tasks: genomic-benchmarks-qc scores every pair of classes separately. GENEB scores one-vs-rest,
  macro averaged: for each class c the AUROC of the feature for "c" against "not c", folded to
  max(AUROC, 1 - AUROC) per class (a feature may put one class at the low end and another at the high end),
  then the unweighted mean over classes. For two classes this is exactly the binary AUROC above;
* composition ignores N and other non-ACGT letters (`geneb.tasks.audit.shortcuts`); a row whose feature is
  undefined (NaN: no A/C/G/T, or no unambiguous dinucleotide) is left out of that feature's AUROC and counted
  in `n_undefined`, never imputed.

Which split: the task's training rows. A probe learns from the training split, so a shortcut present there
is the one a probe can pick up; the training split is also the larger one in most tasks (more power against
the 250-row floor), and the audit then never reads test labels except to measure leakage.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from geneb.tasks.audit.shortcuts import feature_matrix

#: AUROC at or below which a feature passes (genomic-benchmarks-qc `_flag_on_score`)
PASS_MAX = 0.6
#: AUROC above which a feature fails; between PASS_MAX and this it is a warning
FAIL_ABOVE = 0.7
#: rows the smallest class needs before a flag is given (genomic-benchmarks-qc `MIN_SEQUENCES_PER_CLASS`)
MIN_ROWS_PER_CLASS = 250
#: the feature groups scored one feature at a time: length, GC, the 4 bases and the 16 dinucleotides
SCORED_GROUPS = ("length", "gc", "mono", "di")
FLAGS = ("pass", "warning", "fail", "unknown")
#: which split the single-feature AUROCs are computed on (see the module docstring)
SPLIT = "train"


def flag_auroc(auroc: float, min_class_rows: int, *, min_rows: int = MIN_ROWS_PER_CLASS) -> str:
    """The published flag of a (folded) AUROC: `unknown` if `min_class_rows` < `min_rows` or the AUROC is
    not finite, else `fail` above FAIL_ABOVE, `warning` above PASS_MAX, `pass` otherwise."""
    if min_class_rows < min_rows or auroc is None or not np.isfinite(auroc):
        return "unknown"
    if auroc > FAIL_ABOVE:
        return "fail"
    if auroc > PASS_MAX:
        return "warning"
    return "pass"


def _folded(y: np.ndarray, values: np.ndarray) -> float:
    if np.all(values == values[0]):
        return 0.5
    a = float(roc_auc_score(y, values))
    return max(a, 1.0 - a)


def feature_auroc(values: np.ndarray, labels: np.ndarray) -> float:
    """Direction-free AUROC of one feature: values (n,) float (finite), labels (n,) int. Binary: the folded
    AUROC; multiclass: one-vs-rest, each class folded, macro mean (module docstring). NaN when fewer than two
    classes are present. Raises ValueError for unequal lengths or non-finite values."""
    values = np.asarray(values, dtype=np.float64)
    labels = np.asarray(labels)
    if values.shape != labels.shape or values.ndim != 1:
        raise ValueError(f"values {values.shape} and labels {labels.shape} must be two (n,) arrays")
    if not np.all(np.isfinite(values)):
        raise ValueError("feature values must be finite (leave undefined rows out first)")
    classes = np.unique(labels)
    if len(classes) < 2:
        return float("nan")
    if len(classes) == 2:
        return _folded(labels == classes[1], values)
    return float(np.mean([_folded(labels == c, values) for c in classes]))


def single_feature_aurocs(
    sequences: Sequence[str], labels: Sequence[int] | np.ndarray, *, where: str = "", min_rows: int = MIN_ROWS_PER_CLASS
) -> pd.DataFrame:
    """Every scored feature's AUROC on the rows given (GENEB passes the training split).

    sequences: n DNA strings; labels: n integer class labels. Returns one row per feature (length, gc,
    mono_A..mono_T, di_AA..di_TT): `feature`, `group`, `auroc` (folded, in [0.5, 1]; NaN when the rows with
    a defined value hold fewer than two classes), `flag` (pass/warning/fail/unknown), `n_rows` (rows scored),
    `n_undefined` (rows left out: NaN feature value), `min_class_rows` (smallest class among the rows scored).
    Raises ValueError naming `where` for unequal lengths, fewer than two classes or non-integer labels;
    ShortcutInputError for an unreadable sequence."""
    y = np.asarray(labels)
    if len(y) != len(sequences):
        raise ValueError(f"{where}{len(sequences)} sequences but {len(y)} labels")
    if y.dtype.kind not in "iu":
        raise ValueError(f"{where}labels must be integers, got dtype {y.dtype}")
    if len(np.unique(y)) < 2:
        raise ValueError(f"{where}a single class ({np.unique(y).tolist()}): no feature can separate classes")
    matrix, names = feature_matrix(sequences, SCORED_GROUPS, where=where)
    rows = []
    for j, name in enumerate(names):
        values = matrix[:, j]
        ok = np.isfinite(values)
        y_ok = y[ok]
        counts = np.unique(y_ok, return_counts=True)[1]
        min_class = int(counts.min()) if len(counts) >= 2 else 0
        auroc = feature_auroc(values[ok], y_ok) if ok.any() else float("nan")
        rows.append(
            {
                "feature": name,
                "group": name.split("_")[0],
                "auroc": auroc,
                "flag": flag_auroc(auroc, min_class, min_rows=min_rows),
                "n_rows": int(ok.sum()),
                "n_undefined": int((~ok).sum()),
                "min_class_rows": min_class,
            }
        )
    return pd.DataFrame(rows)


def headline(table: pd.DataFrame) -> dict[str, object]:
    """The worst feature of a `single_feature_aurocs` table: `best_feature`, `best_auroc` (the largest
    AUROC), `flag` (the flag of that feature: worst case, as genomic-benchmarks-qc's headline) and `n_fail` /
    `n_warning` (features so flagged). With no finite AUROC: best_feature None, flag `unknown`."""
    finite = table[np.isfinite(table["auroc"].to_numpy(dtype=float))]
    if finite.empty:
        return {"best_feature": None, "best_auroc": float("nan"), "flag": "unknown", "n_fail": 0, "n_warning": 0}
    best = finite.loc[finite["auroc"].idxmax()]
    return {
        "best_feature": str(best["feature"]),
        "best_auroc": float(best["auroc"]),
        "flag": str(best["flag"]),
        "n_fail": int((table["flag"] == "fail").sum()),
        "n_warning": int((table["flag"] == "warning").sum()),
    }
