"""Controls: is the task measuring the model (the task audit), does pretraining help (random-init twins),
and does the probe ranking survive fine-tuning.

Is the task measuring the model? The per-task audit table, the shortcut margins of the leaderboard and the
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

Does pretraining help? Each model against its random-init twin (`geneb.registry.families`: the same architecture,
tokenizer, extraction and probe, seeded random weights), per (model, task) and per category, in every protocol
and regime.

Per task: gain = MCC(model) - MCC(twin), both the seed mean of the score table, with the paired bootstrap over
the task's test rows (`paired.paired_draws`: the same row draws for both cells, Efron & Tibshirani 1993, ch. 13;
the percentile interval and the two-sided bootstrap p-value). The p-values of one (protocol, regime, model) are
Holm-corrected over its tasks (Holm 1979; `statsmodels.stats.multitest.multipletests`), and a task is a
significant win of pretraining when the corrected p < alpha = 1 - confidence and the gain is positive (a loss
when negative).

Per category (and "macro", all tasks): the mean gain over the category's tasks, its interval from a two-level
bootstrap (Davison & Hinkley 1997, sec. 3.8): in each replicate the tasks are drawn with replacement within the
category (`default_rng([seed, 5, crc32(model), crc32(category)])`), then each drawn task's gain is its own
row-bootstrap replicate; a category with one task keeps the row level alone, so its interval is never of zero
width while the rows vary. `n_wins` / `n_losses` of `n_tasks`: the category's tasks won / lost significantly,
`fraction_won` = n_wins / n_tasks.

Without per-row predictions for a cell (a run without `results/predictions`, a cell of several views) the task's
interval and test are NA with the reason in `note`, and so are its category's.

Does the probe ranking survive fine-tuning? Each probe protocol against `finetune-lora` on the same models,
tasks, regimes and shot draws (docs/analyses.md, "Probe vs fine-tune").

Two kinds of rows, per (probe protocol, regime) and per category and "macro" (all tasks):

* `kind = "ranking"`: Kendall's tau-b between the models' probe and fine-tune scores (the mean seed-mean MCC over
  the category's tasks; `scipy.stats.kendalltau`), with a task-bootstrap interval: in each of B replicates the
  category's tasks are drawn with replacement (`default_rng([seed, 7, crc32(protocol), crc32(regime),
  crc32(category)])`), both protocols' category means recomputed on the drawn tasks and tau taken again
  (percentile interval; a category of one task has no task variation: NA with a note). `winner_probe` /
  `winner_finetune`: the top model of each (ties to the first in model order), `winner_changed` whether they differ.
* `kind = "gain"`: each model's fine-tune gain, mean over the category's tasks of MCC(finetune) - MCC(probe), with
  a paired interval: per task the paired bootstrap over its test rows (`paired.paired_draws`, the same row draws
  for both cells), and across the category's tasks the two-level bootstrap of `geneb.analysis.controls`
  (tasks drawn within the category, each drawn task's own row replicate; Davison & Hinkley 1997, sec. 3.8).
  Without per-row predictions the interval is NA with the reason in `note`.

Only models with both protocols on every task of the category are compared (n_models); an empty table when the run
has no finetune-lora rows.

Controls: is the task measuring the model (the task audit: shortcuts, leakage) and does pretraining help (each
model against its random-init twin).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from geneb.analysis.inputs import RunContext, task_categories
from geneb.analysis.stats import paired_draws, read_cell
from geneb.core import integrity
from geneb.tables.scores import CELL_KEYS, REGIMES, AnalysisInputError
from geneb.tasks.audit import read_audit
from geneb.tasks.prepare import read_card

_SHORTCUT_FAMILY = "shortcut"
#: why a task has no clean value (value_clean NaN in every cell): no test row is left after the homology audit
NO_CLEAN_ROWS = "no clean test rows: every test row has a training homolog/duplicate"
#: the keys of the config's `leaderboard:` section (defaults: workflow/schemas/config.schema.yaml, their one home)
_LEADERBOARD_KEYS: tuple[str, ...] = (
    "leakage_max_fraction",
    "shortcut_max_auroc",
    "shortcut_max_mcc",
    "exclude_flagged",
)
#: the audit columns `audit_flags` reads from task_audit.parquet
_AUDIT_FLAG_COLUMNS: tuple[str, ...] = (
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
    missing = [k for k in _LEADERBOARD_KEYS if k not in (section or {})]
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
    missing = [c for c in _AUDIT_FLAG_COLUMNS if c not in audit.columns]
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
    return sorted(model_meta.index[model_meta["architecture_family"] == _SHORTCUT_FAMILY])


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


_PRETRAINING_GAIN_COLUMNS = (
    "protocol",
    "regime",
    "model",
    "twin",
    "level",
    "category",
    "task",
    "n_tasks",
    "mcc_model",
    "mcc_twin",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "p_bootstrap",
    "p_holm",
    "n_wins",
    "n_losses",
    "fraction_won",
    "n_rows",
    "alpha",
    "confidence",
    "n_resamples",
    "seed",
    "note",
)


def _twin_pairs(model_meta: pd.DataFrame, models: list[str]) -> list[tuple[str, str]]:
    """(model, twin) for every twin among `models` whose model is among them too, in `models` order.
    model_meta: the model-metadata frame (`metadata.model_frame`, column `twin_of`)."""
    twin_of = model_meta["twin_of"] if "twin_of" in model_meta.columns else pd.Series(dtype=object)
    return [
        (str(twin_of[m]), m)
        for m in models
        if m in twin_of.index and isinstance(twin_of[m], str) and twin_of[m] in models
    ]


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm-corrected p-values of `p` (n,), NaN kept as NaN and left out of the correction (Holm 1979)."""
    from statsmodels.stats.multitest import multipletests

    out = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


