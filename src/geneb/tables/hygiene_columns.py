"""Data-hygiene columns of the score table, joined in by aggregation (docs/data-dictionary.md, stage 4).

Per task, from its card: `test_single_class` (a one-class test split kept under
`task_checks.single_class_test: keep`: flagged, left out of category means) and the letter counts of each split
(`{split}_{key}` for `geneb.tasks.validation.LETTER_KEYS`; NA for a card written before they existed). The
per-(model, task) unknown-token counts are the probe rows' own `n_unknown_tokens_{split}` (`geneb.probe.job`).

They come from the cards rather than the probe tables, so probe tables written before these columns existed
stay valid (no schema change, nothing refitted).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from geneb.tasks.card import read_card
from geneb.tasks.validation import LETTER_KEYS

SPLITS = ("train", "test")


def task_columns(cards: list[str | Path]) -> pd.DataFrame:
    """One row per task: `task`, `test_single_class`, `{split}_{letter key}` (nullable Int64)."""
    rows = []
    for path in cards:
        card = read_card(path)
        row: dict[str, object] = {"task": card.task, "test_single_class": card.test_single_class}
        splits = card.as_dict().get("splits") or {}
        for split in SPLITS:
            letters = (splits.get(split) or {}).get("letters") or {}
            row.update({f"{split}_{key}": letters.get(key) for key in LETTER_KEYS})
        rows.append(row)
    df = pd.DataFrame(rows, columns=["task", "test_single_class", *(f"{s}_{k}" for s in SPLITS for k in LETTER_KEYS)])
    return df.astype(dict.fromkeys(df.columns[2:], "Int64")).astype({"test_single_class": bool})


def join_columns(scores: pd.DataFrame, cards: list[str | Path]) -> pd.DataFrame:
    """`scores` with the task columns joined on (rows and their order unchanged)."""
    out = scores.merge(task_columns(cards), on="task", how="left", validate="many_to_one")
    if len(out) != len(scores):
        raise ValueError("hygiene columns: the join changed the number of score rows")
    return out
