"""Collapsed fine-tune runs (geneb.tables.collapse): a run that predicts one class, or whose validation loss never
fell below its first evaluation, is marked with its reason on the score table, leaderboard and per-task leaderboard,
and never ranked (no rank, Borda rank or tier); the shipped overlay runs 3 seeds, and every fine-tune row carries
the spread and the Student-t interval over them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from geneb.analysis import run as analysis_run
from geneb.core import integrity
from geneb.finetune.train import val_loss_trend
from geneb.probe.metrics import seed_summary
from geneb.tables.aggregate import concat_tables
from geneb.tables.collapse import FINETUNE_ATTR, run_status
from geneb.tables.scores import SCHEMA_VERSION

FT = "finetune-lora"
SEEDS = (13, 17, 42)
# (model, task) -> MCC per seed; model-c's Promoters run under seed 17 collapses (one class: MCC 0)
MCC = {
    ("model-a", "gue_prom_core_all"): (0.50, 0.55, 0.60),
    ("model-b", "gue_prom_core_all"): (0.40, 0.42, 0.44),
    ("model-c", "gue_prom_core_all"): (0.90, 0.00, 0.92),
    ("model-a", "ienhancer2l_enhancer_vs_non"): (0.30, 0.31, 0.32),
    ("model-b", "ienhancer2l_enhancer_vs_non"): (0.20, 0.25, 0.22),
    ("model-c", "ienhancer2l_enhancer_vs_non"): (0.35, 0.36, 0.30),
}
CATEGORY = {"gue_prom_core_all": "Promoters", "ienhancer2l_enhancer_vs_non": "Enhancers"}


def test_a_one_class_predictor_is_collapsed_with_its_reason():
    mark = run_status(np.zeros(200, dtype=int), np.array([0, 1]), True)
    assert mark["status"] == "collapsed"
    assert "predicted one class (0) for all 200 test rows" in mark["collapse_reason"]
    assert run_status(np.array([0, 1, 1]), np.array([0, 1]), True) == {"status": "ok", "collapse_reason": ""}
    assert run_status(np.array([0, 1, 1]), np.array([0, 1]), None)["status"] == "ok"  # 1-shot: no validation split
    with pytest.raises(ValueError, match="no test predictions"):
        run_status(np.array([]), np.array([0, 1]), True)


def test_a_validation_loss_that_never_improves_is_collapsed():
    flat = [{"val_loss": v} for v in (0.6931, 0.6935, 0.6940, 0.6932)]
    first, best, improved = val_loss_trend(flat)
    assert (first, best, improved) == (0.6931, 0.6932, False)
    mark = run_status(np.array([0, 1, 0]), np.array([0, 1]), improved, first_val_loss=first, best_val_loss=best)
    assert mark["status"] == "collapsed" and "never fell below its first evaluation (0.6931" in mark["collapse_reason"]
    assert val_loss_trend([{"val_loss": 0.69}, {"val_loss": 0.60}])[2] is True
    assert val_loss_trend([{"val_loss": 0.69}])[2] is None  # one evaluation: cannot tell
    assert val_loss_trend([{"val_loss": math.nan}, {"val_loss": math.nan}])[2] is None  # no validation split


def _table(model: str, task: str, collapsed_seed: int | None) -> pd.DataFrame:
    """A fine-tune score table of one (model, task): MCC per seed, its seed summary as score_fits writes it."""
    values = MCC[(model, task)]
    s = seed_summary(np.array(values), 0.95)
    df = pd.DataFrame(
        {
            "schema_version": SCHEMA_VERSION,
            "protocol": FT,
            "model": model,
            "task": task,
            "category": CATEGORY[task],
            "regime": "full",
            "seed": list(SEEDS),
            "metric": "MCC",
            "value": list(values),
            "ci_low": [v - 0.05 for v in values],
            "ci_high": [v + 0.05 for v in values],
            "seed_mean": s["mean"],
            "seed_sd": s["sd"],
            "seed_ci_low": s["ci_low"],
            "seed_ci_high": s["ci_high"],
            "n_seeds": s["n"],
            "degenerate_predictions": [seed == collapsed_seed for seed in SEEDS],
        }
    )
    df.attrs[FINETUNE_ATTR] = {
        "cells": [
            {
                "regime": "full",
                "seed": seed,
                **(
                    run_status(np.zeros(30, dtype=int), np.array([0, 1]), True)
                    if seed == collapsed_seed
                    else {"status": "ok", "collapse_reason": ""}
                ),
            }
            for seed in SEEDS
        ]
    }
    return df


@pytest.fixture
def scores(tmp_path) -> pd.DataFrame:
    paths = []
    for model, task in MCC:
        path = tmp_path / f"{model}-{task}.parquet"
        integrity.write_parquet(
            _table(model, task, 17 if (model, task) == ("model-c", "gue_prom_core_all") else None), path
        )
        paths.append(path)
    return concat_tables(paths, tmp_path / "scores.parquet")


def test_the_score_table_marks_the_collapsed_run_and_carries_the_seed_spread(scores):
    c = scores[(scores["model"] == "model-c") & (scores["task"] == "gue_prom_core_all")].set_index("seed")
    assert c.loc[17, "finetune_status"] == "collapsed" and "one class" in c.loc[17, "collapse_reason"]
    assert list(c.loc[[13, 42], "finetune_status"]) == ["ok", "ok"] and set(c.loc[[13, 42], "collapse_reason"]) == {""}
    assert set(scores.loc[scores["model"] != "model-c", "finetune_status"]) == {"ok"}
    a = scores[(scores["model"] == "model-a") & (scores["task"] == "gue_prom_core_all")]
    assert set(a["seed_min"]) == {0.50} and set(a["seed_max"]) == {0.60}
    # the interval over seeds: Student-t with n - 1 degrees of freedom around the seed mean
    low, high = stats.t.interval(0.95, df=2, loc=0.55, scale=np.std([0.50, 0.55, 0.60], ddof=1) / np.sqrt(3))
    assert a["seed_ci_low"].iloc[0] == pytest.approx(low) and a["seed_ci_high"].iloc[0] == pytest.approx(high)
    assert (a["seed_ci_low"] < a["seed_min"]).all() and (a["seed_max"] < a["seed_ci_high"]).all()


def test_a_collapsed_cell_is_shown_with_its_reason_and_never_ranked(scores, repo):
    settings = analysis_run.resolve_settings(_analysis_settings(repo))
    meta = pd.DataFrame(index=pd.Index(["model-a", "model-b", "model-c"], name="model"))
    tables = analysis_run.leaderboard_tables(scores.assign(source="geneb"), meta, None, settings)
    board = tables["leaderboard"].set_index(["model", "category"])
    # ranked, model-c's Promoters mean (0.607, collapsed run included) would beat model-a's 0.55
    for column in ("Promoters", "macro", "micro"):
        row = board.loc[("model-c", column)]
        assert pd.isna(row["rank"]) and pd.isna(row["borda_rank"]) and not row["complete"]
        assert row["collapsed_tasks"] == "gue_prom_core_all"
        assert "fine-tune collapsed, not ranked (seed 17: predicted one class" in row["incomplete_reason"]
        if "tier" in board.columns:
            assert pd.isna(row["tier"])
    assert (
        board.loc[("model-c", "Enhancers"), "rank"] == 1
        and board.loc[("model-c", "Enhancers"), "collapsed_tasks"] == ""
    )
    assert board.loc[("model-a", "Promoters"), "rank"] == 1 and board.loc[("model-a", "Promoters"), "of"] == 2
    per_task = tables["leaderboard_tasks"].set_index(["model", "task"])
    cell = per_task.loc[("model-c", "gue_prom_core_all")]
    assert cell["finetune_status"] == "collapsed" and pd.isna(cell["rank"]) and "seed 17" in cell["collapse_reason"]
    assert cell["value"] == pytest.approx(np.mean([0.90, 0.00, 0.92])) and cell["seed_min"] == 0.0
    assert per_task.loc[("model-a", "gue_prom_core_all"), "rank"] == 1
    assert per_task.loc[("model-a", "gue_prom_core_all"), "finetune_status"] == "ok"


def _analysis_settings(repo) -> dict:
    """The `analysis:` section of the config as the schema's defaults fill it (snakemake.utils.validate)."""
    from snakemake.utils import validate

    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    validate(config, str(repo / "workflow" / "schemas" / "config.schema.yaml"))
    return config["analysis"]


def test_the_shipped_overlay_runs_at_least_three_seeds(repo):
    overlay = yaml.safe_load((repo / "config" / "finetune.yaml").read_text())
    seeds = overlay["finetune"][FT]["seeds"]
    assert len(seeds) >= 3 and len(set(seeds)) == len(seeds)
    paper = yaml.safe_load((repo / "config" / "config.yaml").read_text())["probe"]["geneb-paper"]["seeds"]
    assert set(seeds) <= set(paper)  # the probe's own shot draws
