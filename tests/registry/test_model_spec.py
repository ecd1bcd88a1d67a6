"""One reader of config/models.yaml, typed entries, and extraction hashes that did not move.

`extraction_hashes.json` holds the settings hash of every runnable entry of the committed registry (as it
is, and with every `hub-unpinned` entry pinned to the made-up revision sha1(model id)), under the config's
alphabet and under {}, for device cpu (`label/alphabet/model`) and cuda (`label/alphabet/cuda/model`: `dtype:
auto` resolves per device class, so a model whose dtype is auto has one hash per class; one with an explicit
dtype has the same hash under both), computed by the code before the registry was typed. A hash that changes gives every
cached embedding of that model a new folder: if a change to config/models.yaml or to the defaults means it,
regenerate the file with `_hashes` below and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from geneb.core.provenance import stable_params
from geneb.registry.load import extraction_hash, extraction_settings, load_registry
from geneb.registry.registry import NotRunnableError, Registry
from geneb.registry.spec import ModelSpec, Source

HERE = Path(__file__).parent


def _hashes(repo: Path, tmp_path: Path) -> dict[str, str]:
    alphabet = yaml.safe_load((repo / "config" / "config.yaml").read_text())["alphabet"]
    sheet = repo / "config" / "models.yaml"
    as_is = load_registry(sheet, pins=repo / "config" / "model_revisions.yaml")
    pins = {
        m: {"hub_id": s.source.hub_id, "revision": hashlib.sha1(m.encode()).hexdigest()}
        for m, s in as_is.models.items()
        if s.source.kind == "hub-unpinned" and s.twin is None  # a twin runs at its model's pin
    }
    (tmp_path / "pins.yaml").write_text(yaml.safe_dump({"schema_version": 1, "revisions": pins}))
    pinned = load_registry(sheet, pins=tmp_path / "pins.yaml")
    out = {}
    for label, registry in (("as-is", as_is), ("pinned", pinned)):
        for alpha_label, alpha in (("config", alphabet), ("empty", {})):
            for device, infix in (("cpu", ""), ("cuda", "cuda/")):
                for model, spec in registry.models.items():
                    if spec.source.kind == "local":  # content fingerprints of ../shared folders: not in the file
                        continue
                    if spec.twin is not None:  # the random-init twins: tests/registry/test_twins.py
                        continue
                    try:
                        settings = stable_params(extraction_settings(registry, model, alpha, device=device))
                    except NotRunnableError:
                        continue
                    out[f"{label}/{alpha_label}/{infix}{model}"] = extraction_hash(settings)
    return out


def test_extraction_hashes_of_every_registry_entry_are_unchanged(repo, tmp_path):
    expected = json.loads((HERE / "extraction_hashes.json").read_text())
    assert len(expected) > 200
    assert _hashes(repo, tmp_path) == expected


def test_the_registry_reader_is_the_only_parser_of_models_yaml(repo, shared, monkeypatch, capsys):
    """The analyses, the published view and the command line get the registry from `load_registry`: parsing
    the file's text anywhere else fails this test."""
    from geneb.analysis import inputs, published
    from geneb.cli import main
    from geneb.registry import load as reader

    sheet = repo / "config" / "models.yaml"
    text = sheet.read_text()
    inside, parsed = [], []

    def guarded(parse):
        def wrapped(stream, *args, **kwargs):
            if stream == text and not inside:
                raise AssertionError("config/models.yaml parsed outside geneb.registry.spec")
            return parse(stream, *args, **kwargs)

        return wrapped

    def one_reader(path):
        inside.append(path)
        try:
            return real(path)
        finally:
            parsed.append(inside.pop())

    real = reader._parse
    monkeypatch.setattr(yaml, "load", guarded(yaml.load))
    monkeypatch.setattr(yaml, "safe_load", guarded(yaml.safe_load))
    monkeypatch.setattr(reader, "_parse", one_reader)
    inputs.load_model_meta(sheet)
    inputs.declared_pairs(sheet)
    inputs.paper_pairs(sheet)
    published.published_model_meta(shared / "reference" / "geneb_paper", sheet, shared / "reference" / "registry.yaml")
    assert main(["models", "--sheet", str(sheet)]) == 0
    capsys.readouterr()
    registry, models = _module(repo / "bench" / "dag.py").synthetic_registry(2)  # bench/ too
    cluster_registry = _module(repo / "tests" / "cases" / "test_workflow_cluster.py").repo_registry()
    assert len(parsed) == 7
    ids = set(load_registry(sheet).models)
    assert len(models) == 2 and set(registry["models"]) == set(cluster_registry["models"]) == ids


