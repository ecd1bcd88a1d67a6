"""The fine-tune job end to end on a real checkpoint and a real capped task: score rows like a probe's."""

from __future__ import annotations

import numpy as np

from geneb.core import integrity
from geneb.finetune.job import _FINETUNE_ATTR
from geneb.tables.aggregate import concat_tables
from geneb.tables.scores import check_scores


def test_finetune_rows_have_the_score_table_contract(run_job, recipe_settings, tmp_path):
    scores = run_job(recipe_settings)
    check_scores(scores)  # the same validation aggregation applies
    assert set(scores["protocol"]) == {"finetune-lora"}
    mcc = scores[scores["metric"] == "MCC"]
    assert sorted(set(mcc["regime"])) == ["10shot", "full"]
    assert sorted(set(mcc["seed"])) == [13, 17]
    assert (mcc["ci_low"] <= mcc["value"]).all() and (mcc["value"] <= mcc["ci_high"]).all()
    assert set(mcc["C_selection"]) == {"lora+head"}
    assert mcc["config_hash"].nunique() == 1
    meta = integrity.read_parquet(tmp_path / "scores.parquet").attrs[_FINETUNE_ATTR]
    assert {c["method"] for c in meta["cells"]} == {"lora+head"}
    assert all(t.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) for t in meta["cells"][0]["targets"])
    for cell in meta["cells"]:  # every run's validation losses and its collapse mark (geneb.tables.collapse)
        assert len(cell["val_losses"]) == cell["epochs_run"] and np.isfinite(cell["val_losses"]).all()
        assert cell["val_loss_improved"] == (min(cell["val_losses"][1:]) < cell["val_losses"][0])
        run = mcc[(mcc["regime"] == cell["regime"]) & (mcc["seed"] == cell["seed"])].iloc[0]
        collapsed = bool(run["degenerate_predictions"]) or not cell["val_loss_improved"]
        assert cell["status"] == ("collapsed" if collapsed else "ok")
        assert bool(cell["collapse_reason"]) == collapsed
    aggregated = concat_tables([tmp_path / "scores.parquet"], tmp_path / "all.parquet")
    marks = {(c["regime"], c["seed"]): c["status"] for c in meta["cells"]}
    assert [marks[(r, s)] for r, s in zip(aggregated["regime"], aggregated["seed"])] == list(
        aggregated["finetune_status"]
    )
    assert not (tmp_path / "scratch").exists()  # checkpoints removed: no weights kept by default
    preds = integrity.read_parquet(tmp_path / "preds.parquet")
    assert len(preds) == 4 * 30 and np.isin(preds["y_pred"], [0, 1]).all()
