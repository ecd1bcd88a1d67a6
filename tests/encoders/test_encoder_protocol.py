"""The encoder contracts: every family's encoder meets the `Encoder` protocol the orchestrators read, token-level
adapters hand the engine one frozen `LoadedNetwork`, the orchestrators in geneb.extract read encoders only
through that protocol (no getattr), and the execution knobs are one typed object whose defaults are the config
schema's."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

from geneb.core.paths import load_schema
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.encoders.protocol import Encoder
from geneb.extract.batch_plan import ExecutionOptions
from geneb.extract.step import build_encoder
from geneb.registry.families import FAMILIES
from geneb.registry.load import extraction_settings, load_registry

#: the protocol's members, each an attribute or method every family's encoder has
PROTOCOL_MEMBERS = ("extraction", "load_check_names", "identity", "embed", "run_load_checks")
#: encoders that build offline: a k-mer spectrum, the seeded random-init transformer, the real checkpoints
OFFLINE_MODELS = ("kmer-3to6", "random-esm-tiny", "hyenadna-tiny-1k-ft-anticapt", "mistral-codon-1m-ft-mrfp")


def _encoder_classes() -> dict[str, type]:
    """The class each family's entry point returns (its return annotation), by family."""
    found = {}
    for name, fam in FAMILIES.items():
        if fam.entry is None:
            continue
        module, function = fam.entry.split(":")
        entry = getattr(importlib.import_module(module), function)
        found[name] = typing.get_type_hints(entry)["return"]
    return found


@pytest.mark.parametrize("family,cls", sorted(_encoder_classes().items()))
def test_every_family_encoder_class_declares_the_protocol(family, cls):
    """Methods and class-level members of the protocol are on the class itself; `extraction` may be set per
    instance (the k-mer encoder sets None), which the runtime test below checks on built encoders."""
    for member in PROTOCOL_MEMBERS:
        if member != "extraction":
            assert hasattr(cls, member), f"family {family}: {cls.__name__} has no {member}"
    if issubclass(cls, TokenModelEncoder):
        assert typing.get_type_hints(cls._load)["return"] is LoadedNetwork, f"{cls.__name__}._load"


@pytest.fixture(scope="module")
def offline_encoders(repo):
    registry = load_registry(repo / "config" / "models.yaml")
    return {
        name: build_encoder(extraction_settings(registry, name, {}), batch_size=2, progress=False)
        for name in OFFLINE_MODELS
    }


def test_offline_encoders_satisfy_the_protocol_at_run_time(offline_encoders):
    for name, enc in offline_encoders.items():
        assert isinstance(enc, Encoder), name
        assert isinstance(enc.load_check_names, tuple), name
        assert enc.run_load_checks() == enc.load_check_names, name
    assert offline_encoders["kmer-3to6"].extraction is None
    assert offline_encoders["kmer-3to6"].load_check_names == ()


def test_a_loaded_network_cannot_change_after_loading(offline_encoders):
    enc = offline_encoders["random-esm-tiny"]
    assert isinstance(enc.loaded, LoadedNetwork)
    with pytest.raises(dataclasses.FrozenInstanceError):
        enc.loaded.pad_id = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        enc.prefix = [1]  # the engine's view of the loaded network is read-only
    assert enc.prefix == list(enc.loaded.prefix) and enc.body_cap == enc.layout.body_cap


def test_the_orchestrators_never_probe_an_encoder_with_getattr(repo):
    """geneb.extract reads encoders through the protocol only: no getattr/hasattr anywhere in the package, so a
    capability cannot hide behind a default."""
    calls = []
    for path in sorted((repo / "src" / "geneb" / "extract").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                calls.append(f"{Path(path).name}:{node.lineno}")
    assert calls == []


def test_execution_options_are_the_schema_section_with_its_defaults():
    section = load_schema("config")["properties"]["execution"]["properties"]
    assert [f.name for f in dataclasses.fields(ExecutionOptions)] == list(section)
    defaults = ExecutionOptions.from_config({})
    assert defaults.as_dict() == {name: prop["default"] for name, prop in section.items()}
    assert ExecutionOptions.of({"device": "auto", "batch_size": 8}).batch_size == 8
    assert ExecutionOptions.of(defaults) is defaults


@pytest.mark.parametrize("bad", [{"devise": "cuda"}, {"batch_size": 0}, {"load_checks": "sometimes"}])
def test_execution_options_refuse_what_the_schema_refuses(bad):
    with pytest.raises(ValueError, match="execution options"):
        ExecutionOptions.from_config(bad)
