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
  their difference (full - clean);
* `audit_flags`: which tasks fail the leakage or shortcut audit under the config's `leaderboard:` thresholds
  (LEADERBOARD_KEYS), what the leaderboards mark on every row such a task feeds.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.tables.scores import CELL_KEYS
from geneb.tasks.audit import read_audit
from geneb.tasks.prepare import read_card

SHORTCUT_FAMILY = "shortcut"
#: why a task has no clean value (value_clean NaN in every cell): no test row is left after the homology audit
NO_CLEAN_ROWS = "no clean test rows: every test row has a training homolog/duplicate"
#: the keys of the config's `leaderboard:` section (defaults: workflow/schemas/config.schema.yaml, their one home)
LEADERBOARD_KEYS: tuple[str, ...] = (
    "leakage_max_fraction",
    "shortcut_max_auroc",
    "shortcut_max_mcc",
    "exclude_flagged",
)
#: the audit columns `audit_flags` reads from task_audit.parquet
AUDIT_FLAG_COLUMNS: tuple[str, ...] = (
    "task",
    "leaked_fraction",
    "overlap_exact",
    "overlap_reverse_complement",
    "overlap_homolog",
    "shortcut_best_feature",
    "shortcut_best_auroc",
    "shortcut_flag",
    "shortcut_best_model_full",
    "shortcut_best_mcc_full",
)


class AuditFlagError(ValueError):
    """A `leaderboard:` section or a task audit table `audit_flags` cannot use; the message names key or column."""


def leaderboard_settings(section: dict[str, object] | None) -> dict[str, object]:
    """The config's `leaderboard:` section as validated against the config schema (which fills in every default).
    Raises AuditFlagError naming the missing keys when it was not validated."""
    missing = [k for k in LEADERBOARD_KEYS if k not in (section or {})]
    if missing:
        raise AuditFlagError(
            f"leaderboard settings lack {missing}: pass the config's `leaderboard:` section validated against "
            "workflow/schemas/config.schema.yaml (snakemake.utils.validate fills in the defaults)"
        )
    return dict(section or {})


def audit_flags(audit: pd.DataFrame, settings: dict[str, object]) -> dict[str, dict[str, str]]:
    """{task: {kind: reason}} of the tasks of `audit` (task_audit.parquet, `task_audit_table`) that fail an audit.

    A task fails
    * `leakage` when its leaked fraction (test rows with an exact, reverse-complement or homolog copy in the
      training split: `leaked_fraction`, geneb.tasks.homology) is at least `leakage_max_fraction` (default
      0.02, genomic-benchmarks-qc's `flag_split_data_leakage` fail boundary). A test split wholly inside the
      training split (fraction 1.0) fails at every allowed threshold;
    * `shortcut` when the best single-feature AUROC on the training split (`shortcut_best_auroc`: length, GC, a base
      or dinucleotide frequency) exceeds `shortcut_max_auroc` (default 0.7, genomic-benchmarks-qc's fail boundary)
      and the audit could judge it (`shortcut_flag` not "unknown": at least `task_audit.min_rows_per_class` rows
      per class), or, where `shortcut_max_mcc` is set (default null: no published boundary exists), when the best
      shortcut model's full-regime MCC (`shortcut_best_mcc_full`) reaches it.
    settings: `leaderboard_settings` output. Raises AuditFlagError for a table without the AUDIT_FLAG_COLUMNS.
    """
    s = leaderboard_settings(settings)
    missing = [c for c in AUDIT_FLAG_COLUMNS if c not in audit.columns]
    if missing:
        raise AuditFlagError(f"task audit table: missing columns {missing}; have {list(audit.columns)}")
    leak_max = float(s["leakage_max_fraction"])  # type: ignore[arg-type]
    auroc_max = float(s["shortcut_max_auroc"])  # type: ignore[arg-type]
    mcc_max = None if s["shortcut_max_mcc"] is None else float(s["shortcut_max_mcc"])  # type: ignore[arg-type]
    out: dict[str, dict[str, str]] = {}
    for r in audit.itertuples(index=False):
        kinds: dict[str, str] = {}
        frac = _float(r.leaked_fraction)
        if np.isfinite(frac) and frac >= leak_max:
            kinds["leakage"] = (
                f"{frac:.1%} of test rows have a copy or homolog in the training split (exact {_count(r.overlap_exact)}, "
                f"reverse complement {_count(r.overlap_reverse_complement)}, leaked in all {_count(r.overlap_homolog)}; "
                f"leaderboard.leakage_max_fraction {leak_max:g})"
            )
        auroc = _float(r.shortcut_best_auroc)
        why = []
        if np.isfinite(auroc) and auroc > auroc_max and r.shortcut_flag != "unknown":
            why.append(
                f"{r.shortcut_best_feature} alone separates the training classes (AUROC {auroc:.3f} > "
                f"leaderboard.shortcut_max_auroc {auroc_max:g})"
            )
        mcc = _float(r.shortcut_best_mcc_full)
        if mcc_max is not None and np.isfinite(mcc) and mcc >= mcc_max:
            why.append(
                f"shortcut model {r.shortcut_best_model_full} reaches MCC {mcc:.3f} (full) >= "
                f"leaderboard.shortcut_max_mcc {mcc_max:g}"
            )
        if why:
            kinds["shortcut"] = "; ".join(why)
        if kinds:
            out[str(r.task)] = kinds
    return out


def _float(value: Any) -> float:
    """A table cell as a float, NaN for a missing one (NA, None or NaN)."""
    return float(value) if pd.notna(value) else float("nan")


def read_audit_flags(path: str | Path | None, settings: dict[str, object]) -> dict[str, dict[str, str]]:
    """`audit_flags` of the task audit table at `path` ({} for None: a run without task audits, the published
    view). Raises AuditFlagError when the file is missing or lacks a column."""
    if path is None:
        return {}
    if not Path(path).is_file():
        raise AuditFlagError(f"task audit table {path} not found; run rule task_audit_table first")
    return audit_flags(integrity.read_parquet(path), settings)


def _count(value: object) -> str:
    return "n/a" if value is None or pd.isna(value) else str(int(value))  # type: ignore[call-overload]


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
    audited task, for `protocol`'s scores. Raises AuditFileError (geneb.tasks.audit) for an unreadable audit."""
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
