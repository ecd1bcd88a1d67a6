"""True identity of a test row to a training row: a semi-global alignment of the WHOLE test row, used to re-score
every candidate pair MMseqs2 proposes (`geneb.tasks.audit.homology`).

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: BLAST+ blastn task defaults (reward 2, penalty -3, gap open 5, gap extend 2; a gap of k letters costs 5 + 2k)
MATCH = 2
MISMATCH = -3
GAP_OPEN = 5
GAP_EXTEND = 2
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

        m = parasail.matrix_create("ACGTN", MATCH, MISMATCH)
        for i in range(5):
            m[4, i] = MISMATCH  # N is identical to nothing, not even N
            m[i, 4] = MISMATCH
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
            f"{MAX_CELLS:,}-cell alignment limit (geneb.tasks.audit.identity.MAX_CELLS)"
        )
    import parasail

    # 16-bit scores first (1.7x faster than trace_scan_sat, which tries 8 bits first and overflows on any row over
    # ~60 letters), 32-bit when they saturate (parasail flags it), as trace_scan_sat does
    result = parasail.sg_dx_trace_scan_16(test, train, GAP_OPEN + GAP_EXTEND, GAP_EXTEND, _matrix())
    if result.saturated:
        result = parasail.sg_dx_trace_scan_32(test, train, GAP_OPEN + GAP_EXTEND, GAP_EXTEND, _matrix())
    tb = result.get_traceback()
    q = np.frombuffer(tb.query.encode("ascii"), dtype=np.uint8)
    r = np.frombuffer(tb.ref.encode("ascii"), dtype=np.uint8)
    letters = np.flatnonzero(q != _GAP)
    q, r = q[letters[0] : letters[-1] + 1], r[letters[0] : letters[-1] + 1]
    matches = int(((q == r) & (q != _N)).sum())
    return matches / len(q), float((r != _GAP).sum()) / len(train)
