"""Real vs shuffled (DART-Eval task 1, Patel et al. 2024): a real regulatory sequence against its k-let-shuffled
twin, kind `paired` (`sequence_a` real, `sequence_b` shuffled).

A model that prefers the real sequence has learnt more than its k-let (default: dinucleotide) composition, which
the shuffle keeps exactly (`geneb.zeroshot.scorers`). Rows: `n_per_source` sequences drawn (seeded, without
replacement) from the label-1 training rows (promoters, enhancers) of each source task, only A/C/G/T, distinct;
`group` = the source task. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from geneb.zeroshot.build.common import Builder, SourceSplit, clean_rows, draw_rows
from geneb.zeroshot.scorers import klet_shuffle

_NAME = "real_vs_shuffled"
_KIND = "paired"
_DEFAULTS: dict[str, Any] = {"n_per_source": 150, "k": 2, "label": "1"}


def _build(sources: Sequence[SourceSplit], seed: int, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rows (sequence_a, sequence_b, group) and details ({"n_rows_per_source": ...}); ValueError when a source has
    too few usable sequences. A shuffle equal to its input (possible only for tiny or repetitive sequences) is
    drawn again from the same generator, up to 100 times, else the sequence is skipped and counted."""
    rng = np.random.default_rng(seed)
    k, n = int(params["k"]), int(params["n_per_source"])
    out = []
    skipped: dict[str, int] = {}
    for source in sources:
        drawn = draw_rows(clean_rows(source, label=str(params["label"]), min_length=k + 2), n, rng, source.task)
        for seq in drawn["sequence"]:
            shuffled = seq
            for _ in range(100):
                shuffled = klet_shuffle(seq, k, rng)
                if shuffled != seq:
                    break
            if shuffled == seq:
                skipped[source.task] = skipped.get(source.task, 0) + 1
                continue
            out.append({"sequence_a": seq, "sequence_b": shuffled, "group": source.task})
    rows = pd.DataFrame(out, columns=["sequence_a", "sequence_b", "group"])
    return rows, {"shuffle_method": "Altschul-Erikson k-let shuffle (Euler path)", "skipped_unshufflable": skipped}


BUILDER = Builder(_NAME, _KIND, _DEFAULTS, _build)
