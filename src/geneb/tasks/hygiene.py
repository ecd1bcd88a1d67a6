"""Data hygiene reports: duplicates within a split, train/test overlap (exact and reverse complement),
sequences that carry two labels. Reported in the task card; nothing is dropped.

Identity for all comparisons is case-insensitive (soft-masked and unmasked copies of one sequence are the
same sequence); reverse-complement overlap uses `canonical_key`, which is a comparison key only and is never
stored or fed to a model, so soft-masking survives.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

_COMPLEMENT = str.maketrans(
    "ACGTURYSWKMBDHVNacgturyswkmbdhvn",
    "TGCAAYRSWMKVHDBNtgcaayrswmkvhdbn",
)


def reverse_complement(seq: str) -> str:
    """Reverse complement of a DNA sequence; keeps case; IUPAC codes map to their complements (U -> A)."""
    return seq.translate(_COMPLEMENT)[::-1]


def identity_key(seq: str) -> str:
    """Case-insensitive identity of a sequence (the key for exact-duplicate checks)."""
    return seq.upper()


def canonical_key(seq: str) -> str:
    """Strand-independent, case-insensitive key: the lexicographically smaller of the sequence and its
    reverse complement, uppercased. For comparisons only; the stored sequence is untouched."""
    up = seq.upper()
    rc = reverse_complement(up)
    return min(up, rc)


def within_split_duplicates(df: pd.DataFrame) -> dict[str, Any]:
    """Duplicates inside one split.

    df: columns `row`, `sequence`, `label`. Returns `n_duplicate_rows` (rows repeating an earlier row's
    sequence), `duplicate_rows` (their row ids), `class_counts` and `class_counts_dedup` (after keeping the
    first row of each (sequence, label)), `conflicting_label_sequences` (sequences seen with >1 label), and
    `n_rc_duplicate_rows` / `rc_duplicate_rows`: rows that are not such a repeat but whose reverse complement
    (`canonical_key`) is an earlier row of the split (reported only; the dedup scores drop exact repeats).
    """
    keys = df["sequence"].map(identity_key)
    dup_mask = keys.duplicated(keep="first")
    rc_mask = df["sequence"].map(canonical_key).duplicated(keep="first") & ~dup_mask
    pair_dup = pd.DataFrame({"k": keys, "y": df["label"]}).duplicated(keep="first")
    labels_per_seq = pd.DataFrame({"k": keys, "y": df["label"]}).groupby("k")["y"].nunique()
    counts = Counter(int(v) for v in df["label"])
    counts_dedup = Counter(int(v) for v in df.loc[~pair_dup.to_numpy(), "label"])
    return {
        "n_duplicate_rows": int(dup_mask.sum()),
        "duplicate_rows": [int(r) for r in df.loc[dup_mask.to_numpy(), "row"]],
        "dedup_drop_rows": [int(r) for r in df.loc[pair_dup.to_numpy(), "row"]],
        "class_counts": {str(k): counts[k] for k in sorted(counts)},
        "class_counts_dedup": {str(k): counts_dedup[k] for k in sorted(counts_dedup)},
        "conflicting_label_sequences": int((labels_per_seq > 1).sum()),
        "n_rc_duplicate_rows": int(rc_mask.sum()),
        "rc_duplicate_rows": [int(r) for r in df.loc[rc_mask.to_numpy(), "row"]],
    }


def train_test_overlap(train: pd.DataFrame, test: pd.DataFrame) -> dict[str, Any]:
    """Test rows whose sequence occurs in train: `exact` (same sequence, any case) and `reverse_complement`
    (same canonical key but not an exact match), with the test row ids of each and how many overlapping
    test rows (exact or reverse-complement) carry a label that differs from a train copy, or whose train
    copies disagree among themselves (`label_conflicts`). `case_only` / `case_only_rows`: the `exact` rows
    that differ from every train copy in letter case only (soft-masked on one side), counted inside `exact`
    and apart."""
    train_exact: dict[str, set[int]] = {}
    train_canon: dict[str, set[int]] = {}
    train_bytes = set(train["sequence"])
    for seq, y in zip(train["sequence"], train["label"]):
        train_exact.setdefault(identity_key(seq), set()).add(int(y))
        train_canon.setdefault(canonical_key(seq), set()).add(int(y))
    exact_rows, rc_rows, case_rows, conflicts = [], [], [], 0
    for row, seq, y in zip(test["row"], test["sequence"], test["label"]):
        k = identity_key(seq)
        if k in train_exact:
            exact_rows.append(int(row))
            if seq not in train_bytes:
                case_rows.append(int(row))
            labels = train_exact[k]
        elif (c := canonical_key(seq)) in train_canon:
            rc_rows.append(int(row))
            labels = train_canon[c]
        else:
            continue
        conflicts += int(int(y) not in labels or len(labels) > 1)
    return {
        "exact": len(exact_rows),
        "reverse_complement": len(rc_rows),
        "exact_rows": exact_rows,
        "case_only": len(case_rows),
        "case_only_rows": case_rows,
        "reverse_complement_rows": rc_rows,
        "label_conflicts": conflicts,
    }


def conflicting_label_sequences(
    splits: dict[str, pd.DataFrame],
) -> list[tuple[str, dict[int, dict[str, list[int]]]]]:
    """The sequences that occur with more than one label, within a split or across splits (case-insensitive
    identity, `identity_key`; reverse complements are not matched): [(identity key, {label: {split: row ids}})],
    in order of first occurrence (splits in the given order), labels in order of first occurrence.

    splits: {split: frame with columns `row`, `sequence`, `label`}."""
    seen: dict[str, dict[int, dict[str, list[int]]]] = {}
    for split, df in splits.items():
        for row, seq, y in zip(df["row"], df["sequence"], df["label"]):
            seen.setdefault(identity_key(str(seq)), {}).setdefault(int(y), {}).setdefault(split, []).append(int(row))
    return [(key, where) for key, where in seen.items() if len(where) > 1]
