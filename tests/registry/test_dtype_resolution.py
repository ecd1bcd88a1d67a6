"""`dtype: auto` is resolved for the run's device class before the settings hash is made: one config
gives one hash per device class, the hash says which dtype runs, and every paper model pins its dtype."""

from __future__ import annotations

import re

import pytest
import yaml

from geneb.core.provenance import stable_params
from geneb.registry.load import extraction_hash, extraction_settings, load_registry
from geneb.registry.registry import Registry, RegistryError
from workflow_support import REPO, dry_run, write_run_config


def _registry(family: str = "hf-encoder", **extraction) -> Registry:
    spec = {"family": family, "source": {"kind": "hub", "hub_id": "org/m", "revision": "a" * 40}}
    if family == "kmer":
        spec = {"family": "kmer", "source": {"kind": "builtin"}, "builtin": {"k": 3}}
    if extraction:
        spec["extraction"] = extraction
    return Registry.from_mapping({"models": {"m": spec}})


def _dtype(registry: Registry, device: str) -> str:
    return extraction_settings(registry, "m", {}, device=device)["extraction"]["dtype"]


@pytest.mark.parametrize(("device", "dtype"), [("cpu", "float32"), ("cuda", "bfloat16"), ("cuda:1", "bfloat16")])
def test_auto_becomes_the_device_class_dtype(device, dtype):
    assert _dtype(_registry(), device) == dtype


def test_one_hash_per_device_class_and_auto_on_cpu_is_float32():
    auto, fp32 = _registry(), _registry(dtype="float32")
    cpu = extraction_hash(extraction_settings(auto, "m", {}, device="cpu"))
    assert cpu != extraction_hash(extraction_settings(auto, "m", {}, device="cuda"))
    assert cpu == extraction_hash(extraction_settings(fp32, "m", {}, device="cpu"))
    assert extraction_hash(extraction_settings(auto, "m", {}, device="cuda")) == extraction_hash(
        extraction_settings(_registry(dtype="bfloat16"), "m", {}, device="cpu")
    )


def test_an_explicit_dtype_is_the_same_on_every_device():
    for device in ("cpu", "cuda", "auto"):
        assert _dtype(_registry(dtype="float16"), device) == "float16"


def test_auto_under_device_auto_is_refused_naming_the_model():
    with pytest.raises(RegistryError, match=r"model m: extraction.dtype auto .*execution.device auto"):
        _dtype(_registry(), "auto")


def test_a_float32_only_family_resolves_auto_to_float32_and_refuses_another():
    assert _dtype(_registry("enformer"), "cuda") == "float32"
    assert _dtype(_registry("enformer"), "auto") == "float32"
    with pytest.raises(RegistryError, match="model m: extraction.dtype 'bfloat16' is not one the enformer adapter"):
        _dtype(_registry("enformer", dtype="bfloat16"), "cuda")


def test_a_model_without_a_network_keeps_its_dtype_and_hash():
    """k-mer spectra have no compute dtype: nothing to resolve, and their cache folders stay where they were."""
    reg = _registry("kmer")
    assert _dtype(reg, "cpu") == _dtype(reg, "cuda") == _dtype(reg, "auto") == "auto"


def test_unknown_device_is_an_error():
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        _dtype(_registry(), "gpu")


def test_every_paper_model_pins_its_dtype(repo):
    """The 40 paper entries carry an explicit dtype (config/curation/paper_models.yaml `dtypes`), so their
    settings hash does not depend on the device; Evo-1 and BioFM, whose reference ran in bfloat16, keep it."""
    reg = load_registry(repo / "config" / "models.yaml")
    paper = {m: s for m, s in reg.models.items() if s.paper_model_id}
    assert len(paper) == 40
    dtypes = {m: (s.extraction or {}).get("dtype") for m, s in paper.items()}
    assert all(d in ("float32", "bfloat16", "float16") for d in dtypes.values()), dtypes
    assert dtypes["evo-1-131k-base"] == dtypes["BioFM-265M"] == "bfloat16"
    assert dtypes["METAGENE-1"] == "float32"


def test_the_workflow_plans_one_cache_folder_per_device_class(tmp_path, shared):
    """common.smk resolves dtype auto with the run's execution.device: random-esm-tiny (dtype auto) gets another
    folder on cuda, kmer-3 (no network) keeps its own, and the planned folder is the registry's hash. Planned in
    process (`dry_run`, what `snakemake -n --config execution={device: ...}` plans)."""
    run = tmp_path / "run"
    write_run_config(run, shared / "data" / "tasks", ["gue_emp_h3__devtrain"], ["kmer-3", "random-esm-tiny"])
    alphabet = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["alphabet"]
    registry = load_registry(REPO / "config" / "models.yaml")
    folders = {}
    for device in ("cpu", "cuda"):
        jobs = dry_run(run, config={"execution": {"device": device}})
        outputs = "\n".join(f for job in jobs if job["rule"] == "extract_embeddings" for f in job["output"])
        folders[device] = dict(re.findall(r"^resources/embeddings/([^/]+)/([0-9a-f]{12})/", outputs, re.M))
        assert set(folders[device]) == {"kmer-3", "random-esm-tiny"}, outputs
        settings = extraction_settings(registry, "random-esm-tiny", alphabet, device=device)
        assert folders[device]["random-esm-tiny"] == extraction_hash(stable_params(settings))
    assert folders["cpu"]["kmer-3"] == folders["cuda"]["kmer-3"]
    assert folders["cpu"]["random-esm-tiny"] != folders["cuda"]["random-esm-tiny"]
