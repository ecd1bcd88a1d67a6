"""Pinning hub revisions: resolved through the hub API (a local server here), merged into the registry."""

from __future__ import annotations

import copy

import pytest

from geneb.cli import main as cli
from geneb.registry.load import extraction_settings, load_registry
from geneb.registry.registry import NotRunnableError, RegistryError
from geneb.registry.weights import PinError, apply_pins, read_pins
from hub_support import fake_hub

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def hub():
    """The fake hub (tests/hub_support.py) knowing DNABERT-S only."""
    with fake_hub({"zhihan1996/DNABERT-S": SHA}) as served:
        yield served


def test_pin_revisions_resolves_writes_and_makes_the_model_runnable(tmp_path, repo, hub, capsys):
    endpoint, seen = hub
    pins = tmp_path / "model_revisions.yaml"
    sheet = str(repo / "config/models.yaml")
    with pytest.raises(NotRunnableError, match="no pinned revision"):
        extraction_settings(load_registry(sheet, pins=pins), "DNABERT-S", {})
    assert cli(["pin-revisions", "DNABERT-S", "--sheet", sheet, "--pins", str(pins), "--endpoint", endpoint]) == 0
    assert "zhihan1996/DNABERT-S@" + SHA in capsys.readouterr().out
    assert seen == ["/api/models/zhihan1996/DNABERT-S/revision/main"]
    assert read_pins(pins)["DNABERT-S"]["revision"] == SHA
    settings = extraction_settings(load_registry(sheet, pins=pins), "DNABERT-S", {})
    assert settings["source"] == {**settings["source"], "kind": "hub", "revision": SHA}
    # a pin changes the settings hash, so the cache of another revision is never reused
    assert settings["source"]["revision"] == SHA


def test_pin_failures_are_clear_and_write_nothing(tmp_path, repo, hub, capsys):
    endpoint, _ = hub
    pins = tmp_path / "model_revisions.yaml"
    sheet = str(repo / "config/models.yaml")
    assert cli(["pin-revisions", "GROVER", "--sheet", sheet, "--pins", str(pins), "--endpoint", endpoint]) == 2
    assert "cannot resolve PoetschLab/GROVER@main" in capsys.readouterr().err
    assert cli(["pin-revisions", "kmer-3", "--sheet", sheet, "--pins", str(pins), "--endpoint", endpoint]) == 2
    assert "has no hub id to pin" in capsys.readouterr().err
    assert not pins.exists()


def test_a_pin_cannot_move_to_another_repository_or_hold_a_branch_name(tmp_path, repo):
    registry = copy.deepcopy(dict(load_registry(repo / "config/models.yaml").raw))
    with pytest.raises(PinError, match="pin is for hub id"):
        apply_pins(registry, {"DNABERT-S": {"hub_id": "someone/else", "revision": SHA}})
    bad = tmp_path / "pins.yaml"
    bad.write_text("schema_version: 1\nrevisions:\n  DNABERT-S: {hub_id: zhihan1996/DNABERT-S, revision: main}\n")
    with pytest.raises(RegistryError, match="40-hex commit"):
        load_registry(repo / "config/models.yaml", pins=bad)
