"""Stop-gain vs synonymous, kind `variant`: single-base changes in the longest open reading frame of real
protein-coding transcripts that create a stop codon (label 1) against changes that keep the amino acid
(label 0), `per_transcript` of each per transcript (`group` = the transcript, `<task>:train:<row>`).

The longest ORF of a transcript is the longest ATG..stop stretch in frame on the given strand (the first ATG
after the previous in-frame stop; `min_orf_codons` codons at least). Only codons strictly between the start and
the stop codon are changed; codons and their translations come from Biopython's standard table
(`Bio.Data.CodonTable.standard_dna_table`, NCBI translation table 1). Each row's `sequence` is a window of at most
`window` bases around the change that starts in the ORF's frame, so that the codon of `pos` is
`sequence[pos - pos % 3 : pos - pos % 3 + 3]`. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from geneb.zeroshot.build.common import Builder, SourceSplit, sequences

_NAME = "stop_gain"
_KIND = "variant"
_DEFAULTS: dict[str, Any] = {
    "n_transcripts": 75,
    "per_transcript": 2,
    "window": 512,
    "min_orf_codons": 100,
    "label": "0",  # PreLncData tasks: 0 = protein-coding mRNA, 1 = lncRNA
}


def _table() -> tuple[dict[str, str], frozenset[str]]:
    """(codon -> amino acid, stop codons) of NCBI table 1."""
    from Bio.Data.CodonTable import standard_dna_table

    assert standard_dna_table is not None
    return dict(standard_dna_table.forward_table), frozenset(standard_dna_table.stop_codons)


def _longest_orf(seq: str, stops: frozenset[str]) -> tuple[int, int] | None:
    """(start, end) of the longest ATG..stop ORF in frame on the forward strand, `end` past the stop codon; the
    first (lowest start) of equally long ones; None when there is none."""
    best: tuple[int, int] | None = None
    for frame in range(3):
        start = None
        for i in range(frame, len(seq) - 2, 3):
            codon = seq[i : i + 3]
            if start is None and codon == "ATG":
                start = i
            elif start is not None and codon in stops:
                if (
                    best is None
                    or i + 3 - start > best[1] - best[0]
                    or (i + 3 - start == best[1] - best[0] and start < best[0])
                ):
                    best = (start, i + 3)
                start = None
    return best


def _orf_changes(seq: str, orf: tuple[int, int]) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """([(position, alt)] creating a stop, [(position, alt)] synonymous) over the ORF's inner codons."""
    forward, stops = _table()
    gains, synonymous = [], []
    for c in range(orf[0] + 3, orf[1] - 3, 3):
        codon = seq[c : c + 3]
        amino = forward[codon]
        for j in range(3):
            for base in "ACGT":
                if base == codon[j]:
                    continue
                new = codon[:j] + base + codon[j + 1 :]
                if new in stops:
                    gains.append((c + j, base))
                elif forward[new] == amino:
                    synonymous.append((c + j, base))
    return gains, synonymous


def _frame_window(length: int, orf_start: int, pos: int, window: int) -> tuple[int, int]:
    """[start, end) of a window of at most `window` bases around `pos` in a sequence of `length`, starting in
    the frame of `orf_start` (start % 3 == orf_start % 3)."""
    start = pos - window // 2
    start -= (start - orf_start) % 3
    if start < 0:
        start = orf_start % 3
    end = min(length, start + window)
    if end - start < window:  # near the 3' end: extend back, staying in frame
        back = start - (window - (end - start))
        start = max(orf_start % 3, back + (orf_start - back) % 3)
    return start, end


def _build(sources: Sequence[SourceSplit], seed: int, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rows (sequence, pos, ref, alt, label, group), per transcript `per_transcript` stop-gains then as many
    synonymous changes, and details (ORF per group, transcripts lacking an ORF or enough changes). Transcripts are
    visited in seeded random order until `n_transcripts` qualify; ValueError when fewer do."""
    rng = np.random.default_rng(seed)
    k, window = int(params["per_transcript"]), int(params["window"])
    _, stops = _table()
    candidates = [(s, row, seq) for s in sources for row, seq in sequences(s, label=str(params["label"]))]
    rows: list[dict[str, Any]] = []
    orfs: dict[str, list[int]] = {}
    skipped = {"no_orf": 0, "too_few_changes": 0}
    for i in rng.permutation(len(candidates)):
        if len(orfs) >= int(params["n_transcripts"]):
            break
        source, source_row, seq = candidates[int(i)]
        orf = _longest_orf(seq, stops)
        if orf is None or (orf[1] - orf[0]) // 3 < int(params["min_orf_codons"]):
            skipped["no_orf"] += 1
            continue
        gains, synonymous = _orf_changes(seq, orf)
        if len(gains) < k or len(synonymous) < k:
            skipped["too_few_changes"] += 1
            continue
        group = source.sequence_id(source_row)
        orfs[group] = [orf[0], orf[1]]
        for changes, label in ((gains, 1), (synonymous, 0)):
            for j in np.sort(rng.choice(len(changes), size=k, replace=False)):
                pos, alt = changes[int(j)]
                start, end = _frame_window(len(seq), orf[0], pos, window)
                rows.append(
                    {
                        "sequence": seq[start:end],
                        "pos": pos - start,
                        "ref": seq[pos],
                        "alt": alt,
                        "label": label,
                        "group": group,
                    }
                )
    if len(orfs) < int(params["n_transcripts"]):
        raise ValueError(f"{_NAME}: {len(orfs)} transcripts qualify, {params['n_transcripts']} asked for")
    details = {"codon_table": "NCBI 1 (Bio.Data.CodonTable.standard_dna_table)", "orfs": orfs, "skipped": skipped}
    return pd.DataFrame(rows, columns=["sequence", "pos", "ref", "alt", "label", "group"]), details


BUILDER = Builder(_NAME, _KIND, _DEFAULTS, _build)
