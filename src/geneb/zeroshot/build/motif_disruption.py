"""Motif disruption, kind `variant`: single-base changes that break a strong transcription-factor motif match in
a real promoter (label 1) against the same change at a matched position of the same promoter far from any match
(label 0).

Motifs: JASPAR CORE vertebrate matrices (Rauluseviciute et al. 2024, NAR 52:D174) through pyjaspar's bundled
database, a fixed list of well-known promoter factors (`DEFAULTS["motif_ids"]`, recorded with the JASPAR release).
Each count matrix becomes a position probability matrix with a pseudocount of 0.2 per base (0.8 per column in all,
Nishida, Frith & Nakai 2009, NAR 37:939) and a log-odds PSSM against a uniform background (Biopython
`Bio.motifs`); a window's score is made relative, (score - min) / (max - min), the TFBS relative score of
Wasserman & Sandelin (2004, Nat. Rev. Genet. 5:276), on both strands.

* effect (label 1): in a strong match (relative score >= `strong`), the column of highest information content
  (at least `min_ic` bits) whose base in the sequence is the matrix's most frequent one; `alt` = the matrix's least
  frequent base at that column (on the match's strand);
* control (label 0): a position of the same sequence with the same trinucleotide (so the same `ref`) and the same
  `alt`, with no match at relative score >= `exclusion` of any listed motif, either strand, within one motif
  length of it; drawn by the seeded generator. An effect with no such control is not used (counted).

One effect per sequence; sequences are visited in a seeded random order until `n_effects` pairs are found;
`group` = the source sequence (`<task>:train:<row>`). Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from geneb.zeroshot.build.common import Builder, SourceSplit, sequences

_NAME = "motif_disruption"
_KIND = "variant"
#: TBP, SP1, NFYA, YY1, CREB1, ELK1, NRF1, USF1 (JASPAR CORE vertebrates)
_MOTIF_IDS = ("MA0108.3", "MA0079.5", "MA0060.4", "MA0095.4", "MA0018.5", "MA0028.3", "MA0506.3", "MA0093.4")
_DEFAULTS: dict[str, Any] = {
    "motif_ids": list(_MOTIF_IDS),
    "n_effects": 150,
    "strong": 0.85,
    "exclusion": 0.80,
    "min_ic": 1.0,
    "pseudocount": 0.2,
    "label": "1",
}
_BASES = "ACGT"


@dataclass(frozen=True)
class StrandMatrix:
    """One motif on one strand: `prob` (4, L) base probabilities in ACGT order along the forward sequence,
    `pssm` the Biopython log-odds matrix of that strand, `low`/`high` its minimum and maximum window score."""

    motif_id: str
    name: str
    strand: str
    prob: np.ndarray
    pssm: Any
    low: float
    high: float

    @property
    def length(self) -> int:
        return int(self.prob.shape[1])

    def relative_scores(self, sequence: str) -> np.ndarray:
        """(len(sequence) - L + 1,) relative scores of every window start."""
        from Bio.Seq import Seq

        raw = np.asarray(self.pssm.calculate(Seq(sequence)), dtype=float).reshape(-1)
        return (raw - self.low) / (self.high - self.low)


def _load_matrices(motif_ids: Sequence[str], pseudocount: float) -> tuple[list[StrandMatrix], dict[str, Any]]:
    """Both strands of each JASPAR matrix (pyjaspar's bundled database) and the record of what was loaded
    (release, pyjaspar version, id -> name). Raises ValueError naming an id the database lacks."""
    from importlib.metadata import version

    from pyjaspar import jaspardb  # type: ignore[import-untyped]

    db = jaspardb()
    out: list[StrandMatrix] = []
    names: dict[str, str] = {}
    for motif_id in motif_ids:
        motif = db.fetch_motif_by_id(motif_id)
        if motif is None:
            raise ValueError(f"motif {motif_id!r} is not in pyjaspar's {db.release}")
        names[motif_id] = str(motif.name)
        pwm = motif.counts.normalize(pseudocounts=pseudocount)
        for strand, matrix in (("+", pwm), ("-", pwm.reverse_complement())):
            pssm = matrix.log_odds()
            prob = np.array([[matrix[b][j] for j in range(matrix.length)] for b in _BASES], dtype=float)
            out.append(StrandMatrix(motif_id, names[motif_id], strand, prob, pssm, float(pssm.min), float(pssm.max)))
    return out, {"jaspar_release": str(db.release), "pyjaspar_version": version("pyjaspar"), "motifs": names}


def _information_content(prob: np.ndarray) -> np.ndarray:
    """(L,) bits per column of a (4, L) probability matrix: 2 + sum p log2 p."""
    return np.asarray(2.0 + (prob * np.log2(prob)).sum(axis=0))


def _effect(seq: str, start: int, m: StrandMatrix, min_ic: float) -> tuple[int, str] | None:
    """(position, alt) of the effect inside the match at `start`, or None when no column qualifies."""
    ic = _information_content(m.prob)
    best = None
    for j in np.argsort(-ic, kind="stable"):
        if ic[j] < min_ic:
            break
        if seq[start + j] == _BASES[int(np.argmax(m.prob[:, j]))]:
            best = int(j)
            break
    if best is None:
        return None
    return start + best, _BASES[int(np.argmin(m.prob[:, best]))]


def _build(sources: Sequence[SourceSplit], seed: int, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rows (sequence, pos, ref, alt, label, group) as pairs (effect, control) and details: the motifs loaded and
    per effect row its motif, strand, match start and relative score. ValueError when fewer than `n_effects` pairs
    can be made."""
    rng = np.random.default_rng(seed)
    matrices, loaded = _load_matrices(params["motif_ids"], float(params["pseudocount"]))
    strong, exclusion, min_ic = float(params["strong"]), float(params["exclusion"]), float(params["min_ic"])
    candidates = [(s, row, seq) for s in sources for row, seq in sequences(s, label=str(params["label"]))]
    order = rng.permutation(len(candidates))
    rows: list[dict[str, Any]] = []
    effects: list[dict[str, Any]] = []
    no_control = 0
    for i in order:
        if len(effects) >= int(params["n_effects"]):
            break
        source, source_row, seq = candidates[int(i)]
        near_match = np.zeros(len(seq), dtype=bool)
        strong_hits: list[tuple[StrandMatrix, int, float]] = []
        for m in matrices:
            if len(seq) < m.length:
                continue
            scores = m.relative_scores(seq)
            for hit in np.nonzero(scores >= exclusion)[0].tolist():
                near_match[max(0, hit - m.length) : hit + 2 * m.length] = True
            strong_hits.extend((m, int(s), float(scores[s])) for s in np.nonzero(scores >= strong)[0])
        if not strong_hits:
            continue
        m, start, score = strong_hits[int(rng.integers(len(strong_hits)))]
        found = _effect(seq, start, m, min_ic)
        if found is None or not 0 < found[0] < len(seq) - 1:
            continue
        pos, alt = found
        context = seq[pos - 1 : pos + 2]
        controls = [p for p in range(1, len(seq) - 1) if not near_match[p] and seq[p - 1 : p + 2] == context]
        if not controls:
            no_control += 1
            continue
        control = controls[int(rng.integers(len(controls)))]
        group = source.sequence_id(source_row)
        effects.append(
            {
                "row": len(rows),
                "motif": m.motif_id,
                "strand": m.strand,
                "start": start,
                "relative_score": round(score, 4),
            }
        )
        for p, label in ((pos, 1), (control, 0)):
            rows.append({"sequence": seq, "pos": p, "ref": seq[p], "alt": alt, "label": label, "group": group})
    if len(effects) < int(params["n_effects"]):
        raise ValueError(f"{_NAME}: found {len(effects)} effect/control pairs, {params['n_effects']} asked for")
    details = {**loaded, "effects": effects, "strong_effects_without_control": no_control}
    return pd.DataFrame(rows, columns=["sequence", "pos", "ref", "alt", "label", "group"]), details


BUILDER = Builder(_NAME, _KIND, _DEFAULTS, _build)
