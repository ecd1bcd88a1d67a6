"""Scale: does a larger model score higher? Spearman's rho between parameter count and aggregate MCC, with a
bootstrap CI, recomputed with named models excluded; and "reversals", a model at least `ratio` times smaller
beating a larger one on aggregate MCC, counted among in-domain models.

Parameter counts are the paper's where the registry records one (`params_paper`), else `params`
(`metadata.model_frame`, column `params_used`). Models without a positive parameter count (k-mer and
random-init baselines) are not part of the scale analysis. A model is *in-domain* when its pretraining
domain can cover the benchmark's organisms: its `pretraining_domain` is not one of the configured
out-of-domain domains, and it is not named in the configured exclusion list (with a reason); see
docs/analyses.md for the rule and for the paper's 36 in-domain models.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.context import RegimeContext
from geneb.analysis.inputs.metadata import entries
from geneb.tables.scores import AnalysisInputError

#: up to this many pairs the Spearman p-value is exact (all n! pairings), not scipy's large-sample t approximation
EXACT_P_MAX_N = 8
#: a bootstrap CI is reported only when at most this share of resamples has a defined rho
MAX_UNDEFINED_SHARE = 0.05


def spearman_rho_p(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value. For n <= EXACT_P_MAX_N the p-value is exact
    (scipy.stats.permutation_test over every pairing); above, scipy.stats.spearmanr's t approximation, which
    at n = 4 would print p = 0 for a perfect rank agreement whose exact p is 1/12."""
    res = stats.spearmanr(x, y)
    if len(x) > EXACT_P_MAX_N or not np.isfinite(res.statistic):
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


def spearman_with_ci(
    x: np.ndarray, y: np.ndarray, *, n_resamples: int, seed: int, confidence: float
) -> dict[str, float]:
    """Spearman's rho of paired samples with a percentile bootstrap CI over the pairs.

    x, y: (n,) finite, n >= 3. rho and its two-sided p-value from `spearman_rho_p` (exact for small n); the CI
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
    rho_value, p_value = spearman_rho_p(x, y)

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
    low, high = np.nanquantile(dist, [a, 1 - a]) if undefined <= MAX_UNDEFINED_SHARE else (np.nan, np.nan)
    return {
        "rho": rho_value,
        "p_value": p_value,
        "ci_low": float(low),
        "ci_high": float(high),
        "ci_undefined_share": undefined,
        "n": len(x),
    }


def why_no_correlation(params: pd.Series, score: pd.Series) -> str:
    """'' when rho(params, score) is defined; else why not (fewer than 3 models, or a constant column)."""
    if len(params) < 3:
        n = len(params)
        return f"only {n} model{'' if n == 1 else 's'} with both a positive parameter count and an aggregate score (3 needed)"
    if params.nunique() < 2:
        return "every model has the same parameter count"
    if score.nunique() < 2:
        return "every model has the same score"
    return ""


def eligible(meta: pd.DataFrame, models: list[str]) -> tuple[list[str], dict[str, str]]:
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


def scale_correlations(
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
    keep, _ = eligible(meta, list(score.index))
    rows = []
    subsets: list[tuple[str, list[str], list[str]]] = [("all", keep, [])]
    present = [m for m in exclusions if m in keep]
    if present:
        subsets.append(("excluding", [m for m in keep if m not in present], present))
    for name, models, excl in subsets:
        why = why_no_correlation(meta.loc[models, "params_used"], score[models]) if name == "excluding" else ""
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
            r = spearman_with_ci(
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


def in_domain(
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


def reversals(params: pd.Series, score: pd.Series, ratio: float) -> pd.DataFrame:
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
    """Registered analysis `scale`: Spearman rho of parameter count vs macro MCC (`scale_correlations`), the
    in-domain models and the reversals among them, for the models with a positive parameter count; skipped,
    with the reason in the summary, when no correlation is defined."""
    run, macro, rsum = ctx.run, ctx.macro, ctx.summary
    meta, scale_s = run.model_meta, run.settings["scale"]
    exclusions = entries(scale_s["rho_exclusions"], "analysis.scale.rho_exclusions")
    ood_models = entries(scale_s["in_domain"]["exclude_models"], "analysis.scale.in_domain.exclude_models")
    ok, dropped = eligible(meta, list(macro.index))
    rsum["not_in_scale_analysis"] = dropped
    why_not = (
        "no model has a macro MCC (every model lacks a task)"
        if macro.empty
        else why_no_correlation(meta.loc[ok, "params_used"] if ok else pd.Series(dtype=float), macro[ok])
    )
    if why_not:
        rsum["scale_skipped"] = why_not
        return {}
    sc = scale_correlations(
        macro[ok], meta, exclusions, n_resamples=run.n_resamples, seed=run.seed, confidence=run.confidence
    )
    rsum["spearman"] = {
        r["subset"]: {k: r[k] for k in ("rho", "ci_low", "ci_high", "p_value", "n", "excluded")}
        for r in sc.to_dict("records")
    }
    dom = in_domain(meta, ok, list(scale_s["in_domain"]["exclude_domains"]), ood_models)
    dom["params_used"] = meta.loc[dom.index, "params_used"]
    ind = dom.index[dom["in_domain"]].tolist()
    rev = reversals(meta.loc[ind, "params_used"], macro[ind], float(scale_s["reversal_ratio"]))
    rsum["n_in_domain"] = len(ind)
    rsum["out_of_domain"] = dom.index[~dom["in_domain"]].tolist()
    rsum["n_reversals"] = len(rev)
    return {"scale": sc, "in_domain": dom.reset_index(), "reversals": rev}
