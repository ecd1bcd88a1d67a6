"""Collapsed fine-tune runs: which runs are marked, with what reason, and the columns that carry the mark.

A fine-tune run (one (model, task, regime, seed) cell of `finetune-lora`) is **collapsed** when

* it predicts one class for every test row: its MCC is 0 with a bootstrap interval [0, 0] by definition
  (Chicco & Jurman 2020, BMC Genomics 21:6: MCC is undefined, conventionally 0, for a constant predictor), not a
  measured "no better than chance"; or
* its validation loss (mean cross-entropy of its held-out training rows, `geneb.finetune.train.train_cell`) never
  fell below its first evaluation: training did not learn anything the validation rows reward, and the kept
  tensors are the first epoch's (`CellRecord.val_loss_improved` False). Without a validation split (1-shot) or
  with one evaluation this cannot be told, and only the first rule applies.

A collapsed run keeps its scores (they are what the network did) but is never ranked as one: its (model, task,
regime) cell is left out of every leaderboard value, rank, Borda rank and tier, and of every analysis, and the
leaderboard row it would feed says why (`geneb.analysis.ranking`). The mark travels as two columns of
`results/tables/scores.parquet`, joined on by aggregation from each fine-tune table's metadata
(`FINETUNE_ATTR` cells; `status_columns`), like the data-hygiene columns, so the probe tables keep their schema:
`finetune_status` ("ok" | "collapsed" on fine-tune rows, "" on probe rows) and `collapse_reason` ("" unless
collapsed). docs/protocols.md, "finetune-lora"; docs/data-dictionary.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

#: parquet metadata key of a fine-tune score table: {"recipe", "recipe_hash", "key_hash", "cells": [...],
#: "failed": [...]} (geneb.finetune.job)
FINETUNE_ATTR = "geneb_finetune"
OK = "ok"
COLLAPSED = "collapsed"
#: the columns aggregation adds to the score table (module docstring)
STATUS_COLUMNS: tuple[str, ...] = ("finetune_status", "collapse_reason")


def run_status(y_pred: np.ndarray, classes: np.ndarray, val_loss_improved: bool | None, **losses: float) -> dict:
    """The mark of one fine-tune run: {"status": OK | COLLAPSED, "collapse_reason": "" or why}.

    y_pred: the run's predicted labels on the test split (n,); classes: the task's classes (K,);
    val_loss_improved: `CellRecord.val_loss_improved` (None: not known); losses: `first_val_loss` and
    `best_val_loss` (nats), quoted in the reason. Raises ValueError for an empty prediction vector."""
    y = np.asarray(y_pred)
    if y.size == 0:
        raise ValueError("a fine-tune run with no test predictions cannot be marked")
    reasons = []
    predicted = np.unique(y)
    if len(predicted) < 2:
        reasons.append(
            f"predicted one class ({predicted[0]!s}) for all {y.size} test rows (of classes "
            f"{[str(c) for c in np.asarray(classes).tolist()]}): MCC 0 by definition"
        )
    if val_loss_improved is False:
        first, best = losses.get("first_val_loss", np.nan), losses.get("best_val_loss", np.nan)
        reasons.append(
            f"validation loss never fell below its first evaluation ({first:.4f}; lowest later {best:.4f} nats)"
        )
    return {"status": COLLAPSED if reasons else OK, "collapse_reason": "; ".join(reasons)}


def _record_status(cell: dict[str, Any]) -> tuple[str, str] | None:
    """(status, reason) recorded in a fine-tune table's cell record, None when the table predates the mark."""
    if "status" not in cell:
        return None
    return str(cell["status"]), str(cell.get("collapse_reason") or "")


def status_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """STATUS_COLUMNS for every row of one per-(protocol, model, task) score table, rows in order.

    A fine-tune table (its attrs carry FINETUNE_ATTR) gets each run's recorded mark by (regime, seed); a run
    whose record has none (a table written before the mark) is marked from its `degenerate_predictions` column
    alone, the reason saying that its validation loss was not recorded. Any other table gets "" in both."""
    meta = frame.attrs.get(FINETUNE_ATTR)
    if not meta:
        return pd.DataFrame({c: [""] * len(frame) for c in STATUS_COLUMNS}, index=frame.index)
    marks = {}
    for cell in meta.get("cells") or []:
        got = _record_status(cell)
        if got is not None:
            marks[(str(cell["regime"]), int(cell["seed"]))] = got
    status, reason = [], []
    degenerate = frame["degenerate_predictions"] if "degenerate_predictions" in frame else pd.Series(False, frame.index)
    for regime, seed, one_class in zip(frame["regime"], frame["seed"], degenerate.fillna(False).astype(bool)):
        got = marks.get((str(regime), int(seed)))
        if got is None:
            got = (
                (COLLAPSED, "predicted one class for every test row (validation loss not recorded)")
                if one_class
                else (OK, "")
            )
        status.append(got[0])
        reason.append(got[1])
    return pd.DataFrame({"finetune_status": status, "collapse_reason": reason}, index=frame.index)


def collapsed_cells(scores: pd.DataFrame, keys: Iterable[str]) -> pd.DataFrame:
    """The cells (one row per `keys`, e.g. protocol, model, task, category, regime) with a collapsed run:
    `keys` + `collapse_reason` ("seed <s>: <reason>" per collapsed seed, "; "-joined) + `n_collapsed` (runs).
    Empty (those columns) when `scores` has no `finetune_status` column or nothing collapsed."""
    keys = list(keys)
    if "finetune_status" not in scores.columns:
        return pd.DataFrame(columns=[*keys, "collapse_reason", "n_collapsed"])
    bad = scores[scores["finetune_status"] == COLLAPSED].drop_duplicates([*keys, "seed"])
    rows = []
    for key, g in bad.groupby(keys, sort=True, observed=True):
        g = g.sort_values("seed")
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                "collapse_reason": "; ".join(f"seed {int(s)}: {r}" for s, r in zip(g["seed"], g["collapse_reason"])),
                "n_collapsed": len(g),
            }
        )
    return pd.DataFrame(rows, columns=[*keys, "collapse_reason", "n_collapsed"])
