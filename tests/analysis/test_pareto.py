"""The quality-versus-cost front on a synthetic leaderboard: dominance, one front per cost basis and hardware,
and the best model under a budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geneb.analysis.pareto import (
    COLUMNS,
    best_under_budget,
    measured_costs,
    pareto_mask,
    pareto_table,
)
from geneb.cli.app import main


def _board() -> pd.DataFrame:
    """Five ranked models and one unranked, in one (protocol, regime, category)."""
    rows = [("a", 0.50, 1), ("b", 0.40, 2), ("c", 0.45, 3), ("d", 0.30, 4), ("e", 0.10, 5), ("u", 0.90, None)]
    return pd.DataFrame(
        {
            "protocol": "geneb-paper",
            "regime": "full",
            "category": "Promoters",
            "model": [r[0] for r in rows],
            "value": [r[1] for r in rows],
            "rank": pd.array([r[2] for r in rows], dtype="Int64"),
        }
    )


#: device hours per Gb of each model: c costs more than a and scores less; e costs what d costs and scores less
_HOURS = {"a": 10.0, "b": 2.0, "c": 12.0, "d": 1.0, "e": 1.0, "u": 0.1}


def test_pareto_mask_keeps_the_non_dominated():
    score = np.array([0.5, 0.4, 0.45, 0.3, 0.1])
    cost = np.array([10.0, 2.0, 12.0, 1.0, 1.0])
    # c costs more than a and scores less; e costs what d costs and scores less
    assert pareto_mask(score, cost).tolist() == [True, True, False, True, False]
    # two equal points dominate neither
    assert pareto_mask(np.array([0.2, 0.2]), np.array([1.0, 1.0])).tolist() == [True, True]
    with pytest.raises(ValueError, match="NaN"):
        pareto_mask(np.array([np.nan]), np.array([1.0]))


def test_table_has_a_front_per_basis_and_leaves_unranked_rows_out():
    cost = pd.DataFrame(
        {
            "model": list(_HOURS),
            "hardware": "cpu-x",
            "seconds_compute": [h * 3600 for h in _HOURS.values()],
            "bases": pd.array([1_000_000_000] * len(_HOURS), dtype="Int64"),
        }
    )
    measured = measured_costs(cost)
    assert measured.set_index("model")["cost"].to_dict() == pytest.approx(_HOURS)
    analytic = {"a": 1e12, "b": 5e12, "c": 1e11, "d": 1e13, "e": 1e13}
    table = pareto_table(_board(), measured=measured, analytic=analytic)
    assert list(table.columns) == list(COLUMNS) and "u" not in set(table["model"])
    front = table[table["pareto_optimal"]].groupby("cost_basis")["model"].apply(sorted).to_dict()
    assert front == {"measured": ["a", "b", "d"], "analytic": ["a", "c"]}
    assert set(table.loc[table["cost_basis"] == "measured", "n_pareto"]) == {3}
    best = best_under_budget(table, category="Promoters", regime="full", protocol="geneb-paper", budget=5.0)
    assert best is not None and best["model"] == "b" and bool(best["pareto_optimal"])
    assert best_under_budget(table, category="Promoters", regime="full", protocol="geneb-paper", budget=0.5) is None


def test_recommend_with_a_budget_reads_the_pareto_table(tmp_path, capsys):
    cost = pd.DataFrame({"model": list(_HOURS), "hardware": "cpu-x", "cost": list(_HOURS.values())})
    table = pareto_table(_board(), measured=cost)
    table.loc[table["model"] == "b", ["ci_low", "ci_high"]] = (0.35, 0.45)
    (tmp_path / "tables").mkdir()
    table.to_parquet(tmp_path / "tables" / "pareto.parquet")
    argv = ["recommend", "--category", "Promoters", "--results-dir", str(tmp_path), "--max-gpu-hours-per-gb", "5"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "b (MCC 0.4000, interval 0.3500-0.4500), 2 device hours per Gb (measured on cpu-x)" in out
    assert main([*argv[:-1], "0.5"]) == 0 and "no model within 0.5" in capsys.readouterr().out


def test_finished_run_has_both_fronts(finished_run):
    """The small run's pareto.parquet: every ranked full-regime macro model on both bases, measured on the cost
    table's one hardware, at least one model on each front."""
    tables = finished_run / "results" / "tables"
    table = pd.read_parquet(tables / "pareto.parquet")
    cost = pd.read_parquet(tables / "cost.parquet")
    board = pd.read_parquet(tables / "leaderboard.parquet")
    ranked = set(board.loc[board["rank"].notna() & (board["category"] == "macro"), "model"])
    macro = table[table["category"] == "macro"]
    for basis in ("measured", "analytic"):
        rows = macro[macro["cost_basis"] == basis]
        assert set(rows["model"]) == ranked and rows.groupby("regime")["pareto_optimal"].any().all(), basis
    assert set(table.loc[table["cost_basis"] == "measured", "hardware"]) == set(cost["hardware"])
