"""The paper's analyses: scale, matched pairs, few-shot and task difficulty.

Task difficulty: tasks no model solves, tasks that separate models, and category specialists.

* `_near_random`: per (protocol, regime, task), the best model and its CI; the task is *near random* when even
  that CI's upper end stays below a configured MCC threshold (MCC 0 = chance). Without a CI (published
  results carry none) the point value is compared instead, and `ci_source` says so.
* `_high_variance`: per task, the standard deviation (ddof = 1) and range of MCC across models; tasks at or
  above a configured quantile of that spread are *high variance*: the tasks that tell models apart.
* `_specialists`: per category, the winner; a *specialist* wins the category while its macro MCC is below the
  median macro MCC of all ranked models.

Few-shot: how scores and rankings change from the full training split to k = 10 and k = 1 examples per
class (k-shot probes, the paper's `10shot` and `1shot` regimes).

* `_drops`: macro MCC per model in each regime, absolute drop (full - k-shot) and relative drop
  ((full - k-shot) / full).
* `_inverse_pattern`: Spearman's rho between the full-data level and the drop (`scale.spearman_rho_p`: exact p for small n); a
  positive rho means the strongest models lose the most (the paper's "inverse pattern").
* `_regime_changes`: per category (and macro), the top model in each regime, whether it changes, and
  Kendall's tau-b between the regime rankings (scipy.stats.kendalltau).

Matched pairs: two models that differ in one factor (architecture, tokenizer or pretraining data) with the
others held equal, compared category by category with paired-bootstrap CIs and p-values, corrected for
multiple comparisons (Benjamini-Hochberg false discovery rate, scipy.stats.false_discovery_control).

Pairs come from the registry's `matched_pairs` (declared, with their own note) and, when enabled, are derived
from metadata: every two models whose `architecture_family`, `tokenizer_type` and `pretraining_domain` agree
in all but one factor (none of them "unknown") and whose parameter counts are within a configured ratio.

The difference is model_a - model_b (MCC). Its replicates are the paired category replicates of
`bootstrap.category_replicates` (same test rows and same tasks for both models); the CI is the percentile
interval and the p-value inverts it (`bootstrap.bootstrap_p_value`). Without per-row predictions (published
results) only task sampling is left; a category with fewer tasks than `min_tasks_without_rows` is then not
tested (p-value NaN), since a bootstrap over one or two tasks has no spread to speak of.

Scale: does a larger model score higher? Spearman's rho between parameter count and aggregate MCC, with a
bootstrap CI, recomputed with named models excluded; and "reversals", a model at least `ratio` times smaller
beating a larger one on aggregate MCC, counted among in-domain models.

Parameter counts are the paper's where the registry records one (`params_paper`), else `params`
(`metadata.model_frame`, column `params_used`). Models without a positive parameter count (k-mer and
random-init baselines) are not part of the scale analysis. A model is *in-domain* when its pretraining
domain can cover the benchmark's organisms: its `pretraining_domain` is not one of the configured
out-of-domain domains, and it is not named in the configured exclusion list (with a reason); see
docs/analyses.md for the rule and for the paper's 36 in-domain models.

The paper's analyses and its published results: scale, matched pairs, few-shot, task difficulty; the importer of
the published 40, the reproduction of its stated numbers, the comparison of a new model with them and the
submission file.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.inputs import ProtocolContext, RegimeContext, RunContext, entries
from geneb.analysis.stats import CategoryReplicates, bootstrap_p_value
from geneb.tables.scores import REGIMES, AnalysisInputError


def _near_random(cells: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Per (protocol, regime, task): best model, its value, ci_low, ci_high, ci_source and `_near_random`.

    cells: per-cell table, optionally with ci_low/ci_high/ci_source columns (NaN where unknown). The task is
    near random when ci_high < threshold, or value < threshold where ci_high is NaN. Raises
    AnalysisInputError for a threshold outside (-1, 1].
    """
    if not -1 < threshold <= 1:
        raise AnalysisInputError(f"near-random MCC threshold must be in (-1, 1], got {threshold}")
    df = cells.copy()
    for col in ("ci_low", "ci_high"):
        if col not in df.columns:
            df[col] = np.nan
    if "ci_source" not in df.columns:
        df["ci_source"] = "none"
    best = df.loc[df.groupby(["protocol", "regime", "task"], observed=True)["value"].idxmax()]
    out = best[["protocol", "regime", "task", "category", "model", "value", "ci_low", "ci_high", "ci_source"]].copy()
    out = out.rename(columns={"model": "best_model", "value": "best_value"})
    has_ci = out["ci_high"].notna()
    out.loc[~has_ci, "ci_source"] = "none"
    out["near_random"] = np.where(has_ci, out["ci_high"] < threshold, out["best_value"] < threshold)
    out["threshold"] = threshold
    return out.sort_values(["protocol", "regime", "best_value"]).reset_index(drop=True)