def _reference_view(ctx: RunContext, model: str) -> str | None:
    """The view whose rows the score table ranks for `model` (None for a table without views)."""
    if "view" not in ctx.scores.columns:
        return None
    return str(ctx.scores.loc[ctx.scores["model"] == model, "view"].iloc[0])


def _task_draws(ctx: RunContext, key: dict[str, str], views: dict[str, str | None], task: str, files: dict) -> Any:
    """(PairedDraws of model minus twin on `task`, "") or (None, why not)."""
    if ctx.predictions_root is None:
        return None, "no per-row predictions in this run"
    try:
        a, b = (
            read_cell(
                ctx.predictions_root,
                protocol=key["protocol"],
                model=key[who],
                task=task,
                view=views[who],
                regime=key["regime"],
                cache=files,
            )
            for who in ("model", "twin")
        )
        return paired_draws(a, b, task=task, n_resamples=ctx.n_resamples, seed=ctx.seed), ""
    except AnalysisInputError as err:
        return None, str(err)


def _category_interval(ctx: RunContext, model: str, category: str, draws: list[np.ndarray]) -> tuple[float, float]:
    """The two-level bootstrap interval of the mean gain over a category's tasks (module docstring)."""
    d = np.stack(draws)  # (tasks, B)
    n_tasks, n_draws = d.shape
    if n_tasks > 1:
        rng = np.random.default_rng([ctx.seed, 5, zlib.crc32(model.encode()), zlib.crc32(category.encode())])
        picks = rng.integers(0, n_tasks, size=(n_draws, n_tasks))
        means = d[picks, np.arange(n_draws)[:, None]].mean(axis=1)
    else:
        means = d[0]
    alpha = (1 - ctx.confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def _pair_rows(ctx: RunContext, key: dict[str, str], cells: pd.DataFrame, files: dict) -> list[dict[str, Any]]:
    """The task, category and macro rows of one (protocol, regime, model, twin)."""
    wide = cells.pivot(index="task", columns="model", values="value")
    if not {key["model"], key["twin"]} <= set(wide.columns):
        return []
    wide = wide[[key["model"], key["twin"]]].dropna()
    if wide.empty:
        return []
    cats = task_categories(cells)
    views = {who: _reference_view(ctx, key[who]) for who in ("model", "twin")}
    alpha = _alpha(ctx)
    tasks = []
    for task, (mcc_m, mcc_t) in wide.iterrows():
        d, why = _task_draws(ctx, key, views, str(task), files)
        lo, hi = (1 - ctx.confidence) / 2, 1 - (1 - ctx.confidence) / 2
        tasks.append(
            {
                "level": "task",
                "category": cats[task],
                "task": str(task),
                "n_tasks": 1,
                "mcc_model": float(mcc_m),
                "mcc_twin": float(mcc_t),
                "gain": float(mcc_m - mcc_t),
                "gain_ci_low": float(np.quantile(d.draws, lo)) if d is not None else np.nan,
                "gain_ci_high": float(np.quantile(d.draws, hi)) if d is not None else np.nan,
                "p_bootstrap": float(_p_value(d.draws)) if d is not None else np.nan,
                "n_rows": d.n_rows if d is not None else pd.NA,
                "note": why,
                "_draws": d.draws if d is not None else None,
            }
        )
    p_holm = _holm(np.array([t["p_bootstrap"] for t in tasks]))
    for t, p in zip(tasks, p_holm):
        significant = bool(np.isfinite(p) and p < alpha)
        t.update(
            p_holm=p,
            n_wins=int(significant and t["gain"] > 0) if np.isfinite(p) else pd.NA,
            n_losses=int(significant and t["gain"] < 0) if np.isfinite(p) else pd.NA,
        )
        t["fraction_won"] = float(t["n_wins"]) if np.isfinite(p) else np.nan
    groups = {c: [t for t in tasks if t["category"] == c] for c in sorted({t["category"] for t in tasks})}
    groups["macro"] = tasks
    rows = [{k: v for k, v in t.items() if k != "_draws"} for t in tasks]
    for category, members in groups.items():
        draws = [t["_draws"] for t in members]
        complete = all(d is not None for d in draws)
        lo, hi = _category_interval(ctx, key["model"], category, draws) if complete else (np.nan, np.nan)
        wins = sum(int(t["n_wins"]) for t in members) if complete else pd.NA
        losses = sum(int(t["n_losses"]) for t in members) if complete else pd.NA
        rows.append(
            {
                "level": "macro" if category == "macro" else "category",
                "category": category,
                "task": pd.NA,
                "n_tasks": len(members),
                "mcc_model": float(np.mean([t["mcc_model"] for t in members])),
                "mcc_twin": float(np.mean([t["mcc_twin"] for t in members])),
                "gain": float(np.mean([t["gain"] for t in members])),
                "gain_ci_low": lo,
                "gain_ci_high": hi,
                "p_bootstrap": np.nan,
                "p_holm": np.nan,
                "n_wins": wins,
                "n_losses": losses,
                "fraction_won": wins / len(members) if complete else np.nan,
                "n_rows": pd.NA,
                "note": "" if complete else next(t["note"] for t in members if t["_draws"] is None),
            }
        )
    return rows


def _alpha(ctx: RunContext) -> float:
    """The significance level of the task tests: 1 - confidence (rounded: 1 - 0.95 is not 0.05 in binary)."""
    return round(1 - ctx.confidence, 12)


def _p_value(draws: np.ndarray) -> float:
    from geneb.analysis.stats import bootstrap_p_value

    return float(bootstrap_p_value(draws))


def pretraining_gain_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `pretraining_gain` (module docstring): {"pretraining_gain": one row per (protocol,
    regime, model) and task, category and macro}, empty (the summary's `pretraining_gain.note` says why) for a
    run without a model and its twin. The summary gets, per (protocol, regime), the macro count of significant
    wins and losses (`pretraining_gain.headlines`)."""
    models = sorted(ctx.used["model"].unique())
    pairs = _twin_pairs(ctx.model_meta, models)
    rows: list[dict[str, Any]] = []
    files: dict = {}
    for protocol in sorted(ctx.used["protocol"].unique()):
        for regime in [r for r in REGIMES if r in set(ctx.used["regime"])]:
            cells = ctx.used[(ctx.used["protocol"] == protocol) & (ctx.used["regime"] == regime)]
            for model, twin in pairs:
                key = {"protocol": protocol, "regime": regime, "model": model, "twin": twin}
                rows += [{**key, **r} for r in _pair_rows(ctx, key, cells, files)]
    out = pd.DataFrame(
        rows, columns=[c for c in _PRETRAINING_GAIN_COLUMNS if c not in ("alpha", "confidence", "n_resamples", "seed")]
    )
    out = out.assign(alpha=_alpha(ctx), confidence=ctx.confidence, n_resamples=ctx.n_resamples, seed=ctx.seed)
    out = out[list(_PRETRAINING_GAIN_COLUMNS)]
    for col in ("n_wins", "n_losses", "n_rows"):
        out[col] = out[col].astype("Int64")
    out["task"] = out["task"].astype("string")
    ctx.summary["pretraining_gain"] = _summary(out, len(pairs))
    return {"pretraining_gain": out}


def _summary(table: pd.DataFrame, n_pairs: int) -> dict[str, Any]:
    """The summary block: the count of (model, task) pairs won / lost significantly, per (protocol, regime)."""
    if not n_pairs:
        return {
            "n_pairs": 0,
            "note": "no model of this run has its random-init twin beside it: set `twins: true` (config/twins.yaml)",
        }
    heads = []
    tasks = table[table["level"] == "task"]
    for (protocol, regime), g in tasks.groupby(["protocol", "regime"], sort=True):
        tested = g["p_holm"].notna()
        wins, losses = int(g["n_wins"].fillna(0).sum()), int(g["n_losses"].fillna(0).sum())
        heads.append(
            {
                "protocol": protocol,
                "regime": regime,
                "n_tested": int(tested.sum()),
                "n_pairs": len(g),
                "n_wins": wins,
                "n_losses": losses,
                "sentence": (
                    f"pretraining beats its random-init twin significantly on {wins} of {int(tested.sum())} "
                    f"(model, task) pairs and loses on {losses} ({g['model'].nunique()} models; paired bootstrap "
                    f"over test rows, Holm-corrected per model, alpha {1 - float(g['confidence'].iloc[0]):.2f})"
                ),
            }
        )
    return {"n_pairs": n_pairs, "headlines": heads}


_FINETUNE = "finetune-lora"
_FINETUNE_GAIN_COLUMNS = (
    "probe_protocol",
    "regime",
    "kind",
    "level",
    "category",
    "model",
    "n_models",
    "n_tasks",
    "kendall_tau",
    "tau_ci_low",
    "tau_ci_high",
    "winner_probe",
    "winner_finetune",
    "winner_changed",
    "mcc_probe",
    "mcc_finetune",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "confidence",
    "n_resamples",
    "seed",
    "note",
)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two score vectors (NaN when either is constant)."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(kendalltau(a, b).statistic)


def _tau_interval(ctx: RunContext, probe: pd.DataFrame, ft: pd.DataFrame, seed_key: list[int]) -> tuple[float, float]:
    """Task-bootstrap percentile interval of tau (probe, ft: task x model matrices of one category)."""
    n_tasks = probe.shape[0]
    rng = np.random.default_rng(seed_key)
    picks = rng.integers(0, n_tasks, size=(ctx.n_resamples, n_tasks))
    p, f = probe.to_numpy(), ft.to_numpy()
    taus = np.array([_tau(p[i].mean(axis=0), f[i].mean(axis=0)) for i in picks])
    taus = taus[np.isfinite(taus)]
    if not len(taus):
        return float("nan"), float("nan")
    a = (1 - ctx.confidence) / 2
    return float(np.quantile(taus, a)), float(np.quantile(taus, 1 - a))


def _gain_draws(ctx: RunContext, protocol: str, regime: str, model: str, task: str, files: dict) -> Any:
    """(row-bootstrap draws (B,) of MCC(finetune) - MCC(probe) on `task`, "") or (None, why not)."""
    if ctx.predictions_root is None:
        return None, "no per-row predictions in this run"
    try:
        ft, pr = (
            read_cell(ctx.predictions_root, protocol=p, model=model, task=task, view=None, regime=regime, cache=files)
            for p in (_FINETUNE, protocol)
        )
        return paired_draws(ft, pr, task=task, n_resamples=ctx.n_resamples, seed=ctx.seed).draws, ""
    except AnalysisInputError as err:
        return None, str(err)


def _two_level(ctx: RunContext, draws: list[np.ndarray], key: list[int]) -> tuple[float, float]:
    """The two-level bootstrap interval of the mean over tasks of per-task replicates `draws` (tasks x B)."""
    d = np.stack(draws)
    n_tasks, n_draws = d.shape
    if n_tasks > 1:
        picks = np.random.default_rng(key).integers(0, n_tasks, size=(n_draws, n_tasks))
        means = d[picks, np.arange(n_draws)[:, None]].mean(axis=1)
    else:
        means = d[0]
    a = (1 - ctx.confidence) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def _crc(s: str) -> int:
    return zlib.crc32(s.encode())


def _rows(ctx: RunContext, protocol: str, regime: str, files: dict) -> list[dict[str, Any]]:
    """The ranking and gain rows of one (probe protocol, regime)."""
    used = ctx.used[ctx.used["regime"] == regime]
    probe = used[used["protocol"] == protocol].pivot_table(index="task", columns="model", values="value")
    ft = used[used["protocol"] == _FINETUNE].pivot_table(index="task", columns="model", values="value")
    tasks = sorted(set(probe.index) & set(ft.index))
    models = sorted(set(probe.columns) & set(ft.columns))
    if not tasks or not models:
        return []
    probe, ft = probe.loc[tasks, models], ft.loc[tasks, models]
    cats = used.drop_duplicates("task").set_index("task")["category"]
    groups = {c: [t for t in tasks if cats[t] == c] for c in sorted({cats[t] for t in tasks})}
    groups["macro"] = tasks
    out: list[dict[str, Any]] = []
    for category, members in groups.items():
        keep = [m for m in models if probe.loc[members, m].notna().all() and ft.loc[members, m].notna().all()]
        p, f = probe.loc[members, keep], ft.loc[members, keep]
        pm, fm = p.mean(axis=0), f.mean(axis=0)
        level = "macro" if category == "macro" else "category"
        base = {"probe_protocol": protocol, "regime": regime, "level": level, "category": category}
        key = [ctx.seed, 7, _crc(protocol), _crc(regime), _crc(category)]
        lo, hi = _tau_interval(ctx, p, f, key) if len(members) > 1 and len(keep) > 1 else (np.nan, np.nan)
        note = "" if len(members) > 1 else "one task: no task-bootstrap interval"
        if len(keep) < 2:
            note = "fewer than 2 models with both protocols on every task"
        out.append(
            {
                **base,
                "kind": "ranking",
                "model": pd.NA,
                "n_models": len(keep),
                "n_tasks": len(members),
                "kendall_tau": _tau(pm.to_numpy(), fm.to_numpy()) if len(keep) > 1 else np.nan,
                "tau_ci_low": lo,
                "tau_ci_high": hi,
                "winner_probe": str(pm.idxmax()) if len(keep) else pd.NA,
                "winner_finetune": str(fm.idxmax()) if len(keep) else pd.NA,
                "winner_changed": bool(pm.idxmax() != fm.idxmax()) if len(keep) else pd.NA,
                "note": note,
            }
        )
        for model in keep:
            got = [_gain_draws(ctx, protocol, regime, model, t, files) for t in members]
            complete = all(d is not None for d, _ in got)
            glo, ghi = _two_level(ctx, [d for d, _ in got], [*key, _crc(model)]) if complete else (np.nan, np.nan)
            out.append(
                {
                    **base,
                    "kind": "gain",
                    "model": model,
                    "n_models": len(keep),
                    "n_tasks": len(members),
                    "mcc_probe": float(pm[model]),
                    "mcc_finetune": float(fm[model]),
                    "gain": float(fm[model] - pm[model]),
                    "gain_ci_low": glo,
                    "gain_ci_high": ghi,
                    "note": "" if complete else next(w for d, w in got if d is None),
                }
            )
    return out


def finetune_vs_probe_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `finetune_vs_probe` (module docstring): {"finetune_vs_probe": ranking and gain rows
    per (probe protocol, regime, category | macro)}; empty without finetune-lora rows. The summary gets the macro
    tau and winner change per (probe protocol, regime) (`finetune_vs_probe.headlines`)."""
    protocols = sorted(set(ctx.used["protocol"]) - {_FINETUNE}) if _FINETUNE in set(ctx.used["protocol"]) else []
    rows: list[dict[str, Any]] = []
    files: dict = {}
    for protocol in protocols:
        for regime in [r for r in REGIMES if r in set(ctx.used["regime"])]:
            rows += _rows(ctx, protocol, regime, files)
    out = pd.DataFrame(rows, columns=list(_FINETUNE_GAIN_COLUMNS)).assign(
        confidence=ctx.confidence, n_resamples=ctx.n_resamples, seed=ctx.seed
    )
    for col in ("n_models", "n_tasks"):
        out[col] = out[col].astype("Int64")
    for col in ("model", "winner_probe", "winner_finetune", "note"):
        out[col] = out[col].astype("string")
    out["winner_changed"] = out["winner_changed"].astype("boolean")
    ctx.summary["finetune_vs_probe"] = {
        "headlines": _headlines(out),
        "note": "" if len(out) else "no finetune-lora rows in this run (config/finetune.yaml)",
    }
    return {"finetune_vs_probe": out}


def _headlines(out: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary's macro ranking rows of `finetune_vs_probe` as JSON values: None where a row has no value (no
    model has both protocols on every task, e.g. when collapsed fine-tunes leave every model a task short)."""

    def value(v: Any) -> Any:
        return None if pd.isna(v) else v

    macro = out[(out["kind"] == "ranking") & (out["level"] == "macro")]
    return [
        {
            "probe_protocol": r.probe_protocol,
            "regime": r.regime,
            "kendall_tau": None if pd.isna(r.kendall_tau) else float(r.kendall_tau),
            "winner_probe": value(r.winner_probe),
            "winner_finetune": value(r.winner_finetune),
            "winner_changed": None if pd.isna(r.winner_changed) else bool(r.winner_changed),
            "n_models": int(r.n_models),
            "note": value(r.note),
        }
        for r in macro.itertuples()
    ]
