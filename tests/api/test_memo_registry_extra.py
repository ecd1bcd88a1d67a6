"""`geneb.evaluate`'s registry (geneb.api.evaluate) with the config's `registry_extra` files: their entries are there,
and an edit to one of them reads the registry again (their digests are part of the key)."""

from __future__ import annotations

import yaml

from geneb.api import evaluate

ENTRY = {"family": "python", "load": {"entry": "enc.py:build"}}


def test_the_user_files_entries_are_in_and_an_edit_reloads(tmp_path, repo):
    extra = tmp_path / "my_models.yaml"
    extra.write_text(yaml.safe_dump({"models": {"mine": ENTRY}}))
    sheet = repo / "config/models.yaml"
    first = evaluate._registry(sheet, pins=None, weights=None, weights_dir=None, extra=[extra])
    assert "mine" in first.models and "kmer-3" in first.models
    assert evaluate._registry(sheet, pins=None, weights=None, weights_dir=None, extra=[extra]) is first
    extra.write_text(yaml.safe_dump({"models": {"mine": ENTRY, "mine-too": ENTRY}}))
    again = evaluate._registry(sheet, pins=None, weights=None, weights_dir=None, extra=[extra])
    assert again is not first and "mine-too" in again.models
    assert "mine" not in evaluate._registry(sheet, pins=None, weights=None, weights_dir=None).models
