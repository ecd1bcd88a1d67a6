"""Run every analysis on one score table and write the result tables and summary.

Run every analysis on one score table and write the result tables (what the Snakemake rules call).

`run_analyses` takes a score table, model and task metadata, optional per-row predictions and the
`analysis:` settings, and returns {table name: frame} plus a JSON-able summary of the headline statistics
with the settings and provenance that made them. `geneb.analysis.run.write_tables` writes them as parquet (atomically).

Write the analysis tables and the summary of one run (what `run.run_analyses` returns) into a tables folder.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import geneb.analysis.controls as controls
import geneb.analysis.inputs as inputs
import geneb.analysis.ranking as lb
import geneb.analysis.registry as registry
import geneb.analysis.stats as stats
import geneb.analysis.tiers as tiers
from geneb import __version__
from geneb.analysis.controls import NO_CLEAN_ROWS
from geneb.analysis.inputs import ProtocolContext, RegimeContext, RunContext, frame_sha256, task_categories, task_matrix
from geneb.analysis.ranking import prepare_cells
from geneb.analysis.registry import LEADERBOARD_TABLES, Analysis
from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.core.provenance import code_revision, package_versions, stable_hash
from geneb.tables.scores import REGIMES, AnalysisInputError, with_code_revision

#: the keys of the `analysis:` section the analyses read; their defaults live in one place, the workflow's
#: config schema (workflow/schemas/config.schema.yaml), which Snakemake applies when it validates the config
_SETTING_KEYS: tuple[str, ...] = (
    "metric",
    "confidence",
    "bootstrap",
    "contamination",
    "scale",
    "matched_pairs",
    "difficulty",
    "recommendation",
    "published",
    "sensitivity",
    "tier_confidence",
    "tier_method",
    "tier_category_blocks",
)


def _merge_settings(base: dict[str, Any], override: dict[str, Any] | None) -> dict[str, Any]:
    """Deep merge: `override` wins key by key; nested dicts are merged, lists and scalars replaced."""
    out = copy.deepcopy(base)
    for k, v in (override or {}).items():
        out[k] = (
            _merge_settings(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
        )
    return out


def resolve_settings(analysis_config: dict[str, Any], view: str = "geneb") -> dict[str, Any]:
    """The effective settings: the config's `analysis:` section as validated against the config schema (which
    fills in every default), with (view "published") the section's `published.scale` overrides on `scale`.

    Raises AnalysisInputError for an unknown view or a section without its defaults (not validated).
    """
    if view not in ("geneb", "published"):
        raise AnalysisInputError(f"view must be 'geneb' or 'published', not {view!r}")
    missing = [k for k in _SETTING_KEYS if k not in (analysis_config or {})]
    if missing:
        raise AnalysisInputError(
            f"analysis settings lack {missing}: pass the config's `analysis:` section validated against "
            "workflow/schemas/config.schema.yaml (snakemake.utils.validate fills in the defaults)"
        )
    s = copy.deepcopy(analysis_config)
    if view == "published":
        s["scale"] = _merge_settings(s["scale"], s["published"].get("scale"))
    return s


def _attach_row_cis(
    used: pd.DataFrame, tag: dict[str, str], complete: pd.DataFrame, rows: np.ndarray, conf: float
) -> None:
    """Overwrite, in place, the CI of the cells of `tag` (protocol, regime) that have row replicates (B, M, T)
    with their percentile interval; ci_source says "paired bootstrap over test rows"."""
    a = (1 - conf) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: cells without predictions
        lo, hi = np.nanquantile(rows, a, axis=0), np.nanquantile(rows, 1 - a, axis=0)
    ci = pd.DataFrame(
        {
            "model": np.repeat(complete.index, complete.shape[1]),
            "task": np.tile(complete.columns, complete.shape[0]),
            "boot_low": lo.ravel(),
            "boot_high": hi.ravel(),
        }
    )
    sel = (used["protocol"] == tag["protocol"]) & (used["regime"] == tag["regime"])
    merged = used.loc[sel, ["model", "task"]].merge(ci, on=["model", "task"], how="left")
    has = merged["boot_high"].notna().to_numpy()
    idx = used.index[sel][has]
    used.loc[idx, "ci_low"] = merged["boot_low"].to_numpy()[has]
    used.loc[idx, "ci_high"] = merged["boot_high"].to_numpy()[has]
    used.loc[idx, "ci_source"] = "paired bootstrap over test rows"


def _reference_view_scores(
    scores: pd.DataFrame, settings: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, str] | None]:
    """(the rows of each model's reference view, every view's rows or None, {model: reference view} or None).

    A table without a `view` column is one view per model: returned as it is, with None, None. Otherwise the
    reference view of each model (`choices.reference_views` under `analysis.sensitivity.reference`) is what the
    leaderboard and every per-cell analysis rank; the other views feed the view analyses (best layer,
    sensitivity). Raises AnalysisInputError when a model has no reference view.
    """
    if "view" not in scores.columns:
        return scores, None, None
    ref = inputs.reference_views(inputs.view_table(scores), settings["sensitivity"]["reference"])
    return inputs.select_views(scores, ref), (scores if inputs.has_views(scores) else None), ref


def _tier_options(settings: dict[str, Any], task_meta: pd.DataFrame | None) -> dict[str, Any]:
    """`tiers.add_tiers`' keyword arguments from the settings (`tier_method`, `tier_category_blocks`) and the task
    catalogue (each task's `source_benchmark`, where the catalogue has that column)."""
    sources = None
    if task_meta is not None and "source_benchmark" in task_meta.columns:
        sources = {str(t): str(v) for t, v in task_meta["source_benchmark"].fillna("").items()}
    return {
        "method": str(settings["tier_method"]),
        "category_blocks": str(settings["tier_category_blocks"]),
        "sources": sources,
    }


def leaderboard_tables(
    scores: pd.DataFrame,
    model_meta: pd.DataFrame,
    task_meta: pd.DataFrame | None,
    settings: dict[str, Any],
    missing: dict[str, str] | None = None,
    *,
    missing_reasons: dict[str, str] | None = None,
    cell_reasons: dict[str, dict[str, str]] | None = None,
    flags: dict[str, dict[str, str]] | None = None,
    exclude_flagged: list[str] | tuple[str, ...] = (),
) -> dict[str, pd.DataFrame]:
    """The leaderboard target's tables: leaderboard, leaderboard_tasks, contamination (see `leaderboard`;
    missing: failed tasks {task: category}, missing_reasons {task: error}, cell_reasons {model: {task: error}} of
    failed cells, flags {task: {kind: reason}} of `task_audit.audit_flags`, exclude_flagged: the kinds ranked
    without); with several views per model, each model's reference view; each row with its margin over the best
    shortcut model (`task_audit.shortcut_margins`: `shortcut_margin`, over the tasks ranked; per task also
    `shortcut_best_model`, `shortcut_best_mcc`); statistically tied tiers at `tier_confidence`
    by `tier_method` over `tier_category_blocks` (`geneb.analysis.tiers.add_tiers`) and their summary, rank_separability."""
    scores = _reference_view_scores(scores, settings)[0]
    used, contaminated = prepare_cells(scores, model_meta, task_meta, settings)
    collapsed = lb.collapsed_cells(scores, settings)  # collapsed fine-tune cells: shown, with why, never ranked
    board = lb.leaderboard(
        used,
        missing,
        missing_reasons=missing_reasons,
        cell_reasons=cell_reasons,
        flags=flags,
        exclude_flagged=exclude_flagged,
        collapsed=collapsed,
    )
    excluded = set(board["excluded_tasks"].str.split(",").explode().dropna()) - {""}
    attrs = dict(board.attrs)
    board, _ = controls.shortcut_margins(
        board, used[~used["task"].isin(excluded)], controls.shortcut_models(model_meta)
    )
    board = tiers.add_tiers(
        board,
        used[~used["task"].isin(excluded)],
        float(settings["tier_confidence"]),
        **_tier_options(settings, task_meta),
    )
    board.attrs = attrs
    _, cells = controls.shortcut_margins(board, used, controls.shortcut_models(model_meta))
    return {
        "leaderboard": board,
        "rank_separability": tiers.rank_separability(board),
        "leaderboard_tasks": lb.task_leaderboard(cells, flags, collapsed),
        "contamination": contaminated,
    }


def clean_leaderboard(
    scores: pd.DataFrame,
    model_meta: pd.DataFrame,
    task_meta: pd.DataFrame | None,
    settings: dict[str, Any],
    missing: dict[str, str] | None = None,
    **kwargs: Any,
) -> pd.DataFrame | None:
    """The leaderboard on the clean test rows (`value_clean`, `ci_*_clean`: the rows without a training homolog,
    geneb.probe.metrics), same rules and columns as `leaderboard_tables`' (`subset` = "clean"; `kwargs`: its keyword
    arguments); None when the score table has no clean values (published results, a table written before the
    audit). A task none of whose cells has a clean value (every test row leaked) counts as missing, listed with
    NO_CLEAN_ROWS: its category is shown but not ranked, and so are the macro and micro rows."""
    if "value_clean" not in scores.columns or not scores["value_clean"].notna().any():
        return None
    clean = scores.assign(value=scores["value_clean"], ci_low=scores["ci_low_clean"], ci_high=scores["ci_high_clean"])
    metric = clean["metric"] == settings["metric"]
    has_clean = clean[metric].groupby("task")["value"].apply(lambda v: v.notna().any())
    none = {
        str(t): str(c) for t, c in clean.loc[metric, ["task", "category"]].drop_duplicates().values if not has_clean[t]
    }
    clean = clean[~(metric & clean["value"].isna())]
    reasons = {**dict.fromkeys(none, NO_CLEAN_ROWS), **(kwargs.pop("missing_reasons", None) or {})}
    board = leaderboard_tables(
        clean, model_meta, task_meta, settings, {**none, **(missing or {})}, missing_reasons=reasons, **kwargs
    )["leaderboard"]
    attrs = dict(board.attrs)
    board = board.assign(subset="clean")
    board.attrs = attrs
    return board


def _regime_context(pctx: ProtocolContext, regime: str) -> RegimeContext:
    """The (protocol, regime)'s matrix and shared replicates; attaches the test-row CIs to the run's cells.

    The test rows are drawn once for every model the run's leaderboard ranks somewhere (a row draw depends on the
    task alone, so a model's replicates do not depend on which others are drawn with it): the replicates of the
    complete models (`replicates`, what most analyses share) and those over each column's ranked models
    (`ranked`, what the rank intervals and the recommendation use: `ranking.ranked_replicates`) are slices of it."""
    run = pctx.run
    matrix = task_matrix(pctx.cells, regime)
    complete = matrix.dropna(how="any")
    rsum: dict[str, Any] = {"n_models": int(matrix.shape[0]), "n_tasks": int(matrix.shape[1])}
    rsum["incomplete_models"] = sorted(set(matrix.index) - set(complete.index))
    ranked = lb.ranked_sets(run.board, pctx.protocol, regime)
    drawn = [m for m in matrix.index if m in complete.index or any(m in s for s in ranked.values())]
    preds = {k: v for k, v in pctx.predictions.items() if k[0] in drawn and k[1] in matrix.columns}
    all_rows = None
    if preds:
        all_rows = stats.row_replicates(
            preds, drawn, list(matrix.columns), regime, n_resamples=run.n_resamples, seed=run.seed
        )
    rows = rep = None
    if all_rows is not None and any(k[0] in complete.index for k in preds):  # the complete models' test rows
        rows = all_rows[:, [drawn.index(m) for m in complete.index]]
    categories = task_categories(pctx.cells)
    resample_tasks = bool(run.settings["bootstrap"]["resample_tasks"])
    if len(complete) >= 2:  # the two-level bootstrap every analysis of the regime shares
        rep = stats.category_replicates(
            complete, categories, rows, n_resamples=run.n_resamples, seed=run.seed, resample_tasks=resample_tasks
        )
    if rows is not None:
        _attach_row_cis(run.used, {"protocol": pctx.protocol, "regime": regime}, complete, rows, run.confidence)
    rsum["rows_resampled"] = rows is not None
    per_column = lb.ranked_replicates(
        matrix.loc[drawn],
        categories,
        all_rows,
        ranked,
        n_resamples=run.n_resamples,
        seed=run.seed,
        resample_tasks=resample_tasks,
    )
    wide = lb.wide_view(run.board, pctx.protocol, regime).drop(columns="micro")
    macro = wide["macro"].dropna()
    if len(macro):
        rsum["top_model"] = str(macro.idxmax())
        rsum["top_macro"] = float(macro.max())
        rsum["mean_macro"] = float(macro.mean())
    return RegimeContext(pctx, regime, matrix, complete, rows, rep, wide, macro, rsum, ranked=per_column)


def _collect(out: dict[str, list[pd.DataFrame]], analysis: Analysis, ctx: Any, tag: dict[str, str]) -> None:
    """Run `analysis` on `ctx` and append its tables, with the scope's `tag` columns, to `out`."""
    for name, frame in analysis.compute(ctx).items():
        if name not in analysis.tables:
            raise AnalysisInputError(f"analysis {analysis.name!r} returned {name!r}, not one of {analysis.tables}")
        out[name].append(frame.assign(**tag))


def run_analyses(
    scores: pd.DataFrame,
    *,
    model_meta: pd.DataFrame,
    task_meta: pd.DataFrame | None,
    declared_pairs: list[dict[str, Any]],
    settings: dict[str, Any],
    predictions_root: str | Path | None = None,
    analyses: tuple[Analysis, ...] | None = None,
    missing: dict[str, str] | None = None,
    missing_reasons: dict[str, str] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Every registered analysis of a validated score table. Returns ({name: frame} for the leaderboard tables
    and every table of `analyses`, summary dict).

    scores: `geneb.tables.scores.check_scores` output; model_meta/task_meta: `metadata` frames (models missing from
    model_meta are analysed but have no parameter count, domain or contamination list); declared_pairs: the
    registry's matched pairs; settings: `resolve_settings` output; predictions_root: `results/predictions`
    (None or a missing folder: no test-row resampling); analyses: default the registry
    (`geneb.analysis.registry`). Regime-scope analyses run per (protocol, regime), protocol-scope ones after
    each protocol's regimes, run-scope ones last. Every random draw derives from settings.bootstrap.seed.
    missing / missing_reasons: a partial run's failed tasks ({task: category}, {task: error};
    `leaderboard.leaderboard`): the run's board shows their categories, macro and micro unranked, and the
    analyses that rank (rank intervals, recommendations) leave those rows out.
    Raises AnalysisInputError for bad settings or inputs.
    """
    s = settings
    conf = float(s["confidence"])
    if not 0 < conf < 1:
        raise AnalysisInputError(f"confidence must be in (0, 1), got {conf}")
    analyses = registry.analyses() if analyses is None else tuple(analyses)
    model_meta = inputs.with_param_count(model_meta, s["scale"]["param_count"])
    all_scores = scores
    scores, view_scores, ref_views = _reference_view_scores(scores, s)
    used, contaminated = prepare_cells(scores, model_meta, task_meta, s)
    collapsed = lb.collapsed_cells(scores, s)  # collapsed fine-tune cells: shown, with why, never ranked
    board = tiers.add_tiers(
        lb.leaderboard(used, missing, missing_reasons=missing_reasons, collapsed=collapsed),
        used,
        s["tier_confidence"],
        **_tier_options(s, task_meta),
    )
    out: dict[str, list[pd.DataFrame]] = {name: [] for name in LEADERBOARD_TABLES}
    out.update({name: [] for a in analyses for name in a.tables})
    out["leaderboard"].append(board)
    out["rank_separability"].append(tiers.rank_separability(board))
    out["leaderboard_tasks"].append(lb.task_leaderboard(used, collapsed=collapsed))
    out["contamination"].append(contaminated)
    has_preds = predictions_root is not None and Path(predictions_root).exists()
    run = RunContext(
        scores,
        model_meta,
        task_meta,
        declared_pairs,
        s,
        used,
        contaminated,
        board,
        view_scores=view_scores,
        predictions_root=Path(predictions_root) if predictions_root is not None and has_preds else None,
    )
    by_scope = {scope: [a for a in analyses if a.scope == scope] for scope in ("regime", "protocol", "run")}
    for protocol in sorted(used["protocol"].unique()):
        pcells = used[used["protocol"] == protocol]
        preds = {}
        if has_preds and predictions_root is not None:
            preds = stats.load_predictions(
                predictions_root, protocol, sorted(pcells["model"].unique()), sorted(pcells["task"].unique())
            )
            if ref_views is not None:
                preds = {k: inputs.select_view(v, ref_views[k[0]]) for k, v in preds.items()}
        pctx = ProtocolContext(run, protocol, pcells, preds)
        for regime in sorted(pcells["regime"].unique(), key=REGIMES.index):
            rctx = _regime_context(pctx, regime)
            for analysis in by_scope["regime"]:
                _collect(out, analysis, rctx, rctx.tag)
            pctx.summary["regimes"][regime] = rctx.summary
        for analysis in by_scope["protocol"]:
            _collect(out, analysis, pctx, {"protocol": protocol})
        run.summary["protocols"][protocol] = pctx.summary
    for analysis in by_scope["run"]:
        _collect(out, analysis, run, {})
    tables = {
        name: (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()) for name, frames in out.items()
    }
    summary = run.summary
    summary.update(
        {
            "settings": s,
            "settings_hash": stable_hash(s),
            "input_sha256": frame_sha256(all_scores),
            "n_contaminated_cells": int(len(contaminated)),
            "geneb_version": __version__,
            **code_revision(),
            "package_versions": package_versions(("numpy", "scipy", "pandas", "pyarrow", "matplotlib", "scikit-learn")),
        }
    )
    return tables, summary


def _jsonable(obj: Any) -> Any:
    """`obj` with numpy scalars as Python numbers, non-finite floats as None and keys as strings (JSON-able)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def write_tables(
    tables: dict[str, pd.DataFrame], summary: dict[str, Any] | None, outdir: str | Path, names: tuple[str, ...]
) -> list[Path]:
    """Write `tables[name]` to `outdir/{name}.parquet` for each of `names` (an absent table is written
    empty), and, when given, the summary to `outdir/analysis_summary.json`.

    A table with rank, rank_low and rank_high is checked first (`ranking.check_rank_intervals`: AnalysisInputError
    naming the protocol, regime, category and model of a rank outside its own interval). Every table gets
    `settings_hash` and `input_sha256` columns (provenance; from the summary, else kept as
    the table has them) and the running code's `geneb_commit` and `geneb_dirty` (`geneb.tables.scores.with_code_revision`).
    Returns the written paths.
    """
    outdir = Path(outdir)
    paths = []
    for name in names:
        df = tables.get(name, pd.DataFrame()).copy()
        if summary is not None:
            df["settings_hash"] = summary["settings_hash"]
            df["input_sha256"] = summary["input_sha256"]
        df = with_code_revision(df)
        lb.check_rank_intervals(df, name)
        path = outdir / f"{name}.parquet"
        integrity.write_parquet(df, path)
        paths.append(path)
    if summary is not None:
        path = outdir / "analysis_summary.json"
        write_text_atomic(path, json.dumps(_jsonable(summary), indent=2, sort_keys=True) + "\n")
        paths.append(path)
    return paths
