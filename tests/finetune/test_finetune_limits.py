"""Bad input and limits of the fine-tune stage: a non-finite loss stops one cell only; the last-block fallback;
the recipe's validation; the validation split and schedule."""

from __future__ import annotations

import numpy as np
import pytest

from geneb.core import integrity
from geneb.finetune import train as train_mod
from geneb.finetune.job import _FINETUNE_ATTR
from geneb.finetune.recipe import NonFiniteLossError, RecipeConfigError, from_config
from geneb.finetune.train import _lr_factor, validation_split


def test_non_finite_loss_stops_that_cell_only(run_job, recipe_settings, tmp_path, monkeypatch):
    real = train_mod.train_cell

    def poisoned(adapted, rows, y, recipe, seed, **kw):
        if seed == 17 and "10shot" in kw["cell"]:
            with __import__("torch").no_grad():
                adapted.classifier.head.weight.fill_(float("nan"))
        return real(adapted, rows, y, recipe, seed, **kw)

    monkeypatch.setattr("geneb.finetune.job.train_cell", poisoned)
    scores = run_job(recipe_settings)
    mcc = scores[scores["metric"] == "MCC"]
    assert set(zip(mcc["regime"], mcc["seed"])) == {("full", 13), ("full", 17), ("10shot", 13)}
    failed = integrity.read_parquet(tmp_path / "scores.parquet").attrs[_FINETUNE_ATTR]["failed"]
    assert failed[0]["regime"] == "10shot" and failed[0]["seed"] == 17
    assert "NonFiniteLossError" in failed[0]["error"] and "epoch 0, step 0" in failed[0]["error"]


def test_every_cell_non_finite_fails_the_job(run_job, recipe_settings, monkeypatch):
    real = train_mod.train_cell

    def poisoned(adapted, rows, y, recipe, seed, **kw):
        with __import__("torch").no_grad():
            adapted.classifier.head.bias.fill_(float("inf"))
        return real(adapted, rows, y, recipe, seed, **kw)

    monkeypatch.setattr("geneb.finetune.job.train_cell", poisoned)
    with pytest.raises(NonFiniteLossError, match="every cell failed"):
        run_job(recipe_settings)


def test_family_without_targets_trains_last_block_and_head(run_job, recipe_settings, tmp_path):
    s = dict(recipe_settings, target_modules={"hf-encoder": ["query"]}, seeds=[13], few_shot_k=[])
    scores = run_job(s)
    assert set(scores["C_selection"]) == {"last_block+head"}
    cells = integrity.read_parquet(tmp_path / "scores.parquet").attrs[_FINETUNE_ATTR]["cells"]
    assert cells[0]["targets"] == ["layers.3"]


def test_recipe_refuses_bad_settings(config):
    probe = config["probe"]["geneb-paper"]
    good = config["finetune"]["finetune-lora"]
    with pytest.raises(RecipeConfigError, match="rank"):
        from_config({**good, "rank": 0}, probe)
    with pytest.raises(RecipeConfigError, match="seeds \\[5\\]"):
        from_config({**good, "seeds": [5]}, probe)
    with pytest.raises(RecipeConfigError, match="epochs"):
        from_config({k: v for k, v in good.items() if k != "epochs"}, probe)
    r = from_config(good, probe)
    assert r.recipe_hash() == from_config(dict(good), probe).recipe_hash()
    assert r.recipe_hash() != from_config({**good, "rank": 4}, probe).recipe_hash()


def test_validation_split_is_per_class_seeded_and_empty_at_one_shot(config):
    r = from_config(config["finetune"]["finetune-lora"], config["probe"]["geneb-paper"])
    y = np.array([0] * 30 + [1] * 10)
    fit, val = validation_split(y, r, 13)
    assert sorted(np.bincount(y[val]).tolist()) == [1, 3]
    assert len(np.intersect1d(fit, val)) == 0 and len(fit) + len(val) == 40
    assert np.array_equal(val, validation_split(y, r, 13)[1])
    assert not np.array_equal(val, validation_split(y, r, 17)[1])
    assert len(validation_split(np.array([0, 1]), r, 13)[1]) == 0
    assert _lr_factor(0, 100, r) == pytest.approx(0.1) and _lr_factor(99, 100, r) == pytest.approx(1 / 90)
