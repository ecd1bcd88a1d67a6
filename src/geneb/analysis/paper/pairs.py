"""Matched pairs: two models that differ in one factor (architecture, tokenizer or pretraining data) with the
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
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.context import ProtocolContext, RegimeContext
from geneb.analysis.stats.bootstrap import CategoryReplicates, bootstrap_p_value
from geneb.tables.scores import AnalysisInputError

#: metadata column -> the `differs_in` value of a pair that differs in it
FACTORS: dict[str, str] = {
    "architecture_family": "architecture",
    "tokenizer_type": "tokenizer",
    "pretraining_domain": "pretraining_data",
}


def derive_pairs(meta: pd.DataFrame, models: list[str], max_params_ratio: float) -> list[dict[str, Any]]:
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


def pair_effects(
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


def protocol_pairs(ctx: ProtocolContext) -> list[dict[str, Any]]:
    """The pairs tested in a protocol: the registry's declared pairs, then (settings matched_pairs.derive) the
    pairs derived from the metadata of the protocol's models that are not declared."""
    run = ctx.run
    mp = run.settings["matched_pairs"]
    derived = []
    if mp["derive"]:
        derived = derive_pairs(run.model_meta, sorted(ctx.cells["model"].unique()), float(mp["max_params_ratio"]))
    declared_ids = {tuple(sorted(p["models"])) for p in run.declared_pairs}
    out = [dict(p, source=p.get("source", "declared")) for p in run.declared_pairs]
    return out + [p for p in derived if tuple(p["models"]) not in declared_ids]


def matched_pair_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `matched_pairs`: `pair_effects` of the protocol's pairs on the regime's paired
    replicates (none with fewer than 2 complete models); the summary gets the counts."""
    pairs = protocol_pairs(ctx.protocol)
    ctx.protocol.summary["matched_pairs_considered"] = len(pairs)
    if ctx.replicates is None:
        return {}
    mp = ctx.run.settings["matched_pairs"]
    eff = pair_effects(
        ctx.replicates,
        pairs,
        confidence=ctx.run.confidence,
        alpha=float(mp["alpha"]),
        min_tasks_without_rows=int(mp["min_tasks_without_rows"]),
    )
    ctx.summary["matched_pairs_tested"] = int(eff["tested"].sum()) if len(eff) else 0
    ctx.summary["matched_pairs_significant"] = int(eff["significant"].sum()) if len(eff) else 0
    return {"matched_pairs": eff}
