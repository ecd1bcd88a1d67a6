"""Copy / recall: `a` repeats its first segment after the gap, `b` ends in another real segment of that length."""

from __future__ import annotations

import re

from geneb.zeroshot.build import copy_recall as cr
from geneb.zeroshot.build.common import read_source_split


def test_a_repeats_the_segment_and_b_does_not(real_tasks):
    source = read_source_split(real_tasks, "gb_human_enhancers_cohn__resplit")
    rows, details = cr._build([source], 1, {**cr._DEFAULTS, "n_rows": 30})
    real = list(source.rows["sequence"])
    assert len(rows) == 30 and len(details["segments_s_d_t"]) == 30
    for row, ids in zip(rows.itertuples(), details["segments_s_d_t"]):
        gap = int(re.fullmatch(r"gap(\d+)", row.group).group(1))
        assert gap in cr._DEFAULTS["gaps"]
        m = (len(row.sequence_a) - gap) // 2
        assert 64 <= m <= 128 and len(row.sequence_b) == len(row.sequence_a)
        s, d = row.sequence_a[:m], row.sequence_a[m : m + gap]
        assert row.sequence_a == s + d + s and row.sequence_b[: m + gap] == s + d
        t = row.sequence_b[m + gap :]
        assert t != s and len(set(ids)) == 3
        for piece, sid in ((s, ids[0]), (d, ids[1]), (t, ids[2])):
            assert piece in real[int(sid.rsplit(":", 1)[1])]
