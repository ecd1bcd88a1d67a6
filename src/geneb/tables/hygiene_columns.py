"""Data-hygiene columns of the score table, joined in by aggregation (docs/data-dictionary.md, stage 4).

Per task, from its card: `test_single_class` (a one-class test split kept under
`task_checks.single_class_test: keep`: flagged, left out of category means) and the letter counts of each split
(`{split}_{key}` for `geneb.tasks.validation.LETTER_KEYS`; NA for a card written before they existed). The
per-(model, task) unknown-token counts are the probe rows' own `n_unknown_tokens_{split}` (`geneb.probe.job`).

Also per task: the train/test overlap counts of the card (`overlap_exact`, `overlap_case_only`,
`overlap_reverse_complement`, `overlap_label_conflicts`), the test split's missing training classes
(`test_missing_classes`, a comma-separated list, "" when none, with `test_class_note` stating what that does to
AUROC and F1), the rows without a base (`no_base_rows_train`, `no_base_rows_test`) and, from the task audit
(`resources/tasks/{task}/audit.json`), the test rows with a training homolog (`overlap_homolog`) and their
fraction (`leaked_fraction`).

They come from the cards rather than the probe tables, so probe tables written before these columns existed
stay valid (no schema change, nothing refitted).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from geneb.tasks.audit_step import read_audit
from geneb.tasks.card import TaskCard, read_card
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


def class_note(missing: tuple[int, ...], n_classes: int) -> str:
    """What a test split lacking training classes `missing` does to the metrics ("" when it lacks none)."""
    if not missing:
        return ""
    auroc = "AUROC is NaN (undefined)" if n_classes > 2 or len(missing) >= n_classes - 1 else "AUROC is defined"
    return (
        f"test split lacks training class(es) {list(missing)}: {auroc}; macro-F1 counts each missing class 0 under "
        "f1_labels task, and leaves it out under f1_labels present unless a model predicts it; MCC and Acc are "
        "computed on the classes present"
    )


def _overlap_row(card: TaskCard, audit: dict | None) -> dict[str, object]:
    ov = card.overlap
    n_test = card.split("test").n or 0
    leaked = None if audit is None else len(audit.get("leaked_test_rows") or [])
    return {
        "task": card.task,
        "overlap_exact": None if ov is None else ov.exact,
        "overlap_case_only": None if ov is None else ov.case_only,
        "overlap_reverse_complement": None if ov is None else ov.reverse_complement,
        "overlap_label_conflicts": None if ov is None else ov.label_conflicts,
        "overlap_homolog": leaked,
        "leaked_fraction": float("nan") if leaked is None or not n_test else leaked / n_test,
        "test_missing_classes": ",".join(str(c) for c in card.test_missing_classes),
        "test_class_note": class_note(card.test_missing_classes, len(card.classes)),
        "no_base_rows_train": len(card.no_base_rows.get("train", ())),
        "no_base_rows_test": len(card.no_base_rows.get("test", ())),
    }


def overlap_columns(cards: list[str | Path], audits: list[str | Path] | None = None) -> pd.DataFrame:
    """One row per task: the overlap, class and no-base columns (module docstring); `audits` (the audit files of
    the same tasks, any order) fill `overlap_homolog` and `leaked_fraction` (NA without one)."""
    by_task = {}
    for path in audits or []:
        record = read_audit(path)
        by_task[record["task"]] = record
    rows = []
    for path in cards:
        card = read_card(path)
        rows.append(_overlap_row(card, by_task.get(card.task)))
    df = pd.DataFrame(rows)
    ints = ["overlap_exact", "overlap_case_only", "overlap_reverse_complement", "overlap_label_conflicts"]
    return df.astype({**dict.fromkeys([*ints, "overlap_homolog"], "Int64"), "leaked_fraction": float})


def join_columns(scores: pd.DataFrame, cards: list[str | Path], audits: list[str | Path] | None = None) -> pd.DataFrame:
    """`scores` with the task columns joined on (rows and their order unchanged)."""
    out = scores.merge(task_columns(cards), on="task", how="left", validate="many_to_one")
    out = out.merge(overlap_columns(cards, audits), on="task", how="left", validate="many_to_one")
    if len(out) != len(scores):
        raise ValueError("hygiene columns: the join changed the number of score rows")
    return out
