"""Probe vs fine-tune (geneb.analysis.controls): Kendall tau per category and macro with its task-bootstrap
interval, the winner change, and each model's gain with the paired interval over test rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import matthews_corrcoef

from geneb.analysis.controls import finetune_vs_probe_tables
from geneb.analysis.inputs import RunContext

SETTINGS = {"confidence": 0.95, "bootstrap": {"n_resamples": 300, "seed": 0}}
#: accuracy per (protocol, model) on every task; fine-tuning reverses the order of a and b and lifts c a lot
ACC = {
    ("geneb-paper", "a"): 0.8,
    ("geneb-paper", "b"): 0.7,
    ("geneb-paper", "c"): 0.6,
    ("finetune-lora", "a"): 0.7,
    ("finetune-lora", "b"): 0.8,
    ("finetune-lora", "c"): 0.95,
}
TASKS = [("t1", "Promoters"), ("t2", "Promoters"), ("t3", "Enhancers")]


def _context(root):
    rng = np.random.default_rng(3)
    cells = []
    for task, category in TASKS:
        y = rng.integers(0, 2, 300)
        for (protocol, model), acc in ACC.items():
            preds = [np.where(rng.random(len(y)) < acc, y, 1 - y) for _ in range(2)]
            frame = pd.concat(
                pd.DataFrame({"regime": "full", "seed": s, "row": np.arange(len(y)), "y_true": y, "y_pred": p})
                for s, p in enumerate(preds)
            )
            (root / protocol / model).mkdir(parents=True, exist_ok=True)
            frame.to_parquet(root / protocol / model / f"{task}.parquet")
            value = float(np.mean([matthews_corrcoef(y, p) for p in preds]))
            cells.append(
                {
                    "protocol": protocol,
                    "model": model,
                    "task": task,
                    "category": category,
                    "regime": "full",
                    "value": value,
                }
            )
    used = pd.DataFrame(cells)
    return RunContext(
        scores=used.assign(metric="MCC"),
        model_meta=pd.DataFrame(index=pd.Index(["a", "b", "c"], name="model")),
        task_meta=None,
        declared_pairs=[],
        settings=SETTINGS,
        used=used,
        contaminated=used.iloc[:0],
        board=pd.DataFrame(),
        predictions_root=root,
    ), used


def test_tau_winner_and_gain(tmp_path):
    ctx, used = _context(tmp_path)
    table = finetune_vs_probe_tables(ctx)["finetune_vs_probe"]
    rank = table[table["kind"] == "ranking"].set_index("category")
    means = used.groupby(["protocol", "model"])["value"].mean()
    expect = kendalltau(means["geneb-paper"].to_numpy(), means["finetune-lora"].to_numpy()).statistic
    assert rank.loc["macro", "kendall_tau"] == pytest.approx(expect)
    assert rank.loc["macro", "winner_probe"] == "a" and rank.loc["macro", "winner_finetune"] == "c"
    assert bool(rank.loc["macro", "winner_changed"])
    assert rank.loc["macro", "tau_ci_low"] <= rank.loc["macro", "kendall_tau"] <= rank.loc["macro", "tau_ci_high"]
    assert pd.isna(rank.loc["Enhancers", "tau_ci_low"]) and "one task" in rank.loc["Enhancers", "note"]
    gain = table[(table["kind"] == "gain") & (table["level"] == "macro")].set_index("model")
    assert gain.loc["c", "gain"] == pytest.approx(means["finetune-lora"]["c"] - means["geneb-paper"]["c"])
    assert gain.loc["c", "gain_ci_low"] > 0.3  # 0.6 -> 0.95 accuracy on 900 rows
    assert gain.loc["a", "gain_ci_high"] < 0  # 0.8 -> 0.7
    assert ctx.summary["finetune_vs_probe"]["headlines"][0]["winner_changed"] is True
    pd.testing.assert_frame_equal(table, finetune_vs_probe_tables(_context(tmp_path)[0])["finetune_vs_probe"])


def test_no_finetune_rows_gives_an_empty_table_with_a_note(tmp_path):
    ctx, used = _context(tmp_path)
    ctx.used = used[used["protocol"] == "geneb-paper"]
    assert finetune_vs_probe_tables(ctx)["finetune_vs_probe"].empty
    assert "finetune.yaml" in ctx.summary["finetune_vs_probe"]["note"]


def test_no_model_with_both_protocols_on_every_task_gives_rows_without_a_winner(tmp_path):
    """Every model a fine-tuned task short (e.g. collapsed fine-tunes left out): the macro ranking row has no winner
    and says why, and the summary records None, not an error (the shipped fine-tune overlay stopped here)."""
    ctx, used = _context(tmp_path)
    short = {"a": "t1", "b": "t2", "c": "t3"}  # each model lacks one fine-tuned task
    ctx.used = used[~used.apply(lambda r: r["protocol"] == "finetune-lora" and short[r["model"]] == r["task"], axis=1)]
    table = finetune_vs_probe_tables(ctx)["finetune_vs_probe"]
    macro = table[(table["kind"] == "ranking") & (table["level"] == "macro")].iloc[0]
    assert pd.isna(macro["winner_changed"]) and macro["n_models"] == 0 and "fewer than 2 models" in macro["note"]
    (headline,) = ctx.summary["finetune_vs_probe"]["headlines"]
    assert headline["winner_changed"] is None and headline["winner_probe"] is None and headline["n_models"] == 0
    from geneb.figures.evaluation import _finetune_vs_probe

    figure = _finetune_vs_probe(table, {}, protocol="geneb-paper", regime="full")  # the figure says so too
    assert "no macro ranking (fewer than 2 models" in figure.axes[0].get_title()
