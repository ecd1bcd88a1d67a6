"""The pretraining of GENEB's reference language models (geneb.zeroshot.reference_lms): a short seeded run on real
promoter sequences writes folders the llr scorer loads with their trained head; training lowers the loss, the same
seed gives the same weights, and the trained causal model prefers real sequences to their shuffles."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pandas as pd
import pytest

from extraction_support import spec
from geneb.registry.load import extraction_settings
from geneb.zeroshot.llr import LanguageModel, load_language_model, score_llr
from geneb.zeroshot.reference_lms import _PROVENANCE_FILE, ReferenceLMSettings, pretrain_reference_lm
from geneb.zeroshot.task import ZeroShotTask

TASK = "gb_human_nontata_promoters__resplit"


@pytest.fixture(scope="module")
def sequences(shared):
    return pd.read_csv(shared / "data" / "tasks" / TASK / "train.csv.gz")["sequence"].astype(str).tolist()[:400]


@pytest.mark.parametrize("kind,family", [("masked", "hf-encoder"), ("causal", "hf-decoder")])
def test_a_short_pretraining_writes_a_loadable_trained_head(kind, family, sequences, tmp_path, capsys):
    settings = ReferenceLMSettings(kind=kind, hidden=32, window=64, steps=40, batch=16, lr=3e-3, seed=1)
    record = pretrain_reference_lm(tmp_path / "a", sequences, settings, data={"task": TASK})
    # the progress line a user watches (stderr, also off a terminal): steps done of all and the last loss
    progress = capsys.readouterr().err
    assert f"pretraining the {kind} reference LM" in progress and "40/40" in progress and "loss=" in progress
    curve = record["loss_every_10_steps"]
    assert curve[-1] < curve[0] - 0.2, curve  # it learns (from about ln 10 for 10 tokens)
    saved = json.loads((tmp_path / "a" / _PROVENANCE_FILE).read_text())
    assert saved["settings"]["seed"] == 1 and saved["data"]["task"] == TASK
    module, _, name = saved["builder"].rpartition(".")  # the provenance names the function that made it
    assert getattr(importlib.import_module(module), name) is pretrain_reference_lm
    entry = spec(tmp_path / "a", family, {"max_tokens": 256})
    model = load_language_model(extraction_settings({"models": {kind: entry}}, kind, {}), head=kind)
    assert isinstance(model, LanguageModel)  # the head's tensors are in the files
    rng = np.random.default_rng(0)
    real = [s[:64] for s in sequences[:6]]
    shuffled = ["".join(rng.permutation(list(s))) for s in real]
    task = ZeroShotTask(
        name="real-vs-shuffled",
        kind="paired",
        rows=pd.DataFrame({"sequence_a": real, "sequence_b": shuffled}),
        data_sha256="0" * 64,
    )
    scores = score_llr(model, task)["score"].to_numpy()
    assert np.isfinite(scores).all()
    if kind == "causal":
        assert (scores > 0).all(), scores  # a model that learnt promoter statistics prefers the real ones


def test_the_same_seed_gives_the_same_weights(sequences, tmp_path):
    from safetensors.torch import load_file

    settings = ReferenceLMSettings(kind="causal", hidden=16, layers=1, window=32, steps=3, batch=4, seed=5)
    pretrain_reference_lm(tmp_path / "a", sequences, settings)
    pretrain_reference_lm(tmp_path / "b", sequences, settings)
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
