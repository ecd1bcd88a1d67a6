"""The finetune-lora protocol at planning (geneb.finetune.plan), with the shipped overlay config/finetune.yaml:
one table per fine-tunable (model, task) beside the probe tables, the probe's shot file, the k-mer model skipped
with its reason, resources from the model size, and the refusal of a model too large for the device."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

from geneb.run.plan import plan_run

REPO = Path(__file__).resolve().parents[2]


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str) -> None:
        self.lines.append(msg)

    def warning(self, msg: str) -> None:
        self.lines.append(msg)


@pytest.fixture(scope="module")
def overlay_config() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    update_config(config, yaml.safe_load((REPO / "config" / "finetune.yaml").read_text()))
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = str(REPO / config[key])
    config["task_source"] = str(REPO / config["task_source"])
    return config


def _plan(config, log=None):
    return plan_run(config, main_process=False, conda_deploys=False, partial_file=None, log=log or Log())


def test_overlay_plans_finetune_tables_beside_the_probes(overlay_config, monkeypatch):
    monkeypatch.chdir(REPO)
    plan = _plan(copy.deepcopy(overlay_config))
    tables = plan.probe_tables()
    ft = [t for t in tables if "/finetune-lora/" in t]
    assert len(ft) == 6 * 5 and not any("kmer-3to6" in t for t in ft)  # every torch model x task, no k-mer
    assert len(tables) - len(ft) == 7 * 5  # the probes of every model
    assert ft == plan.finetune.tables()
    assert plan.finetune.coverage() == {"kmer-3to6": "finetune-lora: skipped, it has no torch network (family kmer)"}
    task = plan.tasks[0]
    inputs = plan.finetune.inputs("mistral-dna-1m-ft-prom", task)
    assert inputs["shots"] == plan.layout.shot_file("geneb-paper", task)  # the probes' own draws
    params = plan.finetune.params("hyenadna-tiny-1k-ft-anticapt")
    assert params["recipe"]["seeds"] == [13, 17, 42] and params["extraction"]["family"] == "hyena"
    assert params["settings_hash"] == plan.extraction_hashes["hyenadna-tiny-1k-ft-anticapt"]
    assert plan.finetune.mem_mb("mistral-dna-1m-ft-prom", 2) == 2 * plan.finetune.memory_mb("mistral-dna-1m-ft-prom")
    assert plan.finetune.runtime("mistral-dna-1m-ft-prom", 1) == 60


def test_a_model_too_large_for_the_device_is_refused_with_its_estimate(overlay_config, monkeypatch):
    monkeypatch.chdir(REPO)
    config = copy.deepcopy(overlay_config)
    config["finetune"]["device_memory_mb"] = 1060
    with pytest.raises(ValueError, match=r"model random-esm-tiny: finetune-lora needs about 1071 MB .* 1060"):
        _plan(config)


def test_shots_from_must_be_a_run_protocol_and_the_recipe_valid(overlay_config, monkeypatch):
    monkeypatch.chdir(REPO)
    config = copy.deepcopy(overlay_config)
    config["finetune"]["finetune-lora"]["shots_from"] = "geneb-strict"
    with pytest.raises(ValueError, match="shots_from 'geneb-strict' is not in protocols"):
        _plan(config)
    config = copy.deepcopy(overlay_config)
    config["finetune"]["finetune-lora"]["seeds"] = [1]
    with pytest.raises(ValueError, match=r"seeds \[1\] are not among"):
        _plan(config)