def _module(path: Path):
    """Import the script or test module at `path` by its file (bench/ and tests/ are not packages)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"_guarded_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def test_no_code_outside_the_reader_parses_models_yaml(repo):
    """Every Python file of src/, workflow/, tools/, bench/ and scripts/ (and the rule files) that names
    config/models.yaml reads it through `load_registry`: a yaml.load / yaml.safe_load of that file in the same
    statement fails. (Tests of the file itself, e.g. that the registry tool keeps hand-added entries, may
    parse its text; the workflow tests' `repo_registry` is checked above.)"""
    import re

    parse = re.compile(r"yaml\.(safe_)?load\([^\n]*models\.yaml")
    files = [p for d in ("src", "workflow", "tools", "bench", "scripts") for p in (repo / d).rglob("*.py")]
    files += list((repo / "workflow").rglob("*.smk")) + [repo / "Snakefile"]
    offenders = [str(p.relative_to(repo)) for p in files if parse.search(p.read_text())]
    assert not offenders, f"config/models.yaml parsed outside geneb.registry.spec in {offenders}"


def test_analysis_metadata_and_cli_give_the_registry_objects_facts(repo, capsys):
    from geneb.analysis import inputs
    from geneb.cli import main

    sheet = repo / "config" / "models.yaml"
    registry = load_registry(sheet)
    meta = inputs.load_model_meta(sheet)
    assert list(meta.index) == list(registry.models)
    for model, spec in registry.models.items():
        row = meta.loc[model]
        assert row["display"] == (spec.display or model)
        assert row["architecture_family"] == (spec.architecture_family or "unknown")
        assert row["tokenizer_type"] == (spec.tokenizer_type or "unknown")
        assert row["pretraining_domain"] == (spec.pretraining_domain or "unknown")
        assert row["trained_on_tasks"] == spec.trained_on_tasks
        assert row["paper_model_id"] == spec.paper_model_id
        assert (row["params"] == spec.params) or (spec.params is None and row["params"] != row["params"])
    assert inputs.declared_pairs(sheet) == [p.as_dict() for p in registry.pairs]
    assert inputs.declared_pairs(sheet) == registry.raw["matched_pairs"]
    assert main(["models", "--sheet", str(sheet)]) == 0
    listed = capsys.readouterr().out
    for model, spec in registry.models.items():
        assert (model in listed and (spec.display or model) in listed) == (spec.twin is None)
    assert main(["models", "--sheet", str(sheet), "--twins"]) == 0
    listed = capsys.readouterr().out
    assert all(model in listed for model in registry.models)


def test_entries_are_typed_and_give_back_the_mapping_they_came_from(repo):
    registry = load_registry(repo / "config" / "models.yaml")
    assert isinstance(registry, Registry)
    for model, spec in registry.models.items():
        raw = registry.raw["models"][model]
        assert isinstance(spec, ModelSpec) and isinstance(spec.source, Source) and spec.id == model
        assert spec.source.as_dict() == raw["source"]
        assert spec.load.as_dict() == raw.get("load", {})
        assert spec.trained_on_tasks == tuple(raw.get("trained_on_tasks") or ())
    with pytest.raises(Exception, match="unknown keys"):
        ModelSpec.from_mapping("x", {"family": "kmer", "source": {"kind": "builtin"}, "colour": "red"})
