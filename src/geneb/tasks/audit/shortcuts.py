"""Shortcut features: per-sequence numbers a classifier can use without reading the sequence as DNA.

Each feature group maps a list of n DNA strings to a float64 matrix (n, d), vectorised with numpy (sequences
are processed in chunks of about `CHUNK_BASES` letters, so memory is bounded whatever the task size):

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
of one without C or without G. Callers decide what to do with NaN (`geneb.tasks.audit.single_feature` counts
and reports those rows).

CpG o/e is Gardiner-Garden & Frommer (1987), J. Mol. Biol. 196:261-282, with the sequence length replaced by
the number of A/C/G/T bases (consistent with the exclusion of N above).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the feature groups, in the order `feature_matrix` stacks them
GROUPS = ("length", "gc", "mono", "di", "tri", "cpg_oe")
BASES = "ACGT"
#: letters per chunk: bounds the temporary arrays (about 30 bytes per letter) whatever the task size
CHUNK_BASES = 1 << 22

_LUT = np.full(256, 4, dtype=np.uint8)
for _i, _b in enumerate(BASES):
    _LUT[ord(_b)] = _i
    _LUT[ord(_b.lower())] = _i


class ShortcutInputError(ValueError):
    """A sequence the shortcut features cannot read (not text, not ASCII) or an unknown group; the message
    names the row (0-based position in the list given) and the value."""


def kmer_names(k: int) -> list[str]:
    """The 4**k k-mers over A/C/G/T in lexicographic order (the column order of the `di`/`tri` groups)."""
    names = [""]
    for _ in range(k):
        names = [n + b for n in names for b in BASES]
    return names


def feature_names(group: str) -> list[str]:
    """Column names of `group`'s matrix, e.g. ["gc"], ["di_AA", ..., "di_TT"]. Raises ShortcutInputError for
    an unknown group."""
    _check_group(group)
    if group == "mono":
        return [f"mono_{b}" for b in BASES]
    if group in ("di", "tri"):
        return [f"{group}_{m}" for m in kmer_names(2 if group == "di" else 3)]
    return [group]


def features(sequences: Sequence[str], group: str, *, where: str = "") -> np.ndarray:
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
    for all groups. Errors as for `features`."""
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
        if acc and acc + n > CHUNK_BASES:
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
