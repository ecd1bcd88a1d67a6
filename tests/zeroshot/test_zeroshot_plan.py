"""geneb.zeroshot.plan: the zero-shot stage's part of the run plan (which tasks, models and scorers; every path
keyed on what decides its content; the Markov background never holding a task's own sources)."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from geneb.core.provenance import params_hash
from geneb.run.plan import plan_run

REPO = Path(__file__).resolve().parents[2]
ZS_TASKS = ["zs_real_vs_shuffled", "zs_stop_gain_vs_synonymous"]


class _Log:
    def info(self, msg: str) -> None: ...

    def warning(self, msg: str) -> None: ...


def _config(shared, **zeroshot) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(
        task_source=str(shared / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(REPO / "config" / "models.yaml"),
        model_revisions=str(REPO / "config" / "model_revisions.yaml"),
        tasks=["prelnc_ath_lncrna_vs_mrna__resplit", "idna_ms_5hmc_h_sapiens", "gue_prom_core_all"],
        models=["kmer-3", "mistral-dna-1m-ft-prom"],
        zeroshot={"tasks": list(ZS_TASKS), "task_sheet": str(REPO / "config" / "zeroshot_tasks.tsv"), **zeroshot},
    )
    return config


def _plan(config: dict):
    return plan_run(copy.deepcopy(config), main_process=False, conda_deploys=False, partial_file=None, log=_Log())


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv("GENEB_TASK_SOURCE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_no_zeroshot_section_adds_no_targets(shared, env):
    config = _config(shared)
    config["zeroshot"]["tasks"] = []
    plan = _plan(config)
    assert plan.zeroshot.outputs() == [] and plan.zeroshot.trusted_files() == []
    assert not any("zeroshot" in p for p in plan.final_outputs())


def test_targets_paths_and_scorers(shared, env):
    plan = _plan(_config(shared))
    outputs = plan.final_outputs()
    assert "results/tables/zeroshot_leaderboard.parquet" in outputs and "results/figures/zeroshot.png" in outputs
    assert "results/tables/zeroshot_shortcuts.parquet" in outputs  # the model-free baselines beside the models
    # a builder past version 1 keys its task folders on the version: the matched stop-gain rows are rebuilt
    assert plan.zeroshot.task_params(ZS_TASKS[1])["builder_version"] == 2
    assert "builder_version" not in plan.zeroshot.task_params(ZS_TASKS[0])
    assert len(plan.zeroshot.score_files()) == 4  # 2 models x 2 tasks
    score_file = plan.zeroshot.score_file("kmer-3", ZS_TASKS[0])
    assert score_file.startswith(f"resources/zeroshot/scores/kmer-3/{plan.extraction_hashes['kmer-3']}/")
    assert set(plan.zeroshot.score_files()) <= set(plan.trusted.files())
    # the fine-tuned checkpoints keep no language-model head: embedding only, by the registry's default
    assert plan.zeroshot.scorers("mistral-dna-1m-ft-prom") == ["embedding"]
    assert plan.zeroshot.lm_head("mistral-dna-1m-ft-prom") == "none"
    forced = _plan(_config(shared, scorers=["llr", "embedding"]))
    assert forced.zeroshot.scorers("kmer-3") == ["llr", "embedding"]
    assert forced.zeroshot.score_file("kmer-3", ZS_TASKS[0]) != score_file  # the scorers are in the key


def test_the_background_leaves_out_the_tasks_the_rows_were_built_from(shared, env):
    plan = _plan(_config(shared))
    # zs_stop_gain_vs_synonymous is built from the Coding/NC task's mRNAs: never its own background
    background = plan.zeroshot.background("zs_stop_gain_vs_synonymous")
    assert "prelnc_ath_lncrna_vs_mrna__resplit" not in background
    assert background == ["idna_ms_5hmc_h_sapiens", "gue_prom_core_all"]
    inputs = plan.zeroshot.baseline_inputs("zs_stop_gain_vs_synonymous")
    assert inputs["background"] == [plan.layout.task_file(t, "train.parquet") for t in background]
    declared = _plan(_config(shared, background=["idna_ms_5hmc_h_sapiens", "prelnc_ath_lncrna_vs_mrna__resplit"]))
    assert declared.zeroshot.background("zs_stop_gain_vs_synonymous") == ["idna_ms_5hmc_h_sapiens"]
    assert declared.zeroshot.baseline_file("zs_stop_gain_vs_synonymous") != plan.zeroshot.baseline_file(
        "zs_stop_gain_vs_synonymous"
    )


def test_the_task_hash_follows_the_seed_and_the_sources_content_not_their_path(shared, env, tmp_path):
    plan = _plan(_config(shared))
    thash = plan.zeroshot.task_hash(ZS_TASKS[0])
    assert thash == params_hash(plan.zeroshot.task_params(ZS_TASKS[0]))
    assert _plan(_config(shared, build_seed=1)).zeroshot.task_hash(ZS_TASKS[0]) != thash
    # the same source files under another folder: the same task
    entry = plan.zeroshot.entry(ZS_TASKS[0])
    mirror = tmp_path / "mirror"
    for task in entry.source_tasks:
        shutil.copytree(shared / "data" / "tasks" / task, mirror / task)
    moved = _plan(_config(shared, build_source=str(mirror)))
    assert moved.zeroshot.task_hash(ZS_TASKS[0]) == thash
    # an edited source file: a new task
    train = next((mirror / entry.source_tasks[0]).glob("train.*"))
    train.write_bytes(train.read_bytes() + b"\n")
    assert _plan(_config(shared, build_source=str(mirror))).zeroshot.task_hash(ZS_TASKS[0]) != thash
    with pytest.raises(ValueError, match="this config's is"):
        plan.zeroshot.task_params(ZS_TASKS[0], "0" * 12)


def test_config_mistakes_stop_the_plan_all_at_once(shared, env):
    config = _config(shared, models=["kmer-3", "kmer-9"], background=["gue_emp_h3__devtrain"])
    config["zeroshot"]["tasks"] = ["zs_nope", ZS_TASKS[0]]
    with pytest.raises(ValueError) as err:
        _plan(config)
    message = str(err.value)
    assert "zs_nope" in message and "catalogued: zs_real_vs_shuffled" in message
    assert "kmer-9" in message and "gue_emp_h3__devtrain" in message
    assert message.startswith("config zeroshot section")
