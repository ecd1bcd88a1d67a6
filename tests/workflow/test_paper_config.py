"""config/paper.yaml is the paper's benchmark: its 40 models x its 100 tasks under geneb-paper, uncapped, the
task data from the official dataset at the paper's pinned revision; and its dry run here (no network) stops
naming every model that needs the network and every one without an adapter, planning nothing."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from geneb.registry.load import load_registry
from geneb.tasks.catalogue import read_catalogue
from hub_support import closed_endpoint
from workflow_support import dry_run


def test_the_paper_config_is_the_papers_40_models_and_100_tasks(repo, shared):
    paper = yaml.safe_load((repo / "config" / "paper.yaml").read_text())
    ref = shared / "reference" / "geneb_paper"
    spec = json.loads((ref / "benchmark_spec.json").read_text())
    models = [r["geneb_model_id"] for r in csv.DictReader((ref / "models.tsv").open(), delimiter="\t")]
    assert paper["tasks"] == [t["id"] for t in spec["tasks"]]
    assert paper["models"] == models
    assert paper["protocols"] == ["geneb-paper"] and paper["default_protocol"] == "geneb-paper"
    assert paper["caps"]["default"] == {"max_train": None, "max_test": None}
    registry = load_registry(repo / "config" / "models.yaml")
    assert all(registry.spec(m).paper_model_id == m for m in models)
    catalogue = read_catalogue(repo / "config" / "tasks.tsv")
    revision = spec["dataset"]["revision"]
    assert {catalogue.loc[t, "source"] for t in paper["tasks"]} == {f"hf:{spec['dataset']['repo_id']}@{revision}"}


def test_its_dry_run_offline_names_what_needs_the_network_and_what_has_no_adapter(repo, tmp_path, monkeypatch):
    """Planned in process (`dry_run` of `snakemake -n --configfile config/paper.yaml lock.yaml` in the checkout):
    the refusal is the workflow's WorkflowError, whose message is what the console shows. huggingface_hub reads
    HF_ENDPOINT and HF_HUB_OFFLINE once, when first imported, so the closed endpoint and online mode are set on
    its constants too (as a fresh process would read them from the environment)."""
    from huggingface_hub import constants

    endpoint = closed_endpoint()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    overlay = tmp_path / "lock.yaml"  # an empty lockfile of the test's own: the committed one stays as it is
    overlay.write_text(yaml.safe_dump({"model_revisions": str(tmp_path / "model_revisions.yaml")}))
    with pytest.raises(WorkflowError) as err:
        dry_run(repo, configfiles=("config/paper.yaml", overlay), env={"HF_ENDPOINT": endpoint})
    text = str(err.value)
    assert "40 selected model(s) cannot run, so nothing was planned" in text
    assert "- 34 need the network once, to pin their hub revision (the hub was unreachable" in text
    assert "have no GENEB adapter" not in text  # every paper model has one
    assert (
        "- 6 have weights outside the hub that GENEB cannot download: dna_gpt3b_m, genomics-fm, dna_gpt0.1b_h, "
        "deepgene, JanusDNA_72_w, JanusDNA_72_wo;" in text
    )
    assert "Job stats" not in text and not (tmp_path / "model_revisions.yaml").exists()
