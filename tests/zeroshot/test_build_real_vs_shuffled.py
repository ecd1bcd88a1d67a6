"""Real vs shuffled: `a` is a real promoter or enhancer of the source's positives, `b` its dinucleotide shuffle."""

from __future__ import annotations

from shuffle_support import klet_counts

from geneb.zeroshot.build import real_vs_shuffled as rs
from geneb.zeroshot.build.common import read_source_split


def test_pairs_are_real_positives_and_their_dinucleotide_twins(real_tasks):
    sources = [read_source_split(real_tasks, t) for t in ("gue_prom_300_all__devtrain", "ienhancer2l_enhancer_vs_non")]
    rows, details = rs._build(sources, 9, {**rs._DEFAULTS, "n_per_source": 25})
    assert len(rows) == 50 and rows["group"].value_counts().to_dict() == {s.task: 25 for s in sources}
    for source in sources:
        positives = set(source.rows.loc[source.rows["label"] == "1", "sequence"])
        part = rows[rows["group"] == source.task]
        assert set(part["sequence_a"]) <= positives and part["sequence_a"].is_unique
    for a, b in zip(rows["sequence_a"], rows["sequence_b"]):
        assert a != b and klet_counts(a, 2) == klet_counts(b, 2) and a[0] == b[0] and a[-1] == b[-1]
    assert details["skipped_unshufflable"] == {}
