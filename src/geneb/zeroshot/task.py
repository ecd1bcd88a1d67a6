"""What a zero-shot task is: its two kinds, its on-disk folder and the typed object every zero-shot step reads.

A zero-shot task folder holds two files:

* `rows.tsv`: tab-separated with a header, one row per scored item. Row ids are the 0-based data rows in file
  order (the header is not a row). Columns:

  - kind `variant`: `sequence` (the reference window, A/C/G/T/N), `pos` (0-based position of the variant in the
    window), `ref` (one base, must equal `sequence[pos]`), `alt` (one base, different from `ref`), `label`
    (1 = effect, 0 = control), optional `group` (a matched set or a chromosome; metrics are also given by group);
  - kind `paired`: `sequence_a`, `sequence_b` (the model should prefer `a`), optional `group`.

* `meta.json`: `{"kind": "variant" | "paired", "name": ..., "description": ..., "provenance": {...}}`; a
  built task's `provenance` names its builder, seed, source tasks (with their data hashes) and parameters, so a
  scorer can refuse a background drawn from a task the rows were built from.

Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

ZeroShotKind = Literal["variant", "paired"]
ZEROSHOT_KINDS: tuple[ZeroShotKind, ...] = ("variant", "paired")

ROWS_FILE = "rows.tsv"
META_FILE = "meta.json"

VARIANT_COLUMNS: tuple[str, ...] = ("sequence", "pos", "ref", "alt", "label")
PAIRED_COLUMNS: tuple[str, ...] = ("sequence_a", "sequence_b")
GROUP_COLUMN = "group"

REQUIRED_COLUMNS: Mapping[ZeroShotKind, tuple[str, ...]] = {"variant": VARIANT_COLUMNS, "paired": PAIRED_COLUMNS}


@dataclass(frozen=True)
class ZeroShotTask:
    """One validated zero-shot task.

    `rows` has the kind's columns (`REQUIRED_COLUMNS[kind]`, plus `group` when the task has groups) and a
    RangeIndex of row ids (0..n-1, the file's data rows). `data_sha256` is the sha256 of the task's canonical
    rows (what a cached score is keyed on); `source_tasks` names the tasks its rows were built from (empty for a
    user's own set), which a background for a baseline must not include.
    """

    name: str
    kind: ZeroShotKind
    rows: pd.DataFrame
    data_sha256: str
    source_tasks: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_groups(self) -> bool:
        return GROUP_COLUMN in self.rows.columns

    @property
    def n(self) -> int:
        return len(self.rows)
