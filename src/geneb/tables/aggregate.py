"""Aggregation: probe tables -> one long-format score table, with its data-hygiene columns.

Data-hygiene columns of the score table, joined in by aggregation (docs/data-dictionary.md, stage 4).

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

Per score row also: `seed_min` / `seed_max`, the range of `value` over the seeds of its (protocol, model, task,
view, regime, metric), beside the tables' own seed mean, sd and Student-t interval (`seed_mean`, `seed_sd`,
`seed_ci_low`, `seed_ci_high`); and the mark of a collapsed fine-tune run, `finetune_status` / `collapse_reason`
(`geneb.tables.collapse.status_columns`, from each fine-tune table's metadata; "" on probe rows).

Aggregation: per-(protocol, model, task) probe tables -> one long-format score table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from geneb.core import integrity
from geneb.tables.collapse import status_columns
from geneb.tables.scores import FAILED_CELLS_ATTR, FAILED_TASKS_ATTR, PROBE_THREADS_ATTR, SCHEMA_VERSION
from geneb.tasks.audit import read_audit
from geneb.tasks.prepare import TaskCard, read_card
from geneb.tasks.validation import LETTER_KEYS

_SPLITS = ("train", "test")


def _task_columns(cards: list[str | Path]) -> pd.DataFrame:
    """One row per task: `task`, `test_single_class`, `{split}_{letter key}` (nullable Int64)."""
    rows = []
    for path in cards:
        card = read_card(path)
        row: dict[str, object] = {"task": card.task, "test_single_class": card.test_single_class}
        splits = card.as_dict().get("splits") or {}
        for split in _SPLITS:
            letters = (splits.get(split) or {}).get("letters") or {}
            row.update({f"{split}_{key}": letters.get(key) for key in LETTER_KEYS})
        rows.append(row)
    df = pd.DataFrame(rows, columns=["task", "test_single_class", *(f"{s}_{k}" for s in _SPLITS for k in LETTER_KEYS)])
    return df.astype(dict.fromkeys(df.columns[2:], "Int64")).astype({"test_single_class": bool})


def _class_note(missing: tuple[int, ...], n_classes: int) -> str:
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
        "test_class_note": _class_note(card.test_missing_classes, len(card.classes)),
        "no_base_rows_train": len(card.no_base_rows.get("train", ())),
        "no_base_rows_test": len(card.no_base_rows.get("test", ())),
    }


def _overlap_columns(cards: list[str | Path], audits: list[str | Path] | None = None) -> pd.DataFrame:
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


def _join_columns(
    scores: pd.DataFrame, cards: list[str | Path], audits: list[str | Path] | None = None
) -> pd.DataFrame:
    """`scores` with the task columns joined on (rows and their order unchanged)."""
    out = scores.merge(_task_columns(cards), on="task", how="left", validate="many_to_one")
    out = out.merge(_overlap_columns(cards, audits), on="task", how="left", validate="many_to_one")
    if len(out) != len(scores):
        raise ValueError("hygiene columns: the join changed the number of score rows")
    return out


def _seed_range(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with `seed_min` / `seed_max`: the lowest and highest `value` over the seeds of each row's
    (protocol, model, task, view, regime, metric); NaN values are skipped (NaN when every seed's is)."""
    keys = [k for k in ("protocol", "model", "task", "view", "regime", "metric") if k in table.columns]
    group = table.groupby(keys, sort=False, observed=True, dropna=False)["value"]
    return table.assign(seed_min=group.transform("min"), seed_max=group.transform("max"))


def _thread_records(frames: list[pd.DataFrame]) -> list[dict]:
    """The distinct thread-pool records (`geneb.tables.scores.PROBE_THREADS_ATTR`) of probe tables, each with
    "files": how many tables carry it, in first-seen order; tables without one (written before it was
    recorded) count in a last {"files": n} entry."""
    seen: dict[str, dict] = {}
    unrecorded = 0
    for df in frames:
        record = df.attrs.get(PROBE_THREADS_ATTR)
        if not record:
            unrecorded += 1
            continue
        key = json.dumps(record, sort_keys=True)
        seen.setdefault(key, {**record, "files": 0})["files"] += 1
    return list(seen.values()) + ([{"files": unrecorded}] if unrecorded else [])


def concat_tables(
    paths: list[str | Path],
    out_path: str | Path,
    *,
    schema_version: str | None = None,
    failures: str | Path | None = None,
    cards: list[str | Path] | None = None,
    audits: list[str | Path] | None = None,
) -> pd.DataFrame:
    """Concatenate parquet tables with one schema into `out_path` (atomically); returns the table.

    schema_version: the version every row must carry (default: the probe tables' current
    `geneb.tables.scores.SCHEMA_VERSION`). Raises ValueError naming the file whose `schema_version` is another
    (or mixed), and the first file whose columns differ from those of the first file of the right version.
    The thread pools the probes ran with go into the metadata as `geneb.tables.scores.PROBE_THREADS_ATTR`
    (`_thread_records`). failures: a partial run's failures file (geneb.run.partial); its failed tasks go into the table's metadata
    (`geneb.tables.scores.FAILED_TASKS_ATTR`), so they are listed, never silently missing. cards: the task cards of
    the tables; when given, the data-hygiene columns are joined on (`geneb.tables.aggregate`), with the
    task audits' homolog counts from `audits`. The failures file's failed (model, task) cells, {model: {task:
    {"category", "error"}}}, go into the metadata as `geneb.tables.scores.FAILED_CELLS_ATTR`: one model failing on
    a task removes only that cell, never the other models' scores of the task.
    """
    if not paths:
        raise ValueError("no probe tables to aggregate")
    if schema_version is None:
        schema_version = SCHEMA_VERSION
    frames = [integrity.read_parquet(p) for p in paths]
    for p, df in zip(paths, frames):
        found = sorted(set(df["schema_version"].astype(str))) if "schema_version" in df.columns else []
        if found != [schema_version]:
            raise ValueError(
                f"{p}: schema_version {found or 'missing'}, expected [{schema_version!r}]; rerun the job that wrote it"
            )
    cols = list(frames[0].columns)
    for p, df in zip(paths, frames):
        if list(df.columns) != cols:
            extra, missing = sorted(set(df.columns) - set(cols)), sorted(set(cols) - set(df.columns))
            raise ValueError(
                f"{p}: columns differ from {paths[0]} (extra {extra}, missing {missing}, or another order)"
            )
    if "metric" in cols:  # score tables (prediction tables carry no metric): the fine-tune runs' marks
        frames = [df.assign(**status_columns(df)) for df in frames]  # assign keeps each table's attrs
    table = pd.concat(frames, ignore_index=True)
    if "metric" in cols and "value" in cols:
        table = _seed_range(table)
    if cards is not None:
        table = _join_columns(table, cards, audits)
    table.attrs = {}
    if any(PROBE_THREADS_ATTR in df.attrs for df in frames):  # probe tables (prediction tables carry none)
        table.attrs[PROBE_THREADS_ATTR] = _thread_records(frames)
    if failures is not None:
        record = json.loads(Path(failures).read_text(encoding="utf-8"))
        table.attrs[FAILED_TASKS_ATTR] = record["failed"]
        table.attrs[FAILED_CELLS_ATTR] = record.get("failed_cells") or {}
    integrity.write_parquet(table, out_path)
    return table
