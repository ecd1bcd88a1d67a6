"""Stop-gain alts create a stop in the ORF's frame, each matched to a control of the same transcript with the same
ref>alt at the same codon position that does not (Biopython translate), preferring the same trinucleotide."""

from __future__ import annotations

import numpy as np
import pytest
from Bio.Seq import Seq

from geneb.zeroshot.build import stop_gain as sg
from geneb.zeroshot.build.common import read_source_split


@pytest.fixture(scope="module")
def built(real_tasks):
    source = read_source_split(real_tasks, "prelnc_ath_lncrna_vs_mrna__resplit")
    rows, details = sg._build([source], 2, {**sg._DEFAULTS, "n_transcripts": 20})
    return source, rows, details


def codons(row):
    start = row.pos - row.pos % 3
    ref = row.sequence[start : start + 3]
    alt = ref[: row.pos % 3] + row.alt + ref[row.pos % 3 + 1 :]
    return ref, alt


def test_changes_are_stop_gains_or_their_controls_in_frame(built):
    _, rows, details = built
    assert len(rows) == 80 and set(rows.groupby("group")["label"].sum()) == {2}
    kinds = {}
    for pair in details["pairs"]:
        kinds[pair["rows"][1]] = pair["control"]
    for row in rows.itertuples():
        ref, alt = codons(row)
        assert len(ref) == 3 and row.sequence[row.pos] == row.ref
        before, after = str(Seq(ref).translate()), str(Seq(alt).translate())
        assert before != "*"
        if row.label == 1:
            assert after == "*"
        else:
            assert after != "*" and (after == before) == (kinds[row.Index] == "synonymous")


def test_each_stop_gain_has_a_control_with_its_substitution_and_codon_position(built):
    _, rows, details = built
    assert details["stop_gains_without_control"] >= 0 and len(details["pairs"]) == 40
    assert details["controls"]["synonymous"] + details["controls"]["missense"] == 40
    for pair in details["pairs"]:
        gain, control = rows.iloc[pair["rows"][0]], rows.iloc[pair["rows"][1]]
        assert (gain.label, control.label) == (1, 0) and gain.group == control.group
        assert (gain.ref, gain.alt, gain.pos % 3) == (control.ref, control.alt, control.pos % 3)
        context = gain.sequence[gain.pos - 1 : gain.pos + 2] == control.sequence[control.pos - 1 : control.pos + 2]
        assert context == pair["same_trinucleotide"]
    # the trinucleotide where the transcript has one: most pairs
    assert details["controls_same_trinucleotide"] > len(details["pairs"]) / 2


def test_a_stop_gain_takes_the_nearest_control_of_the_best_tier():
    # ORF ATG | TGG (Trp) | CAA (Gln) | TTA (Leu) | CTA (Leu) | TAA: TGG>TAG/TGA, CAA>TAA, TTA>TAA/TGA make stops;
    # CAA's C>T at codon position 0 has only missense controls with its ref>alt (CTA>TTA keeps Leu: synonymous)
    seq = "ATGTGGCAATTACTATAA"
    changes = sg._orf_changes(seq, (0, len(seq)))
    assert {(p, a) for p, a, k in changes if k == "stop_gain"} == {(4, "A"), (5, "A"), (6, "T"), (10, "A"), (10, "G")}
    pairs, dropped = sg._match_controls(seq, (0, len(seq)), changes, 5, np.random.default_rng(0))
    by_gain = {g: (c, kind, same) for g, c, kind, same in pairs}
    assert by_gain[(6, "T")] == ((12, "T"), "synonymous", False)  # CTA>TTA: the only C>T at codon position 0
    assert dropped == len([g for g in [(4, "A"), (5, "A"), (6, "T"), (10, "A"), (10, "G")] if g not in by_gain])
    for (pos, alt), (cpos, calt), _, _ in pairs:
        assert (seq[pos], alt, pos % 3) == (seq[cpos], calt, cpos % 3)


def test_windows_sit_in_the_longest_orf_of_a_real_mrna(built):
    source, rows, details = built
    by_row = dict(zip(source.rows["row"], source.rows["sequence"]))
    mrna = dict(zip(source.rows["row"], source.rows["label"]))
    for row in rows.itertuples():
        source_row = int(row.group.rsplit(":", 1)[1])
        transcript = by_row[source_row]
        assert mrna[source_row] == "0"  # PreLncData: 0 = protein-coding
        orf_start, orf_end = details["orfs"][row.group]
        protein = str(Seq(transcript[orf_start:orf_end]).translate())
        assert protein.startswith("M") and protein.endswith("*") and protein.count("*") == 1
        offset = transcript.find(row.sequence)
        assert offset >= 0 and (offset - orf_start) % 3 == 0
        assert orf_start + 3 <= offset + row.pos < orf_end - 3
        assert len(row.sequence) <= sg._DEFAULTS["window"]


def test_no_longer_orf_exists(built):
    source, _, details = built
    by_row = dict(zip(source.rows["row"], source.rows["sequence"]))
    for group, (start, end) in details["orfs"].items():
        transcript = by_row[int(group.rsplit(":", 1)[1])]
        for frame in range(3):
            protein = str(Seq(transcript[frame : len(transcript) - (len(transcript) - frame) % 3]).translate())
            for piece in protein.split("*")[:-1]:  # stretches closed by a stop
                if "M" in piece:
                    assert 3 * (len(piece) - piece.index("M") + 1) <= end - start
