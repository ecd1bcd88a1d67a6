"""What `geneb.evaluate` keeps between calls (geneb.api.evaluate): reused while the files are unchanged, read and
checked again as soon as one is edited."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from geneb.api import evaluate
from geneb.registry.registry import RegistryError


def _sheet(path: Path, models: dict) -> Path:
    path.write_text(yaml.safe_dump({"schema_version": SCHEMA_VERSION, "models": models}))
    return path


SCHEMA_VERSION = 1
ENTRY = {"family": "python", "load": {"entry": "enc.py:build"}}


def test_registry_is_reused_while_the_sheet_is_unchanged(tmp_path):
    sheet = _sheet(tmp_path / "models.yaml", {"mine": ENTRY})
    first = evaluate._registry(sheet, pins=None, weights=None, weights_dir=None)
    assert evaluate._registry(sheet, pins=None, weights=None, weights_dir=None) is first
    assert list(first.models) == ["mine"]


def test_an_edited_sheet_is_read_again(tmp_path):
    sheet = _sheet(tmp_path / "models.yaml", {"mine": ENTRY})
    first = evaluate._registry(sheet, pins=None, weights=None, weights_dir=None)
    _sheet(sheet, {"mine": ENTRY, "other": ENTRY})
    again = evaluate._registry(sheet, pins=None, weights=None, weights_dir=None)
    assert again is not first
    assert list(again.models) == ["mine", "other"]


def test_an_edited_sheet_is_validated_again(tmp_path):
    sheet = _sheet(tmp_path / "models.yaml", {"mine": ENTRY})
    evaluate._registry(sheet, pins=None, weights=None, weights_dir=None)
    _sheet(sheet, {"mine": {**ENTRY, "family": "no-such-family"}})
    with pytest.raises(RegistryError):
        evaluate._registry(sheet, pins=None, weights=None, weights_dir=None)


def test_the_shipped_probe_section_is_a_fresh_copy_each_call():
    first = evaluate._shipped_probe_section()
    first["geneb-paper"]["seeds"] = "changed by the caller"
    assert evaluate._shipped_probe_section()["geneb-paper"]["seeds"] != "changed by the caller"
