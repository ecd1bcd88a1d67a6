"""Run every analysis on one score table and write the result tables (what the Snakemake rules call).

`run_analyses` takes a score table, model and task metadata, optional per-row predictions and the
`analysis:` settings, and returns {table name: frame} plus a JSON-able summary of the headline statistics
with the settings and provenance that made them. `write_tables` writes them as parquet (atomically).
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb import __version__
from geneb.analysis import bootstrap, contamination, difficulty, fewshot, pairs, ranks, recommend, scale
from geneb.analysis import leaderboard as lb
from geneb.analysis.metadata import entries
from geneb.analysis.outputs import ANALYSIS_TABLES, LEADERBOARD_TABLES
from geneb.analysis.tables import cell_scores, frame_sha256, task_categories, task_matrix
from geneb.atomic import atomic_path, write_text_atomic
from geneb.provenance import package_versions, stable_hash
from geneb.scores import CELL_KEYS, REGIMES, AnalysisInputError

log = logging.getLogger(__name__)

#: defaults of the `analysis:` config section (workflow/schemas/config.schema.yaml mirrors them; a test
#: checks that the two agree)
DEFAULTS: dict[str, Any] = {
    "metric": "MCC",
    "confidence": 0.95,
    "bootstrap": {"n_resamples": 1000, "seed": 20260604, "resample_tasks": True},
    "contamination": "exclude",
    "scale": {
        "reversal_ratio": 5.0,
        "rho_exclusions": [],
        "in_domain": {"exclude_domains": ["prokaryote", "metagenome", "virus"], "exclude_models": []},
    },
    "matched_pairs": {"derive": True, "max_params_ratio": 2.0, "alpha": 0.05, "min_tasks_without_rows": 5},
    "difficulty": {"near_random_mcc": 0.1, "high_variance_quantile": 0.75},
    "recommendation": {"tie_rule": "overlap"},
    "published": {
        "dir": "../shared/reference/geneb_paper",
        "registry": "../shared/reference/registry.yaml",
        "scale": {},
    },
    "submission": {"submitted_by": ""},
}

TABLES: tuple[str, ...] = LEADERBOARD_TABLES + ANALYSIS_TABLES


def merge_settings(base: dict[str, Any], override: dict[str, Any] | None) -> dict[str, Any]:
    """Deep merge: `override` wins key by key; nested dicts are merged, lists and scalars replaced."""
    out = copy.deepcopy(base)
    for k, v in (override or {}).items():
        out[k] = merge_settings(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def resolve_settings(analysis_config: dict[str, Any] | None, view: str = "geneb") -> dict[str, Any]:
    """The effective settings: DEFAULTS, then the config's `analysis:` section, then (view "published") the
    section's `published.scale` overrides on `scale`. Raises AnalysisInputError for an unknown view."""
    if view not in ("geneb", "published"):
        raise AnalysisInputError(f"view must be 'geneb' or 'published', not {view!r}")
    s = merge_settings(DEFAULTS, analysis_config)
    if view == "published":
        s["scale"] = merge_settings(s["scale"], s["published"].get("scale"))
    return s


