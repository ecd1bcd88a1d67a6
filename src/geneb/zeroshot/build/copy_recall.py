"""Copy / recall, kind `paired`: does the model expect a segment it has just read to come again?

`sequence_a` = S + D + S and `sequence_b` = S + D + T, where S and T are real segments of the same length m (drawn
from `segment_length` = [min, max] bases) from two different source sequences and D is `gap` bases of real
background from a third. Both share the prefix S + D, so a model's preference for `a` measures in-context copying
(the "induction" behaviour of language models, Olsson et al. 2022), not the likelihood of the prefix. The gap is
drawn from `gaps` and is the `group`, so that recall can be read against distance. Because S and T come from the
same pool (seeded draws), a model with no copying prefers `a` half the time on average. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from geneb.zeroshot.build.common import Builder, SourceSplit, sequences

_NAME = "copy_recall"
_KIND = "paired"
_DEFAULTS: dict[str, Any] = {"n_rows": 240, "segment_length": [64, 128], "gaps": [16, 64, 128, 256], "label": None}


def _piece(seq: str, length: int, rng: np.random.Generator) -> str:
    start = int(rng.integers(len(seq) - length + 1))
    return seq[start : start + length]


def _build(sources: Sequence[SourceSplit], seed: int, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Rows (sequence_a, sequence_b, group = "gap<d>") and details (per row the source sequence ids of S, D, T).
    The source sequences must be at least as long as the longest segment and gap; ValueError otherwise."""
    rng = np.random.default_rng(seed)
    low, high = (int(v) for v in params["segment_length"])
    gaps = [int(g) for g in params["gaps"]]
    label = None if params.get("label") is None else str(params["label"])
    pool = [(source, row, seq) for source in sources for row, seq in sequences(source, label, max(high, *gaps))]
    if len(pool) < 3:
        raise ValueError(f"{_NAME}: needs 3 or more source sequences of >= {max(high, *gaps)} bases, has {len(pool)}")
    rows: list[dict[str, str]] = []
    drawn: list[list[str]] = []
    while len(rows) < int(params["n_rows"]):
        i, j, g = (int(x) for x in rng.choice(len(pool), size=3, replace=False))
        m = int(rng.integers(low, high + 1))
        gap = gaps[int(rng.integers(len(gaps)))]
        s, t, d = _piece(pool[i][2], m, rng), _piece(pool[j][2], m, rng), _piece(pool[g][2], gap, rng)
        if s == t:
            continue
        rows.append({"sequence_a": s + d + s, "sequence_b": s + d + t, "group": f"gap{gap}"})
        drawn.append([pool[x][0].sequence_id(pool[x][1]) for x in (i, g, j)])
    return pd.DataFrame(rows, columns=["sequence_a", "sequence_b", "group"]), {"segments_s_d_t": drawn}


BUILDER = Builder(_NAME, _KIND, _DEFAULTS, _build)
