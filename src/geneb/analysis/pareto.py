"""Quality versus cost: the Pareto-optimal models per (protocol, regime, category), `results/tables/pareto.parquet`.

A model is Pareto-optimal in its group when no other model of the group scores at least as high (leaderboard
`value`, mean MCC) at no more cost, better in one of the two (the usual dominance order; Deb 2001,
"Multi-Objective Optimization using Evolutionary Algorithms", section 2.4). Only ranked leaderboard rows take part.

Two cost bases, each its own front (`cost_basis`):

* measured: device hours per gigabase of input on one `hardware`, from the run's cost table (`geneb.tables.cost`):
  the model's compute seconds over its input bases (every task), x 1e9 / 3600; a model without a recorded row on
  that hardware has no measured row.
* analytic: forward FLOPs per gigabase of input from the architecture (`geneb.registry.flops`, `flops_per_kb` x
  1e6), for every model of the registry, measured or not; hardware "any".

The score's interval comes from the rank-interval table (`ci_low`, `ci_high` of the same protocol, regime,
category and model) where given.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

COLUMNS = (
    "protocol", "regime", "category", "model", "value", "ci_low", "ci_high", "cost", "cost_unit", "cost_basis",
    "hardware", "pareto_optimal", "n_models", "n_pareto",
)  # fmt: skip
MEASURED_UNIT = "device_hours_per_gb"
ANALYTIC_UNIT = "flops_per_gb"


def pareto_mask(score: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """bool (n,): True where no other point has score >= and cost <=, one of them strictly (higher score and lower
    cost are better). score, cost: float (n,). Raises ValueError for NaN or unequal lengths."""
    score, cost = np.asarray(score, float), np.asarray(cost, float)
    if score.shape != cost.shape:
        raise ValueError(f"pareto: {len(score)} scores and {len(cost)} costs")
    if np.isnan(score).any() or np.isnan(cost).any():
        raise ValueError("pareto: a score or cost is NaN; drop such models first")
    geq = (score[None, :] >= score[:, None]) & (cost[None, :] <= cost[:, None])
    strict = (score[None, :] > score[:, None]) | (cost[None, :] < cost[:, None])
    return np.asarray(~(geq & strict).any(axis=1), dtype=bool)


def measured_costs(cost: pd.DataFrame) -> pd.DataFrame:
    """Per (model, hardware): `cost` device hours per gigabase (compute seconds / bases x 1e9 / 3600) over the rows
    with recorded bases; models without any are left out."""
    rows = cost[cost["bases"].notna() & (cost["bases"].astype("Float64") > 0)]
    sums = rows.groupby(["model", "hardware"], as_index=False)[["seconds_compute", "bases"]].sum()
    sums["cost"] = sums["seconds_compute"] / sums["bases"].astype(float) * 1e9 / 3600
    return sums[["model", "hardware", "cost"]]


def pareto_table(
    leaderboard: pd.DataFrame,
    *,
    measured: pd.DataFrame | None = None,
    analytic: Mapping[str, float] | None = None,
    intervals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The Pareto table (COLUMNS) of the leaderboard's ranked rows. measured: `measured_costs(...)` (model,
    hardware, cost); analytic: {model: FLOPs per gigabase}; intervals: the rank-interval table. Raises ValueError
    when neither cost is given."""
    if measured is None and analytic is None:
        raise ValueError("pareto: give measured costs, analytic costs or both")
    board = leaderboard[leaderboard["rank"].notna()][["protocol", "regime", "category", "model", "value"]]
    if intervals is not None:
        keys = ["protocol", "regime", "category", "model"]
        board = board.merge(intervals[[*keys, "ci_low", "ci_high"]], on=keys, how="left", validate="one_to_one")
    else:
        board = board.assign(ci_low=np.nan, ci_high=np.nan)
    parts = []
    if measured is not None and len(measured):
        parts.append(board.merge(measured, on="model").assign(cost_unit=MEASURED_UNIT, cost_basis="measured"))
    if analytic is not None:
        costs = pd.DataFrame({"model": list(analytic), "cost": [float(v) for v in analytic.values()]})
        parts.append(
            board.merge(costs, on="model").assign(hardware="any", cost_unit=ANALYTIC_UNIT, cost_basis="analytic")
        )
    if not parts:
        return pd.DataFrame(columns=list(COLUMNS))
    table = pd.concat(parts, ignore_index=True).dropna(subset=["value", "cost"])
    groups = ["protocol", "regime", "category", "cost_basis", "hardware"]
    table["pareto_optimal"] = False
    for _, idx in table.groupby(groups, sort=False).groups.items():
        sub = table.loc[idx]
        table.loc[idx, "pareto_optimal"] = pareto_mask(sub["value"].to_numpy(), sub["cost"].to_numpy())
    grouped = table.groupby(groups, sort=False)
    table["n_models"] = grouped["model"].transform("size")
    table["n_pareto"] = grouped["pareto_optimal"].transform("sum").astype(int)
    return table[list(COLUMNS)].sort_values([*groups, "cost"], kind="stable").reset_index(drop=True)


def best_under_budget(table: pd.DataFrame, *, category: str, regime: str, protocol: str, budget: float,
                      cost_basis: str = "measured", hardware: str | None = None) -> pd.Series | None:  # fmt: skip
    """The highest-scoring row of (protocol, regime, category, cost_basis[, hardware]) whose cost is at most
    `budget` (ties: the cheaper), None when none fits. The best under a budget is always Pareto-optimal."""
    rows = table[
        (table["protocol"] == protocol) & (table["regime"] == regime) & (table["category"] == category)
        & (table["cost_basis"] == cost_basis) & (table["cost"] <= budget)
    ]  # fmt: skip
    if hardware is not None:
        rows = rows[rows["hardware"] == hardware]
    if rows.empty:
        return None
    return rows.sort_values(["value", "cost"], ascending=[False, True], kind="stable").iloc[0]


def write_pareto(leaderboard: str, intervals: str, cost: str, model_sheet: str, out_path: str) -> pd.DataFrame:
    """Rule pareto_table: the Pareto table of a run (its leaderboard, rank intervals and cost table; analytic
    FLOPs of every leaderboard model in the registry `model_sheet`) written to `out_path` (parquet, atomically)."""
    from geneb.core import integrity
    from geneb.registry.flops import architecture, flops_per_kb
    from geneb.registry.load import load_registry

    board = integrity.read_parquet(leaderboard)
    registry = load_registry(model_sheet)
    models = [m for m in dict.fromkeys(board["model"]) if m in registry.models]
    analytic = {m: flops_per_kb(architecture(registry.models[m])).total * 1e6 for m in models}
    table = pareto_table(
        board,
        measured=measured_costs(integrity.read_parquet(cost)),
        analytic=analytic,
        intervals=integrity.read_parquet(intervals),
    )
    integrity.write_parquet(table, out_path)
    return table