def _cell_cis(cells: pd.DataFrame, scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Attach the score table's per-cell CI (mean over seeds of ci_low/ci_high) where it has one."""
    out = cells.copy()
    if {"ci_low", "ci_high"} <= set(scores.columns):
        ci = scores[scores["metric"] == metric].groupby(list(CELL_KEYS), observed=True)[["ci_low", "ci_high"]].mean()
        out = out.merge(ci.reset_index(), on=list(CELL_KEYS), how="left")
    else:
        out["ci_low"] = out["ci_high"] = np.nan
    out["ci_source"] = np.where(out["ci_high"].notna(), "score table (seed mean of per-seed CIs)", "none")
    return out


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


def prepare_cells(
    scores: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None, settings: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed-mean cells of the configured metric, contamination applied: (cells used, contaminated cells)."""
    cells = contamination.flag_contamination(cell_scores(scores, metric=settings["metric"]), model_meta, task_meta)
    used, contaminated = contamination.apply_policy(cells, settings["contamination"])
    return _cell_cis(used, scores, settings["metric"]), contaminated


def leaderboard_tables(
    scores: pd.DataFrame, model_meta: pd.DataFrame, task_meta: pd.DataFrame | None, settings: dict[str, Any]
) -> dict[str, pd.DataFrame]:
    """The leaderboard target's tables: leaderboard, leaderboard_tasks, contamination (see `leaderboard`)."""
    used, contaminated = prepare_cells(scores, model_meta, task_meta, settings)
    return {
        "leaderboard": lb.leaderboard(used),
        "leaderboard_tasks": lb.task_leaderboard(used),
        "contamination": contaminated,
    }


def models_table(model_meta: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The metadata of `models` as analysed (a model missing from the registry keeps its id as display name
    and unknown fields); `trained_on_tasks` joined with ';'."""
    rows = []
    for m in models:
        r = model_meta.loc[m].to_dict() if m in model_meta.index else {"display": m}
        r["trained_on_tasks"] = ";".join(r.get("trained_on_tasks", ()) or ())
        rows.append({"model": m, **r})
    return pd.DataFrame(rows)


def run_analyses(
    scores: pd.DataFrame,
    *,
    model_meta: pd.DataFrame,
    task_meta: pd.DataFrame | None,
    declared_pairs: list[dict[str, Any]],
    settings: dict[str, Any],
    predictions_root: str | Path | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """All analyses of a validated score table. Returns ({name: frame} for TABLES, summary dict).

    scores: `geneb.scores.check_scores` output; model_meta/task_meta: `metadata` frames (models missing from
    model_meta are analysed but have no parameter count, domain or contamination list); declared_pairs: the
    registry's matched pairs; settings: `resolve_settings` output; predictions_root: `results/predictions`
    (None or a missing folder: no test-row resampling). Every random draw derives from
    settings.bootstrap.seed. Raises AnalysisInputError for bad settings or inputs.
    """
    s = settings
    conf = float(s["confidence"])
    if not 0 < conf < 1:
        raise AnalysisInputError(f"confidence must be in (0, 1), got {conf}")
    boot = s["bootstrap"]
    n_b, seed = int(boot["n_resamples"]), int(boot["seed"])
    used, contaminated = prepare_cells(scores, model_meta, task_meta, s)
    board = lb.leaderboard(used)
    out: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLES}
    out["leaderboard"].append(board)
    out["leaderboard_tasks"].append(lb.task_leaderboard(used))
    out["contamination"].append(contaminated)
    out["models"].append(models_table(model_meta, sorted(scores["model"].unique())))
    summary: dict[str, Any] = {"protocols": {}}
    scale_s = s["scale"]
    exclusions = entries(scale_s["rho_exclusions"], "analysis.scale.rho_exclusions")
    ood_models = entries(scale_s["in_domain"]["exclude_models"], "analysis.scale.in_domain.exclude_models")
    derived = []
    for protocol in sorted(used["protocol"].unique()):
        psum: dict[str, Any] = {"regimes": {}}
        pcells = used[used["protocol"] == protocol]
        protocol_preds = {}
        if predictions_root is not None and Path(predictions_root).exists():
            protocol_preds = bootstrap.load_predictions(
                predictions_root, protocol, sorted(pcells["model"].unique()), sorted(pcells["task"].unique())
            )
        if s["matched_pairs"]["derive"]:
            derived = pairs.derive_pairs(
                model_meta, sorted(pcells["model"].unique()), float(s["matched_pairs"]["max_params_ratio"])
            )
        declared_ids = {tuple(sorted(p["models"])) for p in declared_pairs}
        all_pairs = [dict(p, source=p.get("source", "declared")) for p in declared_pairs]
        all_pairs += [p for p in derived if tuple(p["models"]) not in declared_ids]
        psum["matched_pairs_considered"] = len(all_pairs)
        for regime in sorted(pcells["regime"].unique(), key=REGIMES.index):
            rsum: dict[str, Any] = {}
            matrix = task_matrix(pcells, regime)
            complete = matrix.dropna(how="any")
            rsum["n_models"], rsum["n_tasks"] = int(matrix.shape[0]), int(matrix.shape[1])
            rsum["incomplete_models"] = sorted(set(matrix.index) - set(complete.index))
            tag = {"protocol": protocol, "regime": regime}
            rows = None
            preds = {k: v for k, v in protocol_preds.items() if k[0] in complete.index and k[1] in complete.columns}
            if len(complete) and preds:
                rows = bootstrap.row_replicates(
                    preds, list(complete.index), list(complete.columns), regime, n_resamples=n_b, seed=seed
                )
                _attach_row_cis(used, tag, complete, rows, conf)
            rsum["rows_resampled"] = rows is not None
            if len(complete) >= 2:
                rep = bootstrap.category_replicates(
                    complete,
                    task_categories(pcells),
                    rows,
                    n_resamples=n_b,
                    seed=seed,
                    resample_tasks=bool(boot["resample_tasks"]),
                )
                out["rank_intervals"].append(ranks.rank_intervals(rep, conf).assign(**tag))
                mp = s["matched_pairs"]
                eff = pairs.pair_effects(
                    rep,
                    all_pairs,
                    confidence=conf,
                    alpha=float(mp["alpha"]),
                    min_tasks_without_rows=int(mp["min_tasks_without_rows"]),
                )
                out["matched_pairs"].append(eff.assign(**tag))
                rsum["matched_pairs_tested"] = int(eff["tested"].sum()) if len(eff) else 0
                rsum["matched_pairs_significant"] = int(eff["significant"].sum()) if len(eff) else 0
                out["recommendations"].append(
                    recommend.recommend(rep, confidence=conf, tie_rule=s["recommendation"]["tie_rule"]).assign(**tag)
                )
            wide = lb.wide_view(board, protocol, regime).drop(columns="micro")
            if wide.dropna().shape[0] >= 3:
                kt = ranks.category_kendall(wide).assign(**tag)
                out["category_kendall"].append(kt)
                cat_only = kt[(kt["a"] != "macro") & (kt["b"] != "macro")]
                rsum["mean_kendall_tau_between_categories"] = float(cat_only["tau"].mean()) if len(cat_only) else None
            macro = wide["macro"].dropna()
            if len(macro):
                rsum["top_model"] = str(macro.idxmax())
                rsum["top_macro"] = float(macro.max())
            eligible, dropped = scale.eligible(model_meta, list(macro.index))
            why_not = (
                "no model has a macro MCC (every model lacks a task)"
                if macro.empty
                else scale.why_no_correlation(
                    model_meta.loc[eligible, "params_used"] if eligible else pd.Series(dtype=float), macro[eligible]
                )
            )
            if why_not:
                rsum["scale_skipped"] = why_not
            else:
                sc = scale.scale_correlations(
                    macro[eligible], model_meta, exclusions, n_resamples=n_b, seed=seed, confidence=conf
                )
                out["scale"].append(sc.assign(**tag))
                rsum["spearman"] = {
                    r["subset"]: {k: r[k] for k in ("rho", "ci_low", "ci_high", "p_value", "n", "excluded")}
                    for r in sc.to_dict("records")
                }
                dom = scale.in_domain(model_meta, eligible, list(scale_s["in_domain"]["exclude_domains"]), ood_models)
                dom["params_used"] = model_meta.loc[dom.index, "params_used"]
                out["in_domain"].append(dom.reset_index().assign(**tag))
                ind = dom.index[dom["in_domain"]].tolist()
                rev = scale.reversals(model_meta.loc[ind, "params_used"], macro[ind], float(scale_s["reversal_ratio"]))
                out["reversals"].append(rev.assign(**tag))
                rsum["n_in_domain"] = len(ind)
                rsum["out_of_domain"] = dom.index[~dom["in_domain"]].tolist()
                rsum["n_reversals"] = len(rev)
            rsum["not_in_scale_analysis"] = dropped
            psum["regimes"][regime] = rsum
        regimes_present = set(board.loc[board["protocol"] == protocol, "regime"])
        if "full" not in regimes_present:
            psum["fewshot_skipped"] = "no full regime: few-shot drops are relative to it"
        fd = fewshot.drops(board, protocol) if "full" in regimes_present else pd.DataFrame()
        if set(fewshot.SHOTS) & set(fd.columns):
            out["fewshot_drops"].append(fd.reset_index().assign(protocol=protocol))
            inv = fewshot.inverse_pattern(fd)
            out["fewshot_inverse"].append(inv.assign(protocol=protocol))
            reg = fewshot.regime_changes(board, protocol)
            out["fewshot_regimes"].append(reg.assign(protocol=protocol))
            cats = reg[reg["category"] != "micro"]
            psum["categories_whose_top_model_changes"] = int(cats.loc[cats["category"] != "macro", "top_changes"].sum())
            psum["inverse_pattern"] = inv.to_dict("records")
        summary["protocols"][protocol] = psum
    nr = difficulty.near_random(used, float(s["difficulty"]["near_random_mcc"]))
    out["near_random"].append(nr)
    out["task_variance"].append(difficulty.high_variance(used, float(s["difficulty"]["high_variance_quantile"])))
    out["specialists"].append(difficulty.specialists(board))
    for protocol, psum in summary["protocols"].items():
        for regime, rsum in psum["regimes"].items():
            sel = nr[(nr["protocol"] == protocol) & (nr["regime"] == regime)]
            rsum["near_random_tasks"] = sel.loc[sel["near_random"], "task"].tolist()
    tables = {
        name: (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()) for name, frames in out.items()
    }
    summary.update(
        {
            "settings": s,
            "settings_hash": stable_hash(s),
            "input_sha256": frame_sha256(scores),
            "n_contaminated_cells": int(len(contaminated)),
            "geneb_version": __version__,
            "package_versions": package_versions(("numpy", "scipy", "pandas", "pyarrow", "matplotlib", "scikit-learn")),
        }
    )
    return tables, summary


def _jsonable(obj: Any) -> Any:
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

    Every table gets `settings_hash` and `input_sha256` columns (provenance; from the summary, else kept as
    the table has them). Returns the written paths.
    """
    outdir = Path(outdir)
    paths = []
    for name in names:
        df = tables.get(name, pd.DataFrame()).copy()
        if summary is not None:
            df["settings_hash"] = summary["settings_hash"]
            df["input_sha256"] = summary["input_sha256"]
        path = outdir / f"{name}.parquet"
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        paths.append(path)
    if summary is not None:
        path = outdir / "analysis_summary.json"
        write_text_atomic(path, json.dumps(_jsonable(summary), indent=2, sort_keys=True) + "\n")
        paths.append(path)
    return paths
