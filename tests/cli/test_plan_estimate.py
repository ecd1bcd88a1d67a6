"""`geneb plan` on the quickstart config, in process: sizes from the mirror's meta.json under the config's caps,
hours from a configured or a measured device rate, and the estimate's pieces against their formulas."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from geneb.cli.app import main
from geneb.cli.models import _load_run_config
from geneb.registry.flops import architecture, forward_flops
from geneb.registry.load import load_registry
from geneb.run.estimate import batch_memory_bytes, estimate, model_settings, sequence_flops, task_size


@pytest.fixture(scope="module")
def quickstart(repo):
    config = _load_run_config([str(repo / "config" / "config.yaml")])
    registry = load_registry(repo / config["model_sheet"])
    return config, registry


def test_plan_prints_every_model_the_total_and_the_biggest_jobs(repo, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(repo)
    assert main(["plan", "--device-tflops", "0.05", "--workdir", str(tmp_path), "--top", "3"]) == 0
    out = capsys.readouterr().out
    config = _load_run_config(["config/config.yaml"])
    for model in config["models"]:
        assert f"{model}: " in out  # its rate basis line
    assert "total" in out and "configured 0.05 TFLOP/s" in out and "biggest jobs (of 65):" in out
    assert out.count(" x ") == 3


def test_sizes_follow_the_caps_and_the_meta_file(repo, quickstart, tmp_path):
    config, _ = quickstart
    task = "gue_prom_core_all"  # 47,356 train and 5,920 test rows of 70 bases, capped at 2,000 and 1,000
    size = task_size(config, task, workdir=repo)
    if size.source.startswith("prepared"):
        pytest.skip("a prepared folder of the task exists in the checkout")
    assert (size.sequences, size.bases) == (3000, 3000 * 70) and size.source.startswith("meta.json")
    config = {**config, "caps": {"default": {"max_train": 10, "max_test": None}, "per_task": {}}}
    assert task_size(config, task, workdir=tmp_path / "nowhere").sequences == 0  # no mirror there: unsized
    assert task_size(config, task, workdir=repo).sequences == 10 + 5920


def test_estimate_is_flops_over_the_rate(repo, quickstart, monkeypatch):
    monkeypatch.chdir(repo)
    config, registry = quickstart
    config = {**config, "tasks": ["gue_prom_core_all"], "models": ["mistral-dna-1m-ft-prom", "kmer-3to6"]}
    settings = model_settings(config, registry, config["models"])
    table, jobs = estimate(config, registry, settings, device_tflops=2.0)
    arch = architecture(registry.models["mistral-dna-1m-ft-prom"])
    row = table.set_index("model").loc["mistral-dna-1m-ft-prom"]
    # 3,000 rows of 70 bases = 14 BPE tokens each at 5 bases per token
    assert row["flops"] == pytest.approx(3000 * forward_flops(arch, 14).total)
    assert row["hours"] == pytest.approx(row["flops"] / 2e12 / 3600)
    assert row["peak_memory_bytes"] == pytest.approx(batch_memory_bytes(arch, int(row["batch_tokens"]), "float32"))
    assert np.isnan(table.set_index("model").loc["kmer-3to6", "hours"])
    # a measured rate: the same model measured at 100 s for this task's FLOPs runs at FLOPs / 100 s
    measured = pd.DataFrame(
        {"model": ["mistral-dna-1m-ft-prom"], "task": ["gue_prom_core_all"], "hardware": ["cpu-x"],
         "seconds_compute": [100.0], "forward_passes": pd.array([1], dtype="Int64")}
    )  # fmt: skip
    table, _ = estimate(config, registry, settings, measured=measured, hardware="cpu-x")
    row = table.set_index("model").loc["mistral-dna-1m-ft-prom"]
    assert row["seconds"] == pytest.approx(100.0) and row["rate_basis"] == "measured on cpu-x"
    with pytest.raises(ValueError, match="no device rate"):
        estimate(config, registry, settings)


def test_prepared_lengths_are_exact(quickstart, tmp_path):
    config, registry = quickstart
    folder = tmp_path / "resources" / "tasks" / "t" / "abc"
    folder.mkdir(parents=True)
    for split, seqs in (("train", ["ACGT" * 10, "AC"]), ("test", ["A" * 7])):
        pd.DataFrame({"sequence": seqs}).to_parquet(folder / f"{split}.parquet")
    card = {"caps": {}, "splits": {"train": {"n": 2}, "test": {"n": 1}}}
    (folder / "card.json").write_text(json.dumps(card))
    size = task_size({"caps": {"default": {}, "per_task": {}}}, "t", workdir=tmp_path)
    assert size.lengths.tolist() == [40, 2, 7] and size.source.startswith("prepared")
    # a cap that would cut the training split is not the one this folder was made under
    assert task_size({"caps": {"default": {"max_train": 1}}}, "t", workdir=tmp_path).source == "unsized"
    arch = architecture(registry.models["hyenadna-tiny-1k-ft-anticapt"])
    assert sequence_flops(arch, size.lengths) == pytest.approx(sum(forward_flops(arch, n).total for n in (40, 2, 7)))
