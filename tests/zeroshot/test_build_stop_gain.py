"""Stop-gain alts create a stop in the ORF's frame and synonymous ones keep the amino acid (Biopython translate)."""

from __future__ import annotations

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


def test_changes_are_stop_gains_or_synonymous_in_frame(built):
    _, rows, _ = built
    assert len(rows) == 80 and set(rows.groupby("group")["label"].sum()) == {2}
    for row in rows.itertuples():
        ref, alt = codons(row)
        assert len(ref) == 3 and row.sequence[row.pos] == row.ref
        before, after = str(Seq(ref).translate()), str(Seq(alt).translate())
        assert before != "*"
        if row.label == 1:
            assert after == "*"
        else:
            assert after == before


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
