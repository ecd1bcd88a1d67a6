"""A user registry file beside GENEB's (config `registry_extra:`): a file of one `python` entry is merged with the
shipped config/models.yaml and planned through the real workflow (`snakemake -n`, planned in process); an id the
shipped registry has too is refused naming both files; a config setting naming an unknown model is refused naming
the config file and the setting."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.exceptions import WorkflowError

from geneb.registry.load import load_registry
from geneb.registry.registry import RegistryError
from workflow_support import dry_run, run_plan, run_snakemake, write_run_config

TASK = "idna_ms_4mc_c_equisetifolia"

MODEL = """
import numpy as np


class Encoder:
    def __init__(self, weights):
        self.weights = weights

    def embed(self, sequences):
        counts = np.array([[s.count(b) / max(len(s), 1) for b in "ACGT"] for s in sequences])
        return counts @ self.weights


def build(options):
    return Encoder(np.load(options["weights"]))
"""


def user_file(folder: Path, model: str = "mine") -> Path:
    """folder/my_models.yaml: a registry of one python entry (factory and weights beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_model.py").write_text(textwrap.dedent(MODEL))
    np.save(folder / "weights.npy", np.eye(4)[:, :3])
    entry = {"family": "python", "load": {"entry": "my_model.py:build", "options": {"weights": "weights.npy"}}}
    path = folder / "my_models.yaml"
    path.write_text(yaml.safe_dump({"models": {model: entry}}, sort_keys=False))
    return path


def test_a_file_of_one_entry_is_merged_with_the_shipped_registry(tmp_path, repo):
    extra = user_file(tmp_path / "mine")
    shipped = load_registry(repo / "config/models.yaml")
    merged = load_registry(repo / "config/models.yaml", extra=[extra])
    assert set(merged.models) - set(shipped.models) == {"mine"}
    # the factory path resolves against the user file's folder, not the shipped file's
    assert merged.raw["models"]["mine"]["load"]["entry"] == f"{(tmp_path / 'mine' / 'my_model.py')}:build"
    (tmp_path / "list.yaml").write_text("- mine\n")
    with pytest.raises(RegistryError, match="list.yaml: expected a mapping with a `models` mapping"):
        load_registry(repo / "config/models.yaml", extra=[tmp_path / "list.yaml"])


def test_an_id_of_the_shipped_registry_is_a_clash_naming_both_files(tmp_path, repo):
    shipped_id = next(iter(yaml.safe_load((repo / "config/models.yaml").read_text())["models"]))
    extra = user_file(tmp_path / "mine", model=shipped_id)
    with pytest.raises(RegistryError) as err:
        load_registry(repo / "config/models.yaml", extra=[extra])
    msg = str(err.value)
    assert f"model {shipped_id!r} of {extra} is already an entry of {repo / 'config/models.yaml'}" in msg
    second = user_file(tmp_path / "again")
    with pytest.raises(
        RegistryError, match=f"'mine' of {second} is already an entry of {user_file(tmp_path / 'mine')}"
    ):
        load_registry(repo / "config/models.yaml", extra=[tmp_path / "mine" / "my_models.yaml", second])


def configured_run(tmp_path: Path, shared: Path, models: list[str]) -> Path:
    run = tmp_path / "run"
    write_run_config(run, shared / "data" / "tasks", [TASK], models)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["registry_extra"] = [str(user_file(run / "config" / "mine"))]
    config["caps"] = {"seed": 0, "default": {"max_train": 60, "max_test": 40}, "per_task": {}}
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    return run


def test_a_run_of_the_user_model_plans_from_the_merged_sheet(tmp_path, shared):
    run = configured_run(tmp_path, shared, ["mine"])
    plan = run_plan(run)
    assert plan.config["model_sheet"] == "results/registry/models.yaml"
    assert plan.config["registry_extra"] == []
    merged = yaml.safe_load((run / "results/registry/models.yaml").read_text())
    assert "mine" in merged["models"] and "evo-1-131k-base" in merged["models"]
    jobs = dry_run(run, until=("extract_embeddings",))  # `snakemake -n --until extract_embeddings`, in process
    assert "extract_embeddings" in {job["rule"] for job in jobs}


def test_an_unknown_model_names_the_config_file_and_the_setting(tmp_path, shared):
    """The first refusal through a real `snakemake -n` (the console shows the message, not GENEB's frames); the
    second planned in process (`dry_run` raises the workflow's error)."""
    run = configured_run(tmp_path, shared, ["mine", "minee"])
    proc = run_snakemake(run, "-n")
    assert proc.returncode != 0
    assert "config/config.yaml: models: entry 2: model 'minee' is not in the registry" in proc.stdout
    assert "my_models.yaml" in proc.stdout  # the registry files it looked in
    assert "WorkflowError" in proc.stdout and "src/geneb" not in proc.stdout  # the message, not GENEB's frames
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["models"] = ["mine"]
    config["analysis"]["scale"]["rho_exclusions"] = [{"model": "mine", "reason": "r"}, {"model": "nope", "reason": "r"}]
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(WorkflowError) as err:
        dry_run(run)
    assert "config/config.yaml: analysis.scale.rho_exclusions: entry 2: model 'nope' is not in the registry" in (
        str(err.value)
    )


def test_a_hub_entry_of_the_user_file_is_pinned_in_the_lockfile_once(tmp_path, repo):
    from geneb.registry.load import load_locked_registry
    from geneb.registry.weights import read_pins
    from hub_support import fake_hub, fake_sha

    shipped = yaml.safe_load((repo / "config/models.yaml").read_text())["models"]["DNABERT-S"]
    extra = tmp_path / "my_models.yaml"
    extra.write_text(yaml.safe_dump({"models": {"my-dnabert-s": {**shipped, "display": "my copy"}}}, sort_keys=False))
    pins = tmp_path / "model_revisions.yaml"
    hub = {"zhihan1996/DNABERT-S": fake_sha("zhihan1996/DNABERT-S")}
    args = (repo / "config/models.yaml", None, pins, ["my-dnabert-s"])
    with fake_hub(hub) as (endpoint, seen):
        registry, log, problems = load_locked_registry(*args, resolve=True, endpoint=endpoint, extra=[extra])
        assert problems == "" and "pinned 1 hub model(s) once" in log[0]
        assert read_pins(pins)["my-dnabert-s"]["revision"] == hub["zhihan1996/DNABERT-S"]
        assert registry.spec("my-dnabert-s").source.revision == hub["zhihan1996/DNABERT-S"]
        seen.clear()
        _, log, _ = load_locked_registry(*args, resolve=True, endpoint=endpoint, extra=[extra])
        assert seen == [] and "run at the commits locked in" in log[0]  # the lockfile pins it; the hub is not asked


def test_geneb_models_lists_the_user_entries_of_the_config(tmp_path, repo, capsys):
    from geneb.cli.app import main

    extra = user_file(tmp_path / "mine")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"registry_extra": [str(extra)]}))
    sheet, pins = str(repo / "config/models.yaml"), str(repo / "config/model_revisions.yaml")
    assert main(["models", "--sheet", sheet, "--pins", pins, "--config", str(config)]) == 0
    assert any(line.split()[:1] == ["mine"] for line in capsys.readouterr().out.splitlines())
