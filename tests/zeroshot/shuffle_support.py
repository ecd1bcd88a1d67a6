"""The invariant the k-let shuffle (geneb.zeroshot.scorers.klet_shuffle) keeps, for its tests."""

from __future__ import annotations


def klet_counts(sequence: str, k: int) -> dict[str, int]:
    """{k-let: occurrences} of `sequence` (overlapping), the invariant `klet_shuffle` keeps."""
    counts: dict[str, int] = {}
    for i in range(len(sequence) - k + 1):
        counts[sequence[i : i + k]] = counts.get(sequence[i : i + k], 0) + 1
    return counts