def _high_variance(cells: pd.DataFrame, quantile: float) -> pd.DataFrame:
    """Per (protocol, regime, task): sd (ddof=1), range, median, n_models and `_high_variance`.

    high_variance: sd >= the `quantile` of the task sds within the same (protocol, regime). Tasks with fewer
    than 2 models get NaN sd and are never high variance. Raises AnalysisInputError for quantile outside [0, 1].
    """
    if not 0 <= quantile <= 1:
        raise AnalysisInputError(f"high-variance quantile must be in [0, 1], got {quantile}")
    g = cells.groupby(["protocol", "regime", "task", "category"], observed=True)["value"]
    out = g.agg(sd=lambda v: v.std(ddof=1), min="min", max="max", median="median", n_models="count").reset_index()
    out["range"] = out["max"] - out["min"]
    cut = out.groupby(["protocol", "regime"])["sd"].transform(lambda s: s.quantile(quantile))
    out["high_variance"] = (out["sd"] >= cut) & out["sd"].notna()
    out["sd_cutoff"] = cut
    return out.sort_values(["protocol", "regime", "sd"], ascending=[True, True, False]).reset_index(drop=True)


def _specialists(board: pd.DataFrame) -> pd.DataFrame:
    """Per (protocol, regime, category): the winner, its macro value, the median macro and `specialist`.

    board: leaderboard table. Winners are the rank-1 rows (ties give several rows). specialist: the winner's
    macro is below the median macro over models with a macro value; NaN macro (incomplete model) is never a
    specialist.
    """
    macro = board[board["category"] == "macro"]
    med = macro.groupby(["protocol", "regime"])["value"].median().rename("median_macro")
    wins = board[(board["rank"] == 1) & ~board["category"].isin(["macro", "micro"])]
    out = (
        wins[["protocol", "regime", "category", "model", "value"]]
        .merge(
            macro[["protocol", "regime", "model", "value"]].rename(columns={"value": "macro"}),
            on=["protocol", "regime", "model"],
            how="left",
        )
        .merge(med.reset_index(), on=["protocol", "regime"], how="left")
    )
    out["specialist"] = (out["macro"] < out["median_macro"]).fillna(False).astype(bool)
    return out.rename(columns={"model": "winner"}).reset_index(drop=True)


def difficulty_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `difficulty`: near-random tasks (with the bootstrap CIs of the cells), high-variance
    tasks and specialists; each regime's summary gets its near-random tasks."""
    d = ctx.settings["difficulty"]
    nr = _near_random(ctx.used, float(d["near_random_mcc"]))
    for protocol, psum in ctx.summary["protocols"].items():
        for regime, rsum in psum["regimes"].items():
            sel = nr[(nr["protocol"] == protocol) & (nr["regime"] == regime)]
            rsum["near_random_tasks"] = sel.loc[sel["near_random"], "task"].tolist()
    return {
        "near_random": nr,
        "task_variance": _high_variance(ctx.used, float(d["high_variance_quantile"])),
        "specialists": _specialists(ctx.board),
    }


