"""Pins without hand work: the run that plans the workflow pins every selected hub model once into
the model_revisions lockfile, against a fake hub on 127.0.0.1; later runs use exactly the locked commits; with
no network the error names every model that needs it (and, apart, the ones without an adapter)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from geneb.registry.load import extraction_settings, load_locked_registry, load_registry
from geneb.registry.weights import lock_revisions, read_pins
from hub_support import closed_endpoint, fake_hub, fake_sha
from workflow_support import REPO, dry_run, run_snakemake, write_run_config

SHEET = REPO / "config" / "models.yaml"
HUB = {"zhihan1996/DNABERT-S": fake_sha("zhihan1996/DNABERT-S"), "PoetschLab/GROVER": fake_sha("PoetschLab/GROVER")}


def test_the_first_run_pins_once_and_later_runs_use_the_lockfile(tmp_path):
    pins = tmp_path / "model_revisions.yaml"
    models = ["kmer-3", "DNABERT-S", "GROVER"]
    with fake_hub(HUB) as (endpoint, seen):
        registry, log, problems = load_locked_registry(SHEET, None, pins, models, resolve=True, endpoint=endpoint)
        assert problems == ""
        assert sorted(seen) == sorted(f"/api/models/{h}/revision/main" for h in HUB)
        assert {m: p["revision"] for m, p in read_pins(pins).items()} == {
            "DNABERT-S": HUB["zhihan1996/DNABERT-S"],
            "GROVER": HUB["PoetschLab/GROVER"],
        }
        assert "pinned 2 hub model(s) once, written to the lockfile" in log[0]
        assert extraction_settings(registry, "GROVER", {})["source"]["revision"] == HUB["PoetschLab/GROVER"]
        seen.clear()
        _, log, _ = load_locked_registry(SHEET, None, pins, models, resolve=True, endpoint=endpoint)
        assert seen == []  # locked: the hub is not asked again
        assert log == [
            f"2 hub model(s) run at the commits locked in {pins}: DNABERT-S@{HUB['zhihan1996/DNABERT-S'][:12]}, "
            f"GROVER@{HUB['PoetschLab/GROVER'][:12]}"
        ]
    assert pins.read_text().startswith("# Pinned hub revisions: a lockfile")


def test_a_locked_commit_is_kept_when_the_hub_moves_on(tmp_path):
    pins = tmp_path / "model_revisions.yaml"
    with fake_hub(HUB) as (endpoint, _):
        load_locked_registry(SHEET, None, pins, ["GROVER"], resolve=True, endpoint=endpoint)
    with fake_hub({"PoetschLab/GROVER": "f" * 40}) as (endpoint, seen):
        registry, _, _ = load_locked_registry(SHEET, None, pins, ["GROVER"], resolve=True, endpoint=endpoint)
    assert seen == [] and registry.spec("GROVER").source.revision == HUB["PoetschLab/GROVER"]


def test_offline_the_error_names_every_model_that_needs_the_network(tmp_path):
    pins = tmp_path / "model_revisions.yaml"
    models = ["kmer-3", "DNABERT-S", "GROVER", "SpeciesLM"]
    _, _, text = load_locked_registry(SHEET, None, pins, models, resolve=True, endpoint=closed_endpoint())
    assert text.startswith("3 selected model(s) cannot run")
    assert "- 2 need the network once, to pin their hub revision (the hub was unreachable: cannot reach" in text
    assert ": DNABERT-S, GROVER; run the workflow once where the hub is reachable" in text
    assert f"lockfile ({pins})" in text
    assert "- 1 have no GENEB adapter (family unsupported): SpeciesLM" in text
    assert not pins.exists()


def test_a_repository_the_hub_refuses_is_named_with_the_answer(tmp_path):
    pins = tmp_path / "model_revisions.yaml"
    with fake_hub({"zhihan1996/DNABERT-S": HUB["zhihan1996/DNABERT-S"]}) as (endpoint, _):
        _, _, text = load_locked_registry(SHEET, None, pins, ["DNABERT-S", "GROVER"], resolve=True, endpoint=endpoint)
    assert "the hub refused: GROVER (cannot resolve PoetschLab/GROVER@main" in text
    assert f"(1 hub model(s) were pinned into {pins} now: DNABERT-S)" in text
    assert list(read_pins(pins)) == ["DNABERT-S"]  # what could be pinned is kept


def test_hf_hub_offline_is_the_offline_case(tmp_path):
    """HF_HUB_OFFLINE=1 (read by huggingface_hub at import): nothing is asked, every model is named."""
    code = (
        "from geneb.registry.load import load_locked_registry\n"
        f"print(load_locked_registry({str(SHEET)!r}, None, {str(tmp_path / 'p.yaml')!r}, ['DNABERT-S'], resolve=True)[2])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "1 need the network once" in out.stdout and "offline mode is enabled" in out.stdout


def test_job_processes_never_ask_the_hub(tmp_path):
    """resolve=False (a job's parse of the Snakefile): the lockfile is read, never written."""
    pins = tmp_path / "model_revisions.yaml"
    assert "1 need the network once" in load_locked_registry(SHEET, None, pins, ["DNABERT-S"], resolve=False)[2]
    assert not pins.exists()


def test_models_without_an_adapter_are_not_pinned(tmp_path):
    registry = load_registry(SHEET)
    with fake_hub({"gagneurlab/SpeciesLM": "a" * 40}) as (endpoint, seen):
        result = lock_revisions(registry, ["SpeciesLM"], tmp_path / "p.yaml", pinnable=[], endpoint=endpoint)
    assert seen == [] and result.pinned == {} and not (tmp_path / "p.yaml").exists()


def test_a_dry_run_pins_then_plans_and_the_next_run_says_it_uses_the_lockfile(tmp_path, shared, monkeypatch, caplog):
    """The workflow itself: `snakemake -n` with HF_ENDPOINT at the fake hub writes the lockfile and plans the
    hub models' extractions; offline, the same dry run stops naming the models. The pinning run is a real
    `snakemake -n` (a new interpreter's huggingface_hub reads HF_ENDPOINT; the console says what was pinned); the
    offline and the locked dry runs are planned in process (`dry_run`), with huggingface_hub's endpoint, which it
    read from HF_ENDPOINT at import, set to the same URL."""
    import huggingface_hub.constants

    run = tmp_path / "run"
    write_run_config(run, shared / "data" / "tasks", ["gue_emp_h3__devtrain"], ["kmer-3", "DNABERT-S", "GROVER"])
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["model_revisions"] = str(run / "config/model_revisions.yaml")
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    offline = closed_endpoint()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", offline)
    with pytest.raises(WorkflowError) as err:
        dry_run(run, env={"HF_ENDPOINT": offline})
    assert "2 need the network once, to pin their hub revision" in str(err.value)
    assert "DNABERT-S, GROVER" in str(err.value)
    with fake_hub(HUB) as (endpoint, seen):
        out = run_snakemake(run, "-n", env={"HF_ENDPOINT": endpoint})
        assert out.returncode == 0, out.stdout[-3000:]
        asked = [p for p in seen if p.startswith("/api/models/")]  # (huggingface_hub asks other things too)
        assert "pinned 2 hub model(s) once" in out.stdout and len(asked) == 2
        assert out.stdout.count("rule extract_embeddings:") == 3
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            dry_run(run, env={"HF_ENDPOINT": endpoint})
        assert len([p for p in seen if p.startswith("/api/models/")]) == 2
        assert any("2 hub model(s) run at the commits locked in" in m for m in caplog.messages), caplog.messages
