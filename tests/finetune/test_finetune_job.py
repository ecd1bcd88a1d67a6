"""The fine-tune job end to end on a real checkpoint and a real capped task: score rows like a probe's."""

from __future__ import annotations

import numpy as np

from geneb.core import integrity
from geneb.finetune.job import _FINETUNE_ATTR
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
    assert not (tmp_path / "scratch").exists()  # checkpoints removed: no weights kept by default
    preds = integrity.read_parquet(tmp_path / "preds.parquet")
    assert len(preds) == 4 * 30 and np.isin(preds["y_pred"], [0, 1]).all()
