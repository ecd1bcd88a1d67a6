"""Category-aware recommendation: for each category (and macro), the best model and the models it cannot be
told apart from.

Tie rules (config `analysis.recommendation.tie_rule`):
* "overlap": a model ties with the best when their percentile CIs overlap (its upper end >= the best's
  lower end). Conservative: overlapping CIs do not prove equality, but non-overlap proves a difference.
* "paired": a model ties with the best when the paired-bootstrap CI of (best - model) contains 0; uses the
  pairing of `bootstrap.category_replicates` (same rows, same tasks) and so separates more models.
Where a column has no CI (a single-task category without per-row predictions), only exact equality ties.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from geneb.analysis.context import RegimeContext
from geneb.analysis.ranking.leaderboard import ranked_rows
from geneb.analysis.stats.bootstrap import CategoryReplicates
from geneb.tables.scores import AnalysisInputError

TIE_RULES = ("overlap", "paired")


def recommend(rep: CategoryReplicates, *, confidence: float, tie_rule: str = "overlap") -> pd.DataFrame:
    """Best and tied models per category (incl. macro).

    rep: paired category replicates of one (protocol, regime). Returns rows category, model, role ("best" or
    "tied"), value, ci_low, ci_high, n_recommended (best + tied), sorted by category then value. Raises
    AnalysisInputError for an unknown tie rule.
    """
    if tie_rule not in TIE_RULES:
        raise AnalysisInputError(f"tie_rule must be one of {TIE_RULES}, not {tie_rule!r}")
    low, high = rep.interval(confidence)
    a = (1 - confidence) / 2
    rows = []
    for c, col in enumerate(rep.columns):
        values = rep.point[:, c]
        best = int(np.nanargmax(values))
        has_ci = np.isfinite(low[best, c])
        chosen: list[dict[str, Any]] = []
        for m, model in enumerate(rep.models):
            role: str | None
            if m == best:
                role = "best"
            elif not has_ci:
                role = "tied" if values[m] == values[best] else None
            elif tie_rule == "overlap":
                role = "tied" if high[m, c] >= low[best, c] else None
            else:
                d = rep.draws[:, best, c] - rep.draws[:, m, c]
                role = "tied" if np.quantile(d, a) <= 0 else None
            if role:
                chosen.append(
                    {
                        "category": col,
                        "model": model,
                        "role": role,
                        "value": float(values[m]),
                        "ci_low": float(low[m, c]),
                        "ci_high": float(high[m, c]),
                    }
                )
        for r in chosen:
            r["n_recommended"] = len(chosen)
        rows += sorted(chosen, key=lambda r: -r["value"])
    out = pd.DataFrame(rows)
    out["tie_rule"] = tie_rule
    return out


def recommendation_tables(ctx: RegimeContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `recommendation`: `recommend` on the regime's paired replicates with the configured
    tie rule (none with fewer than 2 complete models), only where the run's leaderboard ranks the (category,
    model): a category or macro that lacks a failed task is never recommended on (`leaderboard.ranked_rows`)."""
    if ctx.replicates is None:
        return {}
    rule = ctx.run.settings["recommendation"]["tie_rule"]
    rec = recommend(ctx.replicates, confidence=ctx.run.confidence, tie_rule=rule)
    return {"recommendations": ranked_rows(rec, ctx.run.board, ctx.protocol.protocol, ctx.regime)}