#: up to this many pairs the Spearman p-value is exact (all n! pairings), not scipy's large-sample t approximation
_EXACT_P_MAX_N = 8
#: a bootstrap CI is reported only when at most this share of resamples has a defined rho
_MAX_UNDEFINED_SHARE = 0.05


def _spearman_rho_p(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value. For n <= EXACT_P_MAX_N the p-value is exact
    (scipy.stats.permutation_test over every pairing); above, scipy.stats.spearmanr's t approximation, which
    at n = 4 would print p = 0 for a perfect rank agreement whose exact p is 1/12."""
    res = stats.spearmanr(x, y)
    if len(x) > _EXACT_P_MAX_N or not np.isfinite(res.statistic):
        return float(res.statistic), float(res.pvalue)
    # Spearman's rho is Pearson's r of the ranks: rank once, then r of every pairing (n! <= 40320) at once; the
    # p-value is the share of pairings at least as extreme (the exact permutation test, as
    # scipy.stats.permutation_test with permutation_type="pairings" computes it)
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    pairings = np.array(list(itertools.permutations(ry)))
    r = _pearson(np.broadcast_to(rx, pairings.shape), pairings)
    observed = _pearson(rx, ry)
    p_value = float(np.mean(np.abs(r) >= abs(observed) - 1e-12))
    return float(res.statistic), p_value


def _pearson(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    return (a * b).sum(axis=axis) / np.sqrt((a * a).sum(axis=axis) * (b * b).sum(axis=axis))


def _spearman_with_ci(
    x: np.ndarray, y: np.ndarray, *, n_resamples: int, seed: int, confidence: float
) -> dict[str, float]:
    """Spearman's rho of paired samples with a percentile bootstrap CI over the pairs.

    x, y: (n,) finite, n >= 3. rho and its two-sided p-value from `_spearman_rho_p` (exact for small n); the CI
    from scipy.stats.bootstrap (paired=True, method="percentile", rng=default_rng(seed)). A resample with a
    constant column has no rho: their share is returned as `ci_undefined_share`, and the CI is NaN when it
    exceeds MAX_UNDEFINED_SHARE (percentiles of the defined ones alone would look decisive at small n).
    Returns {rho, p_value, ci_low, ci_high, ci_undefined_share, n}. Raises AnalysisInputError for n < 3,
    non-finite values or unequal lengths.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise AnalysisInputError(f"Spearman: x {x.shape} and y {y.shape} must be equal-length vectors")
    if len(x) < 3 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise AnalysisInputError(f"Spearman needs >= 3 finite pairs, got {len(x)}")
    rho_value, p_value = _spearman_rho_p(x, y)

    def rho(a: np.ndarray, b: np.ndarray) -> float:
        return stats.spearmanr(a, b).statistic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a resample with a constant column gives NaN rho; see nanquantile below
        boot = stats.bootstrap(
            (x, y),
            rho,
            paired=True,
            vectorized=False,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    dist = boot.bootstrap_distribution
    undefined = float(np.isnan(dist).mean())
    a = (1 - confidence) / 2
    low, high = np.nanquantile(dist, [a, 1 - a]) if undefined <= _MAX_UNDEFINED_SHARE else (np.nan, np.nan)
    return {
        "rho": rho_value,
        "p_value": p_value,
        "ci_low": float(low),
        "ci_high": float(high),
        "ci_undefined_share": undefined,
        "n": len(x),
    }


def _why_no_correlation(params: pd.Series, score: pd.Series) -> str:
    """'' when rho(params, score) is defined; else why not (fewer than 3 models, or a constant column)."""
    if len(params) < 3:
        n = len(params)
        return f"only {n} model{'' if n == 1 else 's'} with both a positive parameter count and an aggregate score (3 needed)"
    if params.nunique() < 2:
        return "every model has the same parameter count"
    if score.nunique() < 2:
        return "every model has the same score"
    return ""


def _eligible(meta: pd.DataFrame, models: list[str]) -> tuple[list[str], dict[str, str]]:
    """Split `models` into those with a positive parameter count and the rest ({model: reason})."""
    keep, dropped = [], {}
    for m in models:
        p = meta["params_used"].get(m, np.nan) if m in meta.index else np.nan
        if not np.isfinite(p):
            dropped[m] = "no parameter count in the registry"
        elif p <= 0:
            dropped[m] = "no trained parameters (baseline)"
        else:
            keep.append(m)
    return keep, dropped


def _scale_correlations(
    score: pd.Series,
    meta: pd.DataFrame,
    exclusions: dict[str, str],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
) -> pd.DataFrame:
    """rho(parameter count, score) over all eligible models, then without the excluded ones.

    score: aggregate MCC per model (e.g. macro, full regime); meta: model metadata; exclusions: {model:
    reason} from the config. Returns rows `subset` in {"all", "excluding"} with rho, p_value, ci_low, ci_high,
    n, excluded (semicolon-separated ids; only those present), reasons, note. The "excluding" row is present
    only when an excluded model is among the scored ones; when rho is undefined without them (fewer than 3
    models, a constant column) its values are NaN and `note` says why. Raises AnalysisInputError when fewer
    than 3 eligible models remain for "all".
    """
    score = score.dropna()
    keep, _ = _eligible(meta, list(score.index))
    rows = []
    subsets: list[tuple[str, list[str], list[str]]] = [("all", keep, [])]
    present = [m for m in exclusions if m in keep]
    if present:
        subsets.append(("excluding", [m for m in keep if m not in present], present))
    for name, models, excl in subsets:
        why = _why_no_correlation(meta.loc[models, "params_used"], score[models]) if name == "excluding" else ""
        if why:
            r = {
                "rho": np.nan,
                "p_value": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "ci_undefined_share": np.nan,
                "n": len(models),
            }
        else:
            r = _spearman_with_ci(
                meta.loc[models, "params_used"].to_numpy(),
                score[models].to_numpy(),
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
            )
        rows.append(
            {
                "subset": name,
                **r,
                "excluded": ";".join(excl),
                "reasons": "; ".join(f"{m}: {exclusions[m]}" for m in excl),
                "note": why,
            }
        )
    return pd.DataFrame(rows)


def _in_domain(
    meta: pd.DataFrame, models: list[str], exclude_domains: list[str], exclude_models: dict[str, str]
) -> pd.DataFrame:
    """Which of `models` are in-domain, and why not.

    A model is out of domain when it is listed in `exclude_models` (reason given there) or when its
    `pretraining_domain` is one of `exclude_domains`. Returns a frame indexed by model with in_domain (bool),
    pretraining_domain and reason.
    """
    rows = []
    for m in models:
        dom = meta["pretraining_domain"].get(m, "unknown") if m in meta.index else "unknown"
        if m in exclude_models:
            rows.append((m, False, dom, exclude_models[m]))
        elif dom in exclude_domains:
            rows.append((m, False, dom, f"pretraining domain {dom!r} is configured as out of domain"))
        else:
            rows.append((m, True, dom, ""))
    return pd.DataFrame(rows, columns=["model", "in_domain", "pretraining_domain", "reason"]).set_index("model")


def _reversals(params: pd.Series, score: pd.Series, ratio: float) -> pd.DataFrame:
    """Every ordered pair in which a model at least `ratio` times smaller scores higher than a larger one.

    params, score: per model (same index; NaN rows dropped). A pair (small, large) counts when
    params[large] >= ratio * params[small] and score[small] > score[large] (ties do not count). Returns
    columns smaller, larger, params_smaller, params_larger, size_ratio, score_smaller, score_larger, margin,
    sorted by margin (largest first). Raises AnalysisInputError for ratio <= 1.
    """
    if not ratio > 1:
        raise AnalysisInputError(f"reversal size ratio must be > 1, got {ratio}")
    df = pd.DataFrame({"p": params, "s": score}).dropna()
    rows = []
    for a, b in itertools.permutations(df.index, 2):
        pa, pb, sa, sb = df.at[a, "p"], df.at[b, "p"], df.at[a, "s"], df.at[b, "s"]
        if pb >= ratio * pa and sa > sb:
            rows.append(
                {
                    "smaller": a,
                    "larger": b,
                    "params_smaller": pa,
                    "params_larger": pb,
                    "size_ratio": pb / pa,
                    "score_smaller": sa,
                    "score_larger": sb,
                    "margin": sa - sb,
                }
            )
    cols = [
        "smaller",
        "larger",
        "params_smaller",
        "params_larger",
        "size_ratio",
        "score_smaller",
        "score_larger",
        "margin",
    ]
    return pd.DataFrame(rows, columns=cols).sort_values("margin", ascending=False).reset_index(drop=True)


def scale_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `scale`: Spearman rho of parameter count vs macro MCC (`_scale_correlations`), the
    in-domain models and the reversals among them, for the models with a positive parameter count; skipped,
    with the reason in the summary, when no correlation is defined."""
    run, macro, rsum = ctx.run, ctx.macro, ctx.summary
    meta, scale_s = run.model_meta, run.settings["scale"]
    exclusions = entries(scale_s["rho_exclusions"], "analysis.scale.rho_exclusions")
    ood_models = entries(scale_s["in_domain"]["exclude_models"], "analysis.scale.in_domain.exclude_models")
    ok, dropped = _eligible(meta, list(macro.index))
    rsum["not_in_scale_analysis"] = dropped
    why_not = (
        "no model has a macro MCC (every model lacks a task)"
        if macro.empty
        else _why_no_correlation(meta.loc[ok, "params_used"] if ok else pd.Series(dtype=float), macro[ok])
    )
    if why_not:
        rsum["scale_skipped"] = why_not
        return {}
    sc = _scale_correlations(
        macro[ok], meta, exclusions, n_resamples=run.n_resamples, seed=run.seed, confidence=run.confidence
    )
    rsum["spearman"] = {
        r["subset"]: {k: r[k] for k in ("rho", "ci_low", "ci_high", "p_value", "n", "excluded")}
        for r in sc.to_dict("records")
    }
    dom = _in_domain(meta, ok, list(scale_s["in_domain"]["exclude_domains"]), ood_models)
    dom["params_used"] = meta.loc[dom.index, "params_used"]
    ind = dom.index[dom["in_domain"]].tolist()
    rev = _reversals(meta.loc[ind, "params_used"], macro[ind], float(scale_s["reversal_ratio"]))
    rsum["n_in_domain"] = len(ind)
    rsum["out_of_domain"] = dom.index[~dom["in_domain"]].tolist()
    rsum["n_reversals"] = len(rev)
    return {"scale": sc, "in_domain": dom.reset_index(), "reversals": rev}


#: the k-shot regimes, in REGIMES order
SHOTS: tuple[str, ...] = tuple(r for r in REGIMES if r != "full")


def _drops(board: pd.DataFrame, protocol: str, category: str = "macro") -> pd.DataFrame:
    """Per model: `category` value (default macro) in each regime present, and drops relative to full.

    board: leaderboard table. Returns index model with columns full, 10shot, 1shot (those present),
    abs_drop_{k}, rel_drop_{k} for each k-shot regime present. rel_drop is NaN where full <= 0 (a ratio of
    a non-positive level is meaningless). Raises AnalysisInputError without a full regime.
    """
    b = board[(board["protocol"] == protocol) & (board["category"] == category)]
    wide = b.pivot(index="model", columns="regime", values="value")
    if "full" not in wide.columns:
        raise AnalysisInputError(f"few-shot drops need the full regime (protocol {protocol!r})")
    wide = wide[[r for r in REGIMES if r in wide.columns]]
    for k in SHOTS:
        if k in wide.columns:
            wide[f"abs_drop_{k}"] = wide["full"] - wide[k]
            wide[f"rel_drop_{k}"] = np.where(wide["full"] > 0, wide[f"abs_drop_{k}"] / wide["full"], np.nan)
    return wide.sort_values("full", ascending=False)


def _inverse_pattern(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman rho between the full-data level and each drop column of `_drops` output.

    Returns rows regime, measure (abs_drop / rel_drop), rho, p_value, n (models with both values); rows with
    fewer than 3 models are left out.
    """
    rows = []
    for k in SHOTS:
        for measure in ("abs_drop", "rel_drop"):
            col = f"{measure}_{k}"
            if col not in table.columns:
                continue
            d = table[["full", col]].dropna()
            if len(d) < 3:
                continue
            rho, p_value = _spearman_rho_p(d["full"].to_numpy(), d[col].to_numpy())
            rows.append({"regime": k, "measure": measure, "rho": rho, "p_value": p_value, "n": len(d)})
    return pd.DataFrame(rows, columns=["regime", "measure", "rho", "p_value", "n"])


def _regime_changes(board: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """Per category (incl. macro): top model per regime, whether it changes, Kendall tau-b between regimes.

    Returns columns category, top_full, top_10shot, top_1shot (those present), top_changes (bool), and
    tau_{r1}_vs_{r2}, p_{r1}_vs_{r2}, n_{r1}_vs_{r2} for each pair of regimes present (models with a value
    in both; NaN with fewer than 3). Only complete rows count (see `leaderboard.leaderboard`).
    """
    b = board[board["protocol"] == protocol]
    b = b.assign(value=b["value"].where(b["complete"]))  # a model missing some of a category's tasks is not ranked
    rows = []
    for category, c in b.groupby("category", sort=False):
        wide = c.pivot(index="model", columns="regime", values="value")
        regimes = [r for r in REGIMES if r in wide.columns]
        row: dict[str, object] = {"category": category}
        tops = []
        for r in regimes:
            col = wide[r].dropna()
            top = col.idxmax() if len(col) else None
            row[f"top_{r}"] = top
            tops.append(top)
        row["top_changes"] = len(set(tops)) > 1
        for r1, r2 in itertools.combinations(regimes, 2):
            d = wide[[r1, r2]].dropna()
            key = f"{r1}_vs_{r2}"
            if len(d) >= 3:
                res = stats.kendalltau(d[r1], d[r2], variant="b")
                row[f"tau_{key}"], row[f"p_{key}"] = float(res.statistic), float(res.pvalue)
            else:
                row[f"tau_{key}"], row[f"p_{key}"] = np.nan, np.nan
            row[f"n_{key}"] = len(d)
        rows.append(row)
    return pd.DataFrame(rows)


def _regime_pairs(regimes: list[str]) -> list[tuple[str, str]]:
    """The regime pairs compared for winner changes, the paper's first: (full, 10shot), (full, 1shot),
    (10shot, 1shot), those whose both regimes are in `regimes`."""
    ordered = [r for r in REGIMES if r in regimes]
    return list(itertools.combinations(ordered, 2))


def _winner_changes(changes: pd.DataFrame) -> list[dict[str, object]]:
    """Per regime pair (`_regime_pairs` order): in how many of the categories (not macro or micro) the top
    model differs between the two regimes, of how many categories with a top model in both.

    changes: `_regime_changes` output. Returns [{a, b, changed, of, categories}] with `categories` the changed
    ones in table order. The paper's "the best model changes in 8 of 13 categories" is the (full, 10shot) pair.
    """
    cats = changes[~changes["category"].isin(["macro", "micro"])]
    present = [r for r in REGIMES if f"top_{r}" in cats.columns]
    out = []
    for a, b in _regime_pairs(present):
        both = cats[cats[f"top_{a}"].notna() & cats[f"top_{b}"].notna()]
        changed = both[both[f"top_{a}"] != both[f"top_{b}"]]
        out.append(
            {"a": a, "b": b, "changed": len(changed), "of": len(both), "categories": changed["category"].tolist()}
        )
    return out


def fewshot_tables(ctx: ProtocolContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `fewshot`: drops, the inverse pattern and the regime changes of the protocol's
    leaderboard (none without a full regime or a k-shot one); the summary says why when skipped."""
    board, protocol = ctx.run.board, ctx.protocol
    if "full" not in set(board.loc[board["protocol"] == protocol, "regime"]):
        ctx.summary["fewshot_skipped"] = "no full regime: few-shot drops are relative to it"
        return {}
    fd = _drops(board, protocol)
    if not set(SHOTS) & set(fd.columns):
        ctx.summary["fewshot_skipped"] = f"protocol {protocol} has no k-shot regime beside the full one"
        return {}
    inv = _inverse_pattern(fd)
    reg = _regime_changes(board, protocol)
    ctx.summary["top_model_changes"] = _winner_changes(reg)
    ctx.summary["inverse_pattern"] = inv.to_dict("records")
    return {"fewshot_drops": fd.reset_index(), "fewshot_inverse": inv, "fewshot_regimes": reg}


#: metadata column -> the `differs_in` value of a pair that differs in it
FACTORS: dict[str, str] = {
    "architecture_family": "architecture",
    "tokenizer_type": "tokenizer",
    "pretraining_domain": "pretraining_data",
}


def _derive_pairs(meta: pd.DataFrame, models: list[str], max_params_ratio: float) -> list[dict[str, Any]]:
    """Pairs among `models` that differ in exactly one of FACTORS and agree on the other two.

    meta: model metadata (`metadata.model_frame`); a model with an "unknown"/empty factor or without a
    positive parameter count is never paired. max_params_ratio: larger/smaller parameter count allowed
    (>= 1). Returns [{id, models: [a, b], differs_in, held_equal, source: "derived"}] with a, b sorted.
    Raises AnalysisInputError for max_params_ratio < 1.
    """
    if max_params_ratio < 1:
        raise AnalysisInputError(f"max_params_ratio must be >= 1, got {max_params_ratio}")
    usable = []
    for m in sorted(models):
        if m not in meta.index:
            continue
        row = meta.loc[m]
        if any(str(row[f]) in ("", "unknown", "none") for f in FACTORS) or not row["params_used"] > 0:
            continue
        usable.append(m)
    out = []
    for a, b in itertools.combinations(usable, 2):
        ra, rb = meta.loc[a], meta.loc[b]
        differ = [f for f in FACTORS if ra[f] != rb[f]]
        ratio = max(ra["params_used"], rb["params_used"]) / min(ra["params_used"], rb["params_used"])
        if len(differ) == 1 and ratio <= max_params_ratio:
            held = [FACTORS[f] for f in FACTORS if f not in differ]
            out.append(
                {
                    "id": f"{a}~{b}",
                    "models": [a, b],
                    "differs_in": FACTORS[differ[0]],
                    "held_equal": held,
                    "source": "derived",
                }
            )
    return out


def _pair_effects(
    rep: CategoryReplicates,
    pairs: list[dict[str, Any]],
    *,
    confidence: float,
    alpha: float,
    min_tasks_without_rows: int,
) -> pd.DataFrame:
    """Per (pair, category incl. macro): diff = MCC(a) - MCC(b) with a paired percentile CI, a bootstrap
    p-value and the Benjamini-Hochberg q-value over every tested row of this call.

    rep: category replicates of one (protocol, regime); pairs: declared and/or derived pairs (pairs whose
    models are not both in `rep` are skipped). Returns columns pair_id, model_a, model_b, differs_in,
    pair_source, category, n_tasks, diff, ci_low, ci_high, p_value, q_value, significant (q < alpha),
    tested, rows_resampled. Raises AnalysisInputError for alpha outside (0, 1).
    """
    if not 0 < alpha < 1:
        raise AnalysisInputError(f"alpha must be in (0, 1), got {alpha}")
    index = {m: i for i, m in enumerate(rep.models)}
    n_tasks = np.append(rep.n_tasks, rep.n_tasks.sum())
    a_q = (1 - confidence) / 2
    rows = []
    for pair in pairs:
        a, b = pair["models"]
        if a not in index or b not in index:
            continue
        ia, ib = index[a], index[b]
        diff_draws = rep.draws[:, ia, :] - rep.draws[:, ib, :]
        p = bootstrap_p_value(diff_draws)
        low = np.quantile(diff_draws, a_q, axis=0)
        high = np.quantile(diff_draws, 1 - a_q, axis=0)
        for c, col in enumerate(rep.columns):
            tested = rep.rows_resampled or n_tasks[c] >= min_tasks_without_rows
            rows.append(
                {
                    "pair_id": pair.get("id", f"{a}~{b}"),
                    "model_a": a,
                    "model_b": b,
                    "differs_in": pair.get("differs_in", ""),
                    "pair_source": pair.get("source", "declared"),
                    "category": col,
                    "n_tasks": int(n_tasks[c]),
                    "diff": float(rep.point[ia, c] - rep.point[ib, c]),
                    "ci_low": float(low[c]) if tested else np.nan,
                    "ci_high": float(high[c]) if tested else np.nan,
                    "p_value": float(p[c]) if tested else np.nan,
                    "tested": bool(tested),
                }
            )
    cols = [
        "pair_id",
        "model_a",
        "model_b",
        "differs_in",
        "pair_source",
        "category",
        "n_tasks",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "q_value",
        "significant",
        "tested",
        "rows_resampled",
    ]
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=cols)
    out["q_value"] = np.nan
    t = out["tested"].to_numpy()
    if t.any():
        out.loc[t, "q_value"] = stats.false_discovery_control(out.loc[t, "p_value"].to_numpy(), method="bh")
    out["significant"] = out["q_value"] < alpha
    out["rows_resampled"] = rep.rows_resampled
    return out[cols]


def _protocol_pairs(ctx: ProtocolContext) -> list[dict[str, Any]]:
    """The pairs tested in a protocol: the registry's declared pairs, then (settings matched_pairs.derive) the
    pairs derived from the metadata of the protocol's models that are not declared."""
    run = ctx.run
    mp = run.settings["matched_pairs"]
    derived = []
    if mp["derive"]:
        derived = _derive_pairs(run.model_meta, sorted(ctx.cells["model"].unique()), float(mp["max_params_ratio"]))
    declared_ids = {tuple(sorted(p["models"])) for p in run.declared_pairs}
    out = [dict(p, source=p.get("source", "declared")) for p in run.declared_pairs]
    return out + [p for p in derived if tuple(p["models"]) not in declared_ids]


def matched_pair_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `matched_pairs`: `_pair_effects` of the protocol's pairs on the regime's paired
    replicates (none with fewer than 2 complete models); the summary gets the counts."""
    pairs = _protocol_pairs(ctx.protocol)
    ctx.protocol.summary["matched_pairs_considered"] = len(pairs)
    if ctx.replicates is None:
        return {}
    mp = ctx.run.settings["matched_pairs"]
    eff = _pair_effects(
        ctx.replicates,
        pairs,
        confidence=ctx.run.confidence,
        alpha=float(mp["alpha"]),
        min_tasks_without_rows=int(mp["min_tasks_without_rows"]),
    )
    ctx.summary["matched_pairs_tested"] = int(eff["tested"].sum()) if len(eff) else 0
    ctx.summary["matched_pairs_significant"] = int(eff["significant"].sum()) if len(eff) else 0
    return {"matched_pairs": eff}
