"""Random-init twins in the registry: the implicit `<model>-twin` of every entry that can be re-initialised, the
explicit `twin_of` entries, the refusals with their reasons, and a cache key of their own."""

from __future__ import annotations

import pytest
import yaml

from geneb.registry.families import _twins_of, twin_refusal
from geneb.registry.load import extraction_hash, extraction_settings, load_registry
from geneb.registry.registry import RegistryError

PARENT = "mistral-dna-1m-ft-prom"


@pytest.fixture(scope="module")
def registry(repo):
    return load_registry(repo / "config" / "models.yaml")


def _user_sheet(repo, tmp_path, extra: dict) -> str:
    data = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    data["models"].update(extra)
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_every_transformers_entry_has_an_implicit_twin_and_the_others_say_why_not(registry):
    twins = {m: s for m, s in registry.models.items() if s.twin is not None}
    parents = {s.twin["of"] for s in twins.values()}
    assert len(twins) > 80 and all(m == f"{s.twin['of']}-twin" and s.twin["seed"] == 0 for m, s in twins.items())
    for model, spec in registry.models.items():
        if spec.twin is None:
            assert (model in parents) == (
                spec.family in {"hf-encoder", "hf-decoder", "hf-ssm", "hyena", "caduceus", "gpn"}
            )
    twin = registry.spec(f"{PARENT}-twin")
    parent = registry.spec(PARENT)
    # the same architecture, tokenizer, source and extraction; facts that describe trained weights are not inherited
    assert (twin.family, twin.source, twin.extraction, twin.params) == (
        parent.family,
        parent.source,
        parent.extraction,
        parent.params,
    )
    assert twin.pretraining_domain == "none" and twin.lm_head == "none" and twin.paper is None
    assert "random-init twin" in str(twin.display)
    for model, reason in [
        ("kmer-3", "family kmer has no trained weights to re-initialise"),
        ("random-esm-tiny", "it is random-init already"),
        ("shortcut-gc", "family shortcut has no trained weights to re-initialise"),
    ]:
        with pytest.raises(RegistryError, match=reason):
            registry.spec(f"{model}-twin")
    assert twin_refusal(registry.raw["models"][f"{PARENT}-twin"]) == "it is a random-init twin itself"


def test_an_explicit_twin_entry_sets_its_seed_and_a_bad_one_is_named(repo, tmp_path):
    sheet = _user_sheet(repo, tmp_path, {"prom-twin-7": {"twin_of": PARENT, "twin_seed": 7, "notes": "mine"}})
    spec = load_registry(sheet).spec("prom-twin-7")
    assert spec.twin == {"of": PARENT, "seed": 7} and spec.notes == "mine"
    for extra, message in [
        ({"bad": {"twin_of": "nope"}}, "model bad: twin_of 'nope' is not a \\(non-twin\\) entry"),
        ({"bad": {"twin_of": PARENT, "params": 5}}, "model bad: a twin entry sets only"),
        ({"bad": {"twin_of": "kmer-3"}}, "model bad: model kmer-3 has no random-init twin: family kmer"),
    ]:
        with pytest.raises(RegistryError, match=message):
            load_registry(_user_sheet(repo, tmp_path, extra))


def test_a_twin_has_its_own_cache_key_and_the_other_keys_are_unchanged(repo, tmp_path, registry):
    parent = extraction_settings(registry, PARENT, {})
    twin = extraction_settings(registry, f"{PARENT}-twin", {})
    assert "twin" not in parent and twin["twin"] == {"of": PARENT, "seed": 0}
    assert {k: v for k, v in twin.items() if k not in ("model", "twin")} == {
        k: v for k, v in parent.items() if k != "model"
    }
    sheet = _user_sheet(repo, tmp_path, {"prom-twin-7": {"twin_of": PARENT, "twin_seed": 7}})
    seven = extraction_settings(load_registry(sheet), "prom-twin-7", {})
    assert len({extraction_hash(s) for s in (parent, twin, seven)}) == 3


def test_twins_of_a_model_list_skips_and_names_the_refused(registry):
    def refusal(m):
        return twin_refusal(registry.raw["models"][m])

    twins, skipped = _twins_of(["kmer-3", PARENT, f"{PARENT}-twin", "random-esm-tiny"], refusal)
    assert twins == []  # the twin is listed already
    twins, skipped = _twins_of(["kmer-3", PARENT, "random-esm-tiny"], refusal)
    assert twins == [f"{PARENT}-twin"]
    assert skipped == [
        "kmer-3: family kmer has no trained weights to re-initialise",
        "random-esm-tiny: it is random-init already",
    ]
