"""Is the task measuring the model? The per-task audit table, the shortcut margins of the leaderboard and the
full-vs-clean differences (docs/analyses.md, "Task audit").

* `task_audit_table` -> `results/tables/task_audit.parquet`, one row per task: the best shortcut model's MCC per
  regime (shortcut models: registry `architecture_family: shortcut`, family `shortcut`), every single-feature AUROC
  with its published flag (genomic-benchmarks-qc: pass <= 0.6 < warning <= 0.7 < fail; unknown under 250 rows per
  class), the card's exact / reverse-complement / case-only overlap counts, the audit's homolog count, leaked
  fraction and flags, and the largest full-vs-clean MCC difference of a non-shortcut model;
* `shortcut_margins`: per (model, task) cell and per leaderboard row, the value minus the best shortcut's value
  (per task the best shortcut MCC; a category's margin is the mean of its task margins, macro the mean of the
  category margins, micro the mean over tasks);
* `clean_differences`: per (protocol, model, task, regime), the seed means of `value` and `value_clean` (MCC) and
  their difference (full - clean).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from geneb.tables.scores import CELL_KEYS
from geneb.tasks.audit_step import read_audit
from geneb.tasks.card import read_card

SHORTCUT_FAMILY = "shortcut"


def shortcut_models(model_meta: pd.DataFrame) -> list[str]:
    """Model ids whose registry `architecture_family` is `shortcut` (index of a `metadata.model_frame`)."""
    if "architecture_family" not in model_meta.columns:
        return []
    return sorted(model_meta.index[model_meta["architecture_family"] == SHORTCUT_FAMILY])


def _best_shortcut(cells: pd.DataFrame, shortcuts: Iterable[str]) -> pd.DataFrame:
    sc = cells[cells["model"].isin(list(shortcuts))]
    if sc.empty:
        return pd.DataFrame(columns=["protocol", "regime", "task", "shortcut_best_model", "shortcut_best_mcc"])
    idx = sc.groupby(["protocol", "regime", "task"], observed=True)["value"].idxmax()
    best = sc.loc[idx, ["protocol", "regime", "task", "model", "value"]]
    return best.rename(columns={"model": "shortcut_best_model", "value": "shortcut_best_mcc"})


def shortcut_margins(
    board: pd.DataFrame, cells: pd.DataFrame, shortcuts: Iterable[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(leaderboard with `shortcut_margin`, cells with `shortcut_best_model`, `shortcut_best_mcc`,
    `shortcut_margin`); NaN margins where no shortcut model scored the task. Rows and order unchanged."""
    best = _best_shortcut(cells, shortcuts)
    c = cells.merge(best, on=["protocol", "regime", "task"], how="left")
    c["shortcut_margin"] = c["value"] - c["shortcut_best_mcc"].astype(float)
    keys = ["protocol", "regime", "model"]
    cat = c.groupby([*keys, "category"], observed=True)["shortcut_margin"].mean().rename("m").reset_index()
    macro = cat.groupby(keys, observed=True)["m"].mean().reset_index().assign(category="macro")
    micro = c.groupby(keys, observed=True)["shortcut_margin"].mean().rename("m").reset_index().assign(category="micro")
    margins = pd.concat([cat, macro, micro], ignore_index=True).rename(columns={"m": "shortcut_margin"})
    out = board.merge(margins, on=[*keys, "category"], how="left")
    return out, c


def clean_differences(scores: pd.DataFrame, metric: str = "MCC") -> pd.DataFrame:
    """Per cell (CELL_KEYS): `value` and `value_clean` seed means of `metric`, `difference` (full - clean),
    `n_test`, `n_test_clean`; sorted by |difference|, largest first. Empty without a `value_clean` column."""
    if "value_clean" not in scores.columns:
        return pd.DataFrame(columns=[*CELL_KEYS, "value", "value_clean", "difference"])
    df = scores[scores["metric"] == metric]
    out = (
        df.groupby(list(CELL_KEYS), observed=True)
        .agg(
            value=("value", "mean"),
            value_clean=("value_clean", "mean"),
            n_test=("n_test", "first"),
            n_test_clean=("n_test_clean", "first"),
        )
        .reset_index()
    )
    out["difference"] = out["value"] - out["value_clean"]
    return out.reindex(out["difference"].abs().sort_values(ascending=False, na_position="last").index).reset_index(
        drop=True
    )


def task_audit_table(
    scores: pd.DataFrame,
    audits: Iterable[str | Path],
    cards: Iterable[str | Path],
    model_meta: pd.DataFrame,
    protocol: str,
) -> pd.DataFrame:
    """`results/tables/task_audit.parquet` (module docstring; columns in docs/data-dictionary.md), one row per
    audited task, for `protocol`'s scores. Raises AuditFileError (geneb.tasks.audit_step) for an unreadable audit."""
    cards_by_task = {c.task: c for c in (read_card(p) for p in cards)}
    shortcuts = shortcut_models(model_meta)
    sc = scores[scores["protocol"] == protocol]
    cells = sc[sc["metric"] == "MCC"].groupby(list(CELL_KEYS), observed=True)["value"].mean().reset_index()
    best = _best_shortcut(cells, shortcuts)
    diffs = clean_differences(sc)
    diffs = diffs[~diffs["model"].isin(shortcuts)]
    rows = []
    for path in audits:
        a = read_audit(path)
        task = a["task"]
        card = cards_by_task.get(task)
        ov = card.overlap if card is not None else None
        row: dict[str, object] = {
            "task": task,
            "category": card.category if card is not None else "",
            "protocol": protocol,
            "n_train": a["n_train"],
            "n_test": a["n_test"],
        }
        for regime in ("full", "10shot", "1shot"):
            b = best[(best["task"] == task) & (best["regime"] == regime)]
            row[f"shortcut_best_model_{regime}"] = b["shortcut_best_model"].iloc[0] if len(b) else None
            row[f"shortcut_best_mcc_{regime}"] = float(b["shortcut_best_mcc"].iloc[0]) if len(b) else np.nan
        row.update(
            {
                "shortcut_best_feature": a["shortcut_best_feature"],
                "shortcut_best_auroc": a["shortcut_best_auroc"],
                "shortcut_flag": a["shortcut_flag"],
                "min_class_rows_train": a["min_class_rows_train"],
            }
        )
        for feature, value in a["shortcut_aurocs"].items():
            row[f"auroc_{feature}"] = np.nan if value is None else float(value)
            row[f"flag_{feature}"] = a["shortcut_flags"][feature]
        row.update(
            {
                "overlap_exact": ov.exact if ov is not None else None,
                "overlap_case_only": ov.case_only if ov is not None else None,
                "overlap_reverse_complement": ov.reverse_complement if ov is not None else None,
                "overlap_homolog": a["leak_n_leaked"],
                "overlap_homolog_mmseqs": a["leak_n_mmseqs_similarity"],
                "leaked_fraction": a["leak_fraction"],
                "leak_flag": a["leak_flag"],
                "audit_fail": bool(a["audit_fail"]),
            }
        )
        d = diffs[(diffs["task"] == task) & diffs["difference"].notna()]
        top = d.iloc[0] if len(d) else None
        row["largest_clean_difference"] = float(top["difference"]) if top is not None else np.nan
        row["largest_clean_difference_model"] = str(top["model"]) if top is not None else None
        row["largest_clean_difference_regime"] = str(top["regime"]) if top is not None else None
        rows.append(row)
    return pd.DataFrame(rows).sort_values("task").reset_index(drop=True)
