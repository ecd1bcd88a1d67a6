"""`audit_task`: one record per task saying whether the task measures the model, the row of a future
`results/tables/task_audit.parquet`.

Two questions, each with its published rule:

* shortcuts (`geneb.tasks.audit.single_feature`): can length, GC, one base's or one dinucleotide's frequency
  alone separate the classes of the training split? AUROC per feature, flag of the worst one (fail above 0.7,
  unknown below 250 rows in the smallest class);
* leakage (`geneb.tasks.audit.homology`): what fraction of the test rows has a near-identical copy (identity of
  the whole test row >= 0.9, either strand: MMseqs2 proposes candidates, a semi-global alignment re-scores them)
  in the training split? Fail at 2% or more.

The workflow audits the prepared (checked, possibly capped) splits (`geneb.tasks.audit_step`, rule `audit_task`);
the benchmark reads the source splits uncapped (`geneb.tasks.audit_step.load_task`).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pandas as pd

from geneb.tasks.audit.homology import HomologyParams, homology_leakage
from geneb.tasks.audit.single_feature import MIN_ROWS_PER_CLASS, SPLIT, headline, single_feature_aurocs

#: the scalar columns of an audit record, in order (`leaked_test_rows` and `shortcut_aurocs` come after)
RECORD_COLUMNS = (
    "task",
    "n_train",
    "n_test",
    "n_classes",
    "min_class_rows_train",
    "shortcut_split",
    "shortcut_best_feature",
    "shortcut_best_auroc",
    "shortcut_flag",
    "shortcut_fail",
    "shortcut_n_fail",
    "shortcut_n_warning",
    "shortcut_n_undefined_rows",
    "auroc_length",
    "auroc_gc",
    "auroc_di_CG",
    "leak_n_leaked",
    "leak_fraction",
    "leak_flag",
    "leak_fail",
    "leak_n_exact",
    "leak_n_reverse_complement",
    "leak_n_by_search",
    "leak_n_exact_not_found_by_search",
    "leak_n_unsearched_test",
    "leak_n_unsearched_train",
    "leak_n_candidates",
    "leak_n_mmseqs_similarity",
    "audit_fail",
    "seconds_shortcuts",
    "seconds_homology",
    "seconds_rescore",
    "parameters",
)


class AuditInputError(ValueError):
    """A split the audit cannot use (missing column, empty); the message names task and split."""


def _columns(df: pd.DataFrame, task: str, split: str) -> None:
    missing = [c for c in ("sequence", "label") if c not in df.columns]
    if missing:
        raise AuditInputError(f"task {task!r}, split {split!r}: no column(s) {missing}; found {list(df.columns)}")
    if df.empty:
        raise AuditInputError(f"task {task!r}, split {split!r}: no rows")


def audit_task(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    *,
    task: str,
    homology: HomologyParams | None = None,
    min_rows_per_class: int = MIN_ROWS_PER_CLASS,
    tmp_root: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Audit one task: a dict with every `RECORD_COLUMNS` entry, plus `shortcut_aurocs` ({feature: AUROC} for
    length, gc, mono_A..mono_T, di_AA..di_TT), `shortcut_flags` ({feature: flag}) and `leaked_test_rows`
    (sorted test row ids: the `row` column of `test_df` where it has one, which `load_task` fills with the
    0-based row in the source file; else 0-based positions in `test_df`), with, for each, the training row of
    its best hit (`leaked_best_train_rows`, same convention), that hit's similarity, the one the threshold is
    applied to (`leaked_best_similarity`: the semi-global identity of the whole test row, 1.0 for a copy) and
    MMseqs2's local fident x coverage of the same pair (`leaked_best_similarity_mmseqs`, NaN for a copy the
    search did not propose). `leak_n_candidates`: pairs MMseqs2 proposed (all re-scored); `leak_n_mmseqs_similarity`:
    test rows MMseqs2's similarity alone would leak (the rule before re-scoring, copies aside).

    train_df / test_df: columns `sequence` (str) and `label` (int). Shortcut AUROCs are computed on the
    training split (`single_feature.SPLIT`, reason in its module docstring). `parameters` (JSON text) records
    every setting: the flag boundaries, the split, and the homology search's parameters, MMseqs2 path,
    version and command. Raises AuditInputError for a missing column or an empty split; what
    `single_feature_aurocs` and `homology_leakage` raise (MMseqsNotFoundError when MMseqs2 is missing)."""
    import time

    from geneb.tasks.audit import single_feature as sf

    _columns(train_df, task, "train")
    _columns(test_df, task, "test")
    params = homology or HomologyParams()
    train_seqs = train_df["sequence"].astype(str).tolist()
    test_seqs = test_df["sequence"].astype(str).tolist()
    y = train_df["label"].to_numpy()
    if y.dtype.kind not in "iu":
        raise AuditInputError(f"task {task!r}, split 'train': labels must be integers (dtype {y.dtype})")

    t0 = time.perf_counter()
    table = single_feature_aurocs(train_seqs, y, where=f"task {task!r}, split {SPLIT!r}, ", min_rows=min_rows_per_class)
    head = headline(table)
    t1 = time.perf_counter()
    leak = homology_leakage(train_seqs, test_seqs, params, task=task, tmp_root=tmp_root)
    t2 = time.perf_counter()

    aurocs = dict(zip(table["feature"], table["auroc"].astype(float)))
    row_ids = test_df["row"].to_numpy() if "row" in test_df.columns else np.arange(len(test_df))
    train_ids = train_df["row"].to_numpy() if "row" in train_df.columns else np.arange(len(train_df))
    counts = np.unique(y, return_counts=True)[1]
    parameters = {
        "shortcut": {
            "split": SPLIT,
            "features": list(table["feature"]),
            "pass_max": sf.PASS_MAX,
            "fail_above": sf.FAIL_ABOVE,
            "min_rows_per_class": min_rows_per_class,
            "multiclass": "one-vs-rest, folded per class, macro mean",
        },
        "homology": leak.params,
    }
    record: dict[str, Any] = {
        "task": task,
        "n_train": len(train_df),
        "n_test": len(test_df),
        "n_classes": len(counts),
        "min_class_rows_train": int(counts.min()),
        "shortcut_split": SPLIT,
        "shortcut_best_feature": head["best_feature"],
        "shortcut_best_auroc": head["best_auroc"],
        "shortcut_flag": head["flag"],
        "shortcut_fail": head["flag"] == "fail",
        "shortcut_n_fail": head["n_fail"],
        "shortcut_n_warning": head["n_warning"],
        "shortcut_n_undefined_rows": int(table["n_undefined"].max()),
        "auroc_length": aurocs["length"],
        "auroc_gc": aurocs["gc"],
        "auroc_di_CG": aurocs["di_CG"],
        "leak_n_leaked": len(leak.leaked_rows),
        "leak_fraction": leak.leaked_fraction,
        "leak_flag": leak.flag,
        "leak_fail": leak.fail,
        "leak_n_exact": leak.n_exact,
        "leak_n_reverse_complement": leak.n_reverse_complement,
        "leak_n_by_search": leak.n_leaked_by_search,
        "leak_n_exact_not_found_by_search": leak.n_exact_not_found_by_search,
        "leak_n_unsearched_test": leak.n_unsearched_test,
        "leak_n_unsearched_train": leak.n_unsearched_train,
        "leak_n_candidates": leak.n_hits,
        "leak_n_mmseqs_similarity": leak.n_leaked_mmseqs_similarity,
        "audit_fail": head["flag"] == "fail" or leak.fail,
        "seconds_shortcuts": t1 - t0,
        "seconds_homology": t2 - t1,
        "seconds_rescore": leak.seconds_rescore,
        "parameters": json.dumps(parameters, sort_keys=True),
        "shortcut_aurocs": aurocs,
        "shortcut_flags": dict(zip(table["feature"], table["flag"])),
        "leaked_test_rows": [int(row_ids[i]) for i in leak.leaked_rows],
        "leaked_best_train_rows": [int(train_ids[i]) for i in leak.best_train_rows],
        "leaked_best_similarity": leak.best_similarity,
        "leaked_best_similarity_mmseqs": leak.best_similarity_mmseqs,
    }
    return record
