"""Which rows of several bundles may be pooled: the same score-schema version everywhere, and per task the same
task data hash, per (task, regime) the same shot-draw hash, per protocol the same protocol settings (config)
hash. Every other row is named with its bundle, model, task, the field and both values (docs/pooling.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from geneb.pool.bundle import Bundle
from geneb.tables.scores import SCHEMA_VERSION

#: field -> the keys it must agree on across every pooled row (score-schema version: across all rows)
FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("schema_version", ()),
    ("data_hash", ("task",)),
    ("shots_hash", ("task", "regime")),
    ("config_hash", ("protocol",)),
)


@dataclass(frozen=True)
class Mismatch:
    """One (bundle, model, task) whose `field` is `value` where the reference bundle `ref_bundle` has
    `ref_value` for the same key."""

    bundle: str
    model: str
    task: str
    field: str
    value: str
    ref_bundle: str
    ref_value: str

    def __str__(self) -> str:
        return (
            f"{self.bundle}: model {self.model}, task {self.task}: {self.field} {self.value} "
            f"differs from {self.ref_value} in {self.ref_bundle}"
        )


def mismatches(bundles: Sequence[Bundle]) -> list[Mismatch]:
    """Every (bundle, model, task, field) whose value differs from the first bundle's (in the given order) that
    holds the same key, and every row of a score-schema version other than this GENEB's SCHEMA_VERSION (the
    reference then is "this GENEB"). Empty when all rows are comparable."""
    out: list[Mismatch] = []
    for field, keys in FIELDS:
        ref: dict[tuple[str, ...], tuple[str, str]] = {}
        for b in bundles:
            rows = b.scores.assign(**{field: b.scores[field].astype(str)})
            for (model, task, *key, value), _ in rows.groupby(["model", "task", *keys, field], sort=True):
                k = tuple(map(str, key))
                if field == "schema_version":
                    if value != SCHEMA_VERSION:
                        out.append(Mismatch(b.name, model, task, field, value, "this GENEB", SCHEMA_VERSION))
                    continue
                ref_bundle, ref_value = ref.setdefault(k, (b.name, value))
                if value != ref_value:
                    out.append(Mismatch(b.name, model, task, field, value, ref_bundle, ref_value))
    return out


def describe(found: Sequence[Mismatch], limit: int = 20) -> str:
    """The refusal message: each mismatch on its line (the first `limit`, then how many more)."""
    lines = [str(m) for m in found[:limit]]
    if len(found) > limit:
        lines.append(f"... and {len(found) - limit} more")
    return "rows that are not comparable (docs/pooling.md, 'Comparable rows'):\n" + "\n".join(lines)


def cell_frame(scores: pd.DataFrame) -> pd.DataFrame:
    """`scores` with the column `_cell`, the cell key protocol|model|task|regime|view of each row."""
    keys = [c for c in ("protocol", "model", "task", "regime", "view") if c in scores.columns]
    return scores.assign(_cell=scores[keys].astype(str).agg("|".join, axis=1))
