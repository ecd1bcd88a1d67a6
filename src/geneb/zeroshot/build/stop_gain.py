"""Stop-gain vs matched control, kind `variant`: single-base changes in the longest open reading frame of real
protein-coding transcripts that create a stop codon (label 1), each against a control change of the same
transcript with the same ref>alt at the same codon position (label 0), `per_transcript` pairs per transcript
(`group` = the transcript, `<task>:train:<row>`).

The longest ORF of a transcript is the longest ATG..stop stretch in frame on the given strand (the first ATG
after the previous in-frame stop; `min_orf_codons` codons at least). Only codons strictly between the start and
the stop codon are changed; codons and their translations come from Biopython's standard table
(`Bio.Data.CodonTable.standard_dna_table`, NCBI translation table 1). Each change is a stop-gain, a synonymous or a
missense change.

Matching (so that no model-free feature of the row tells the classes apart: `geneb.zeroshot.shortcuts`): the
transcript's stop-gains are visited in a seeded random order; each takes a control of the same transcript with the
same `ref`, `alt` and codon position, from the first non-empty of four tiers: synonymous with the same
trinucleotide (the bases before and after), missense with the same trinucleotide, synonymous, missense; within the
tier the candidate nearest to the stop-gain (so that the window position and the local composition match too), the
seeded generator breaking ties. The trinucleotide comes before the control's class because it decides CpG status and
local composition; a stop-gain at codon position 2 can only have a missense control (no change of a codon's second
base keeps the amino acid in table 1). A stop-gain with no control left is dropped and counted
(`stop_gains_without_control`); a control is used once. A transcript that gives fewer than `per_transcript` pairs is
skipped (counted), and so is one whose rows repeat rows already drawn (two isoforms sharing a window).

Each row's `sequence` is a window of at most `window` bases around the change that starts in the ORF's frame, so
that the codon of `pos` is `sequence[pos - pos % 3 : pos - pos % 3 + 3]` (meta.json's `reading_frame` is 0).
Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from geneb.zeroshot.build.common import Builder, SourceSplit, sequences

_NAME = "stop_gain"
_KIND = "variant"
#: 2: each stop-gain is matched to a control of the same ref>alt and codon position (1: unmatched synonymous draws)
_VERSION = 2
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


#: a change's class
_STOP, _SYNONYMOUS, _MISSENSE = "stop_gain", "synonymous", "missense"


def _orf_changes(seq: str, orf: tuple[int, int]) -> list[tuple[int, str, str]]:
    """[(position, alt, class)] of every single-base change of the ORF's inner codons, class one of stop_gain,
    synonymous, missense (NCBI table 1), in position then ACGT order."""
    forward, stops = _table()
    changes = []
    for c in range(orf[0] + 3, orf[1] - 3, 3):
        codon = seq[c : c + 3]
        amino = forward[codon]
        for j in range(3):
            for base in "ACGT":
                if base == codon[j]:
                    continue
                new = codon[:j] + base + codon[j + 1 :]
                kind = _STOP if new in stops else _SYNONYMOUS if forward[new] == amino else _MISSENSE
                changes.append((c + j, base, kind))
    return changes


def _context(seq: str, pos: int) -> str:
    """The trinucleotide centred on `pos` (the base before, the base, the base after)."""
    return seq[pos - 1 : pos + 2]


def _match_controls(
    seq: str, orf: tuple[int, int], changes: list[tuple[int, str, str]], k: int, rng: np.random.Generator
) -> tuple[list[tuple[tuple[int, str], tuple[int, str], str, bool]], int]:
    """Up to `k` (stop-gain, control, control class, same trinucleotide) pairs of one transcript (module docstring)
    and the number of stop-gains visited and dropped for want of a control. A change is (position, alt)."""
    pools: dict[tuple[str, str, int], list[tuple[int, str, str]]] = {}
    for pos, alt, kind in changes:
        if kind != _STOP:
            pools.setdefault((seq[pos], alt, (pos - orf[0]) % 3), []).append((pos, alt, kind))
    gains = [(pos, alt) for pos, alt, kind in changes if kind == _STOP]
    used: set[tuple[int, str]] = set()
    pairs: list[tuple[tuple[int, str], tuple[int, str], str, bool]] = []
    dropped = 0
    for g in rng.permutation(len(gains)):
        if len(pairs) == k:
            break
        pos, alt = gains[int(g)]
        pool = [c for c in pools.get((seq[pos], alt, (pos - orf[0]) % 3), []) if (c[0], c[1]) not in used]
        context = _context(seq, pos)
        tiers = (
            [c for c in pool if c[2] == _SYNONYMOUS and _context(seq, c[0]) == context],
            [c for c in pool if c[2] == _MISSENSE and _context(seq, c[0]) == context],
            [c for c in pool if c[2] == _SYNONYMOUS],
            [c for c in pool if c[2] == _MISSENSE],
        )
        tier = next((t for t in tiers if t), None)
        if tier is None:
            dropped += 1
            continue
        nearest = min(abs(c[0] - pos) for c in tier)
        tier = [c for c in tier if abs(c[0] - pos) == nearest]
        control = tier[int(rng.integers(len(tier)))]
        used.add((control[0], control[1]))
        pairs.append(((pos, alt), (control[0], control[1]), control[2], _context(seq, control[0]) == context))
    return pairs, dropped


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
    """Rows (sequence, pos, ref, alt, label, group), per transcript `per_transcript` pairs (stop-gain, its matched
    control), and details: the ORF per group, per pair its rows, control class and whether the trinucleotide
    matched, the counts of controls by class, of dropped stop-gains and of skipped transcripts. Transcripts are
    visited in seeded random order until `n_transcripts` qualify; ValueError when fewer do."""
    rng = np.random.default_rng(seed)
    k, window = int(params["per_transcript"]), int(params["window"])
    _, stops = _table()
    candidates = [(s, row, seq) for s in sources for row, seq in sequences(s, label=str(params["label"]))]
    rows: list[dict[str, Any]] = []
    orfs: dict[str, list[int]] = {}
    pairs: list[dict[str, Any]] = []
    skipped = {"no_orf": 0, "too_few_matched_pairs": 0, "repeats_rows_of_another_transcript": 0}
    seen: set[tuple[str, int, str]] = set()
    dropped = 0
    for i in rng.permutation(len(candidates)):
        if len(orfs) >= int(params["n_transcripts"]):
            break
        source, source_row, seq = candidates[int(i)]
        orf = _longest_orf(seq, stops)
        if orf is None or (orf[1] - orf[0]) // 3 < int(params["min_orf_codons"]):
            skipped["no_orf"] += 1
            continue
        matched, n_dropped = _match_controls(seq, orf, _orf_changes(seq, orf), k, rng)
        dropped += n_dropped
        if len(matched) < k:
            skipped["too_few_matched_pairs"] += 1
            continue
        group = source.sequence_id(source_row)
        new_rows: list[dict[str, Any]] = []
        for (gain, control, kind, same_context), r in zip(matched, range(len(rows), len(rows) + 2 * k, 2)):
            pairs.append({"rows": [r, r + 1], "control": kind, "same_trinucleotide": same_context})
            for (pos, alt), label in ((gain, 1), (control, 0)):
                start, end = _frame_window(len(seq), orf[0], pos, window)
                new_rows.append(
                    {"sequence": seq[start:end], "pos": pos - start, "ref": seq[pos], "alt": alt, "label": label,
                     "group": group}
                )  # fmt: skip
        keys = {(str(r["sequence"]), int(r["pos"]), str(r["alt"])) for r in new_rows}
        if keys & seen:
            skipped["repeats_rows_of_another_transcript"] += 1
            del pairs[-k:]
            continue
        seen |= keys
        orfs[group] = [orf[0], orf[1]]
        rows += new_rows
    if len(orfs) < int(params["n_transcripts"]):
        raise ValueError(f"{_NAME}: {len(orfs)} transcripts qualify, {params['n_transcripts']} asked for")
    details = {
        "codon_table": "NCBI 1 (Bio.Data.CodonTable.standard_dna_table)",
        "builder_version": _VERSION,
        "reading_frame": 0,
        "matching": "same transcript, ref>alt and codon position; tiers: synonymous + trinucleotide, missense + "
        "trinucleotide, synonymous, missense; the nearest in the tier",
        "orfs": orfs,
        "pairs": pairs,
        "controls": {c: sum(p["control"] == c for p in pairs) for c in (_SYNONYMOUS, _MISSENSE)},
        "controls_same_trinucleotide": sum(p["same_trinucleotide"] for p in pairs),
        "stop_gains_without_control": dropped,
        "skipped": skipped,
    }
    return pd.DataFrame(rows, columns=["sequence", "pos", "ref", "alt", "label", "group"]), details


BUILDER = Builder(_NAME, _KIND, _DEFAULTS, _build, version=_VERSION)
