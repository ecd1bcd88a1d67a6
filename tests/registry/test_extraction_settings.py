"""Typed extraction settings: `ExtractionSettings.from_dict(d).as_dict() == d` for every runnable model of
config/models.yaml (as it is and with every unpinned hub entry pinned), so what travels (Snakemake params, the
HDF5 key, the settings hash) is the mapping it was; `adapters.build` types it once and the adapters read
attributes."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from geneb.registry.load import DEFAULT_EXTRACTION, extraction_hash, extraction_settings, load_registry
from geneb.registry.registry import NotRunnableError
from geneb.registry.spec import Extraction, ExtractionSettings, InputTransform, Load, Source


@pytest.fixture(scope="module")
def every_settings(repo, tmp_path_factory):
    alphabet = yaml.safe_load((repo / "config" / "config.yaml").read_text())["alphabet"]
    sheet = repo / "config" / "models.yaml"
    as_is = load_registry(sheet, pins=repo / "config" / "model_revisions.yaml")
    pins = {
        m: {"hub_id": s.source.hub_id, "revision": hashlib.sha1(m.encode()).hexdigest()}
        for m, s in as_is.models.items()
        if s.source.kind == "hub-unpinned" and s.twin is None  # a twin runs at its model's pin
    }
    path = tmp_path_factory.mktemp("pins") / "pins.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "revisions": pins}))
    out = {}
    for label, registry in (("as-is", as_is), ("pinned", load_registry(sheet, pins=path))):
        for alpha_label, alpha in (("config", alphabet), ("empty", {})):
            for model in registry.models:
                try:
                    out[f"{label}/{alpha_label}/{model}"] = extraction_settings(registry, model, alpha)
                except NotRunnableError:
                    continue
    return out


def test_round_trip_over_every_registry_model_is_exact(every_settings):
    assert len(every_settings) > 100
    families = set()
    for name, settings in every_settings.items():
        typed = ExtractionSettings.from_dict(settings)
        assert typed.as_dict() == settings, name
        assert list(typed.as_dict()) == list(settings), name  # key order too
        assert list(typed.as_dict()["extraction"]) == list(settings["extraction"]), name
        assert extraction_hash(typed.as_dict()) == extraction_hash(settings), name
        assert ExtractionSettings.of(typed) is typed
        families.add(typed.family)
    assert {"kmer", "hf-encoder", "hf-decoder", "random-init"} <= families


def test_the_typed_fields_are_the_settings(every_settings):
    for name, settings in every_settings.items():
        typed = ExtractionSettings.from_dict(settings)
        ext = settings["extraction"]
        assert (typed.model, typed.family) == (settings["model"], settings["family"])
        assert isinstance(typed.source, Source) and typed.source.kind == settings["source"]["kind"]
        assert isinstance(typed.load, Load) and typed.load.as_dict() == settings["load"]
        assert typed.trust_remote_code is settings["trust_remote_code"]
        assert dict(typed.builtin) == settings["builtin"] and dict(typed.alphabet) == settings["alphabet"]
        assert isinstance(typed.extraction, Extraction), name
        for key in DEFAULT_EXTRACTION:
            value = getattr(typed.extraction, key)
            if key == "input_transform" and value is not None:
                assert isinstance(value, InputTransform) and value.as_dict() == ext[key]
            else:
                assert value == ext[key], (name, key)


def test_defaults_partial_mappings_and_unknown_keys():
    # unk_policy (default count) is absent from the defaults, so it is in the settings only where an entry sets it
    assert Extraction().as_dict() == {**DEFAULT_EXTRACTION, "unk_policy": "count"}
    partial = {"model": "m", "family": "kmer", "extraction": {"pooling": "max"}, "builtin": {"k": 3}}
    typed = ExtractionSettings.from_dict(partial)
    assert typed.as_dict() == partial  # absent keys stay absent
    assert typed.extraction.layer == -1 and typed.extraction.pooling == "max"  # defaults read as before
    lower = {"kind": "lowercase", "prefix": "<+>"}
    assert InputTransform.from_dict(lower).as_dict() == lower and InputTransform.from_dict(lower).k is None
    with pytest.raises(ValueError, match=r"model m: extraction: unknown keys \['poolng'\]"):
        ExtractionSettings.from_dict({**partial, "extraction": {"poolng": "mean"}})
    with pytest.raises(ValueError, match="unknown keys"):
        ExtractionSettings.from_dict({**partial, "colour": "blue"})
    with pytest.raises(AttributeError):
        typed.model = "other"  # type: ignore[misc]


def test_build_types_the_settings_once_and_the_adapter_reads_attributes(repo):
    from geneb.registry.families import build

    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    enc = build(settings)
    assert enc.identity()["k"] == settings["builtin"]["k"]
    assert build(ExtractionSettings.from_dict(settings)).identity() == enc.identity()


def _one_entry(**over):
    entry = {
        "display": "x",
        "family": "hf-decoder",
        "source": {"kind": "builtin"},
        "architecture_family": "transformer-decoder",
        "tokenizer_type": "codon",
        "params": 1,
        "pretraining_domain": "unknown",
        "license": "x",
        "extraction": {"pooling": "mean", "layer": -1},
    }
    return {"models": {"m": {**entry, **over}}}


def test_free_text_provenance_is_not_in_the_cache_key(repo):
    """Correcting where a checkpoint came from (source.origin, base_hub_id, url; load.transformers_note) reruns
    nothing; what loads the weights (the folder's fingerprint, the transformers range, config overrides) does."""
    from geneb.registry.load import _PROVENANCE_LOAD_KEYS as PROVENANCE_LOAD_KEYS
    from geneb.registry.load import _PROVENANCE_SOURCE_KEYS as PROVENANCE_SOURCE_KEYS
    from geneb.registry.registry import Registry

    registry = load_registry(repo / "config" / "models.yaml")
    raw = {"models": {k: dict(v) for k, v in registry.raw["models"].items() if k == "hyenadna-tiny-1k-ft-anticapt"}}
    entry = raw["models"]["hyenadna-tiny-1k-ft-anticapt"]
    settings = extraction_settings(Registry.from_mapping(raw), "hyenadna-tiny-1k-ft-anticapt", {})
    assert not set(settings["source"]) & set(PROVENANCE_SOURCE_KEYS)
    assert not set(settings["load"]) & set(PROVENANCE_LOAD_KEYS) and settings["load"]["transformers"]
    base = extraction_hash(settings)
    entry["source"] = {**entry["source"], "origin": "somewhere else", "base_hub_id": "x/y", "url": "https://x"}
    entry["load"] = {**entry["load"], "transformers_note": "another reason"}
    assert extraction_hash(extraction_settings(Registry.from_mapping(raw), "hyenadna-tiny-1k-ft-anticapt", {})) == base
    entry["load"] = {**entry["load"], "transformers": ">=5.15,<6"}
    assert extraction_hash(extraction_settings(Registry.from_mapping(raw), "hyenadna-tiny-1k-ft-anticapt", {})) != base


def test_codons_transform_and_its_length_rule():
    from geneb.core.errors import EmptyPoolError
    from geneb.encoders.engine.chunking import model_texts, transform_input
    from geneb.registry.load import check_registry

    codons = InputTransform(kind="codons")
    assert transform_input("ATGGCTAAA", codons, model="m", row=0) == "ATG GCT AAA"
    with pytest.raises(ValueError, match="not a whole number of codons; set extraction.length_multiple: 3"):
        transform_input("ATGGC", codons, model="m", row=7)
    ext = Extraction.from_dict({"length_multiple": 3, "input_transform": {"kind": "codons"}})
    texts, trimmed = model_texts(["ATGGCTAA", "ATGAAA"], [0, 1], ext, model="m")
    assert texts == ["ATG GCT", "ATG AAA"] and trimmed.tolist() == [2, 0]
    with pytest.raises(EmptyPoolError, match="row 5: 2 nt is shorter than the model's length multiple 3"):
        model_texts(["AT"], [5], ext, model="m")
    assert check_registry(_one_entry(extraction={"length_multiple": 3, "input_transform": {"kind": "codons"}})) == []
    (problem,) = check_registry(_one_entry(extraction={"input_transform": {"kind": "codons"}}))
    assert "input_transform codons needs length_multiple 3" in problem


def test_codons_load_time_probe_respects_length_multiple():
    """The probes of the load-time checks are trimmed like a row: a codon model's probe is whole codons."""
    from types import SimpleNamespace

    from geneb.encoders.engine.checks import _probe_ids as probe_ids

    seen = []

    def tokenize(texts):
        seen.extend(texts)
        return [t.split() for t in texts]

    ext = Extraction.from_dict({"length_multiple": 3, "input_transform": {"kind": "codons"}})
    for n in (5, 7, 40):
        ids = probe_ids(SimpleNamespace(extraction=ext, model_id="m", _tokenize=tokenize), n)
        assert len(ids) == n and all(len(c) == 3 for c in ids)
    assert all(len(t.replace(" ", "")) % 3 == 0 for t in seen)
