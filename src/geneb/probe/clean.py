"""Clean-subset scores: every fit scored again on the test rows without a training homolog.

The task audit (`geneb.tasks.audit_step`, rule `audit_task`) lists the test rows with a near-identical copy in the
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
from sklearn.metrics import roc_auc_score

from geneb.probe import metrics
from geneb.probe.protocols import Protocol

#: the columns `clean_columns` adds to a score table
CLEAN_COLUMNS = ("value_clean", "ci_low_clean", "ci_high_clean", "n_test_clean")


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
            vals.update(metrics.label_scores(yt, yp, classes, protocol.f1_labels))
            score = g["score"].to_numpy()[keep]
            if len(classes) == 2 and len(np.unique(yt)) == 2 and np.isfinite(score).all():
                vals["AUROC"] = float(roc_auc_score(yt, score))
            k = 0 if regime == "full" else int(regime.removesuffix("shot"))
            rng_seed = first_seed[regime] if regime == "full" else seed
            low, high = metrics.bootstrap_mcc_ci(
                metrics.encode(yt, classes, "clean test rows"),
                metrics.encode(yp, classes, "clean predictions"),
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
    for col in CLEAN_COLUMNS:
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
