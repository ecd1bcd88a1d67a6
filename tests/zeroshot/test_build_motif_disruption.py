"""Motif effects sit at informative columns of strong JASPAR matches; their controls are far from any match."""

from __future__ import annotations

import numpy as np
import pytest

from geneb.zeroshot.build import motif_disruption as md
from geneb.zeroshot.build.common import read_source_split


@pytest.fixture(scope="module")
def built(real_tasks):
    source = read_source_split(real_tasks, "gue_prom_300_tata")
    params = {**md._DEFAULTS, "n_effects": 40}
    rows, details = md._build([source], 4, params)
    matrices, _ = md._load_matrices(params["motif_ids"], params["pseudocount"])
    return source, rows, details, matrices, params


def test_rows_come_in_effect_control_pairs_of_one_sequence_and_context(built):
    source, rows, details, _, _ = built
    assert len(rows) == 80 and rows["label"].tolist() == [1, 0] * 40
    sequences = set(source.rows["sequence"])
    for effect, control in zip(rows.iloc[0::2].itertuples(), rows.iloc[1::2].itertuples()):
        assert effect.sequence == control.sequence and effect.group == control.group
        assert effect.sequence in sequences
        assert effect.alt == control.alt and effect.ref == control.ref
        seq = effect.sequence
        assert seq[effect.pos - 1 : effect.pos + 2] == seq[control.pos - 1 : control.pos + 2]
        assert seq[effect.pos] == effect.ref
    assert details["jaspar_release"].startswith("JASPAR") and set(details["motifs"]) == set(md._MOTIF_IDS)


def test_effects_are_inside_strong_matches_and_alt_is_the_rarest_base(built):
    _, rows, details, matrices, params = built
    by_id = {(m.motif_id, m.strand): m for m in matrices}
    for effect, record in zip(rows.iloc[0::2].itertuples(), details["effects"]):
        m = by_id[(record["motif"], record["strand"])]
        start = record["start"]
        assert start <= effect.pos < start + m.length
        score = m.relative_scores(effect.sequence)[start]
        assert score >= params["strong"] and score == pytest.approx(record["relative_score"], abs=1e-4)
        column = m.prob[:, effect.pos - start]
        assert effect.alt == "ACGT"[int(np.argmin(column))] and effect.ref == "ACGT"[int(np.argmax(column))]
        assert md._information_content(m.prob)[effect.pos - start] >= params["min_ic"]


def test_controls_have_no_match_within_a_motif_length(built):
    _, rows, _, matrices, params = built
    for control in rows.iloc[1::2].itertuples():
        for m in matrices:
            scores = m.relative_scores(control.sequence)
            starts = np.nonzero(scores >= params["exclusion"])[0]
            assert not any(s - m.length <= control.pos < s + 2 * m.length for s in starts), (m.motif_id, control.pos)
