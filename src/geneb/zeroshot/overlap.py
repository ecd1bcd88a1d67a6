"""Leak checks by content: which rows of a zero-shot task share sequence with a set of training sequences (a
Markov background, a reference model's pretraining split), whatever the tasks are called.

A task name says where a sequence was drawn from, not what it holds: GUE's 70-base core promoters are cut from
the same promoters as its 300-base ones, so a background of `gue_prom_core_all` holds whole windows of a task
built from `gue_prom_300_tata` under another name. `content_overlap` compares the sequences themselves:

* shared k-mers: every k-mer (default `K` = 31) of A/C/G/T bases, canonical (the smaller of the k-mer and its
  reverse complement as a 2-bit code, so either strand matches), of the task's sequences against those of the
  reference sequences. A 31-mer shared by two unrelated sequences is improbable (4^31 ≈ 4.6e18 codes; exact
  31-mer matching is the resolution of Kraken, Wood & Salzberg 2014, Genome Biol. 15:R46, k = 31); a k-mer
  holding any other letter is skipped;
* containment: a reference sequence (at least k bases) that shares a k-mer is checked for being a whole substring
  of a task sequence, on either strand (exact, Python's `in`).

Codes are built in a vectorised rolling pass (`_kmer_codes`: k shifts of a 2-bit accumulator over the
concatenated sequences), the reference streamed in chunks of `_CHUNK_BASES` bases, so a background of millions
of bases costs seconds and memory bounded by the chunk. Reference sequences shorter than k are not compared (a
k-mer check cannot see them; `n_reference_short` counts them). Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from geneb.zeroshot.task import ZeroShotTask

#: the k-mer length of the check (Kraken's k)
K = 31
#: bases of reference sequence encoded per chunk (bounds the temporary arrays to about 40 bytes per base)
_CHUNK_BASES = 1 << 22
_LUT = np.full(256, -1, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _LUT[ord(_b)] = _i
    _LUT[ord(_b.lower())] = _i
_COMPLEMENT = str.maketrans("ACGTacgt", "TGCAtgca")


@dataclass(frozen=True)
class ContentOverlap:
    """What a task shares with a reference set. k: the k-mer length; n_rows: task rows; rows_sharing: row ids
    (sorted) with at least one k-mer of the reference; rows_containing: row ids holding a whole reference sequence
    (either strand); reference_sharing: indices (sorted) of the reference sequences sharing a k-mer with the task;
    reference_contained: indices of those held whole by a task row; n_reference: reference sequences given;
    n_reference_short: of them, shorter than k (not compared)."""

    k: int
    n_rows: int
    rows_sharing: tuple[int, ...]
    rows_containing: tuple[int, ...]
    reference_sharing: tuple[int, ...]
    reference_contained: tuple[int, ...]
    n_reference: int
    n_reference_short: int

    def describe(self) -> str:
        """One line: rows sharing a k-mer, rows holding a whole reference sequence, reference sequences concerned."""
        return (
            f"{len(self.rows_sharing)} of {self.n_rows} rows share a {self.k}-mer with the reference, "
            f"{len(self.rows_containing)} hold a whole reference sequence; {len(self.reference_sharing)} of "
            f"{self.n_reference} reference sequences share a {self.k}-mer ({len(self.reference_contained)} held "
            f"whole; {self.n_reference_short} shorter than {self.k} not compared)"
        )


def _reverse_complement(seq: str) -> str:
    return seq.translate(_COMPLEMENT)[::-1]


def _kmer_codes(sequences: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """(canonical codes uint64 (m,), index of the sequence each comes from int64 (m,)) of every k-mer of A/C/G/T
    bases of `sequences`, in order. Raises ValueError for k outside 1..31 (a code must fit 62 bits)."""
    if not 1 <= k <= 31:
        raise ValueError(f"k-mer length {k} outside 1..31 (a canonical code must fit in 62 bits)")
    if not sequences:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    # one separator base (-1) after each sequence, so that no window spans two sequences
    joined = "".join(s + "N" for s in sequences)
    codes = _LUT[np.frombuffer(joined.encode("ascii", errors="replace"), dtype=np.uint8)]
    owner = np.repeat(np.arange(len(sequences)), [len(s) + 1 for s in sequences])
    n = len(codes) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    bad = np.r_[0, np.cumsum(codes < 0)]
    valid = (bad[k : k + n] - bad[:n]) == 0
    clean = np.where(codes < 0, 0, codes).astype(np.uint64)
    forward = np.zeros(n, dtype=np.uint64)
    reverse = np.zeros(n, dtype=np.uint64)
    for j in range(k):
        forward = (forward << np.uint64(2)) | clean[j : j + n]
        # the reverse complement's code: base j of the window is its (k-1-j)-th, complemented (3 - code)
        reverse |= (np.uint64(3) - clean[j : j + n]) << np.uint64(2 * j)
    canonical = np.minimum(forward, reverse)
    return canonical[valid], owner[:n][valid]


def _task_sequences(task: ZeroShotTask) -> tuple[list[str], np.ndarray]:
    """(sequences, row id of each) of every sequence column of `task` (variant: sequence; paired: both)."""
    columns = ("sequence",) if task.kind == "variant" else ("sequence_a", "sequence_b")
    seqs: list[str] = []
    rows: list[int] = []
    for column in columns:
        seqs += task.rows[column].astype(str).tolist()
        rows += task.rows.index.tolist()
    return seqs, np.asarray(rows, dtype=np.int64)


def content_overlap(task: ZeroShotTask, reference: Sequence[str], *, k: int = K) -> ContentOverlap:
    """Compare `task`'s sequences with the `reference` sequences by shared canonical k-mers and whole-sequence
    containment (module docstring). reference: DNA strings (any case; letters other than A/C/G/T break k-mers).
    Raises ValueError for k outside 1..31."""
    seqs, row_of = _task_sequences(task)
    task_codes, task_owner = _kmer_codes(seqs, k)
    order = np.argsort(task_codes, kind="stable")
    sorted_codes = np.unique(task_codes)
    shared_codes: list[np.ndarray] = []
    reference_sharing: list[int] = []
    start = 0
    while start < len(reference):
        stop, bases = start, 0
        while stop < len(reference) and (bases < _CHUNK_BASES or stop == start):
            bases += len(reference[stop]) + 1
            stop += 1
        codes, owner = _kmer_codes(list(reference[start:stop]), k)
        if len(sorted_codes) and len(codes):
            at = np.clip(np.searchsorted(sorted_codes, codes), 0, len(sorted_codes) - 1)
            hit = sorted_codes[at] == codes
            shared_codes.append(codes[hit])
            reference_sharing += (np.unique(owner[hit]) + start).tolist()
        start = stop
    shared = np.unique(np.concatenate(shared_codes)) if shared_codes else np.zeros(0, dtype=np.uint64)
    in_shared = np.isin(task_codes[order], shared)
    rows_sharing = sorted(set(row_of[task_owner[order][in_shared]].tolist()))
    by_row: dict[int, list[str]] = {}
    for s, r in zip(seqs, row_of.tolist()):
        by_row.setdefault(r, []).append(s)
    contained, rows_containing = [], set()
    for ref_index in reference_sharing:
        piece = reference[ref_index].upper()
        if len(piece) < k:
            continue
        both = (piece, _reverse_complement(piece))
        holders = [r for r in rows_sharing if any(p in s for p in both for s in by_row[r])]
        if holders:
            contained.append(ref_index)
            rows_containing.update(holders)
    return ContentOverlap(
        k=k,
        n_rows=task.n,
        rows_sharing=tuple(rows_sharing),
        rows_containing=tuple(sorted(rows_containing)),
        reference_sharing=tuple(reference_sharing),
        reference_contained=tuple(contained),
        n_reference=len(reference),
        n_reference_short=sum(len(s) < k for s in reference),
    )
