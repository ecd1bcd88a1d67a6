"""config/models.yaml against its schema, the cross-field rules, and the shared reference facts it was
built from (../shared/reference/geneb_paper/models.tsv, registry.yaml)."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from geneb.registry.families import FAMILIES
from geneb.registry.load import check_registry, extraction_settings, load_registry, runnable
from geneb.registry.registry import NotRunnableError, RegistryError
from registry_support import runnable_offline


@pytest.fixture(scope="module")
def paper(shared):
    return pd.read_csv(shared / "reference" / "geneb_paper" / "models.tsv", sep="\t", dtype=str, keep_default_na=False)


def test_paper_models_present_with_official_ids_and_counts(registry, paper):
    by_id = {v["paper"]["model_id"]: (k, v) for k, v in registry["models"].items() if "paper" in v}
    assert set(by_id) == set(paper["geneb_model_id"]) and len(by_id) == 40
    for _, row in paper.iterrows():
        key, v = by_id[row["geneb_model_id"]]
        assert key == row["geneb_model_id"]
        assert v["params"] == int(row["params_current"]), key
        assert v["display"] == row["leaderboard_display"]
        if row["params_early_meta"]:
            assert v["params_paper"] == int(row["params_early_meta"]), key
        src = v["source"]
        if src.get("hub_id") != row["hub_id_or_source"] and src["kind"] != "external":
            # registry.yaml's verified hub id replaced the sheet's (GenomeOcean): the notes must say so
            assert f"{src['hub_id']} from registry.yaml, not models.tsv's {row['hub_id_or_source']}" in v["notes"], key
        ref = v["paper"]["reference_extraction"]
        assert ref["pooling"] == row["pooling_reference"] and ref["max_input"] == row["extractor_max_input"]


def test_paper_defaults_reproduce_the_reference(registry):
    """Paper models default to the reference: last hidden state, special tokens pooled, truncation, no RC;
    CLS pooling for DNABERT-S and Genomics-FM; a GENEB change is written down wherever a defect is known."""
    for key, v in registry["models"].items():
        if "paper" not in v:
            continue
        ext = v["extraction"]
        assert ext["layer"] == -1 and ext["rc"] == "none" and ext["long_policy"] == "truncate", key
        assert ext["pooling"] == {"cls-token": "cls", "penultimate-valid-token": "last"}.get(
            v["paper"]["reference_extraction"]["pooling"], "mean"
        )
    for key in (
        "METAGENE-1",
        "evo-1-131k-base",
        "DNABERT-S",
        "hyenadna-large-1m-seqlen-hf",
        "MutBERT",
        "OmniNA-220m",
        "PlantCaduceus_l32",
        "caduceus-ps_seqlen-131k_d_model-256_n_layer-16",
        "JanusDNA_72_w",
        "BioFM-265M",
    ):
        assert registry["models"][key]["paper"].get("geneb_changes"), key


def test_further_models_and_families(registry, shared):
    reference = yaml.safe_load((shared / "reference" / "registry.yaml").read_text())
    names = {v.get("registry_name") for v in registry["models"].values()}
    assert {e["name"] for e in reference} <= names  # every model of the shared registry is represented
    assert len(registry["models"]) >= 120
    assert {v["family"] for v in registry["models"].values()} <= set(FAMILIES)
    for key, v in registry["models"].items():
        assert v["pretraining_domain"] and v["architecture_family"] and v["tokenizer_type"], key


#: the offline-runnable entries GENEB ships (builtins and the checkpoints in ../shared/models)
SHIPPED_OFFLINE = {
    "kmer-3",
    "kmer-3to6",
    "kmer-4",
    "kmer-5",
    "kmer-6",
    "random-esm-tiny",
    "mistral-dna-1m-ft-prom",
    "mistral-dna-1m-ft-tf0",
    "mistral-dna-1m-ft-tf1",
    "hyenadna-tiny-1k-ft-anticapt",
    "mistral-codon-1m-ft-mrfp",
}


def check_runnable(specs):
    """Properties of runnability that hold for any registry with user entries added: every shipped offline
    entry runs offline; an entry runs offline exactly when it is a builtin, a local folder that exists, or
    external weights the config's model_weights gives, in a family with an adapter; an unpinned hub entry is refused with the reason."""
    offline = {k for k, v in specs.models.items() if runnable_offline(v)}
    assert offline >= SHIPPED_OFFLINE, sorted(SHIPPED_OFFLINE - offline)
    for key, v in specs.models.items():
        expected = (
            (
                v.source.kind == "builtin"
                or (v.source.kind == "local" and Path(v.source.path).is_dir())
                or (v.source.kind == "external" and _external_weights_given(v.source))
            )
            and v.family in FAMILIES
            and FAMILIES[v.family].entry is not None
        )
        assert (key in offline) == expected, key
    with pytest.raises(NotRunnableError, match="no pinned revision"):
        extraction_settings(specs, "DNABERT-S", {})


def _external_weights_given(src):
    """model_weights names an existing archive or file, or a folder holding every `source.expect` path."""
    p = Path(src.path or "/nonexistent")
    return p.is_file() or (p.is_dir() and all((p / rel).exists() for rel in src.expect or ()))


def test_runnable_counts(specs):
    check_runnable(specs)


#: the shipped entries flagged as trained on a catalogued task (config/curation/builtin_models.yaml)
SHIPPED_CONTAMINATED = {"mistral-dna-1m-ft-prom", "mistral-dna-1m-ft-tf0", "mistral-dna-1m-ft-tf1"}


def _with_user_entry(registry: dict) -> dict:
    """The registry with a user's own entry appended, one that declares a task it was trained on."""
    out = copy.deepcopy(dict(registry))
    out["models"] = {
        **out["models"],
        "my-own-cnn": {
            "family": "python",
            "load": {"entry": "my_cnn.py:build"},
            "trained_on_tasks": ["gue_prom_core_all"],
        },
    }
    return out


@pytest.mark.parametrize("with_user_entry", [False, True], ids=["shipped", "with-a-user-entry"])
def test_matched_pairs_and_contamination(registry, repo, with_user_entry):
    """Properties of the shipped entries that hold whatever entries a user appends (docs/adding-a-model.md)."""
    if with_user_entry:
        registry = _with_user_entry(registry)
    pairs = registry["matched_pairs"]
    assert len(pairs) >= 10 and len({p["id"] for p in pairs}) == len(pairs)
    for p in pairs:
        a, b = (registry["models"][m] for m in p["models"])
        if p["differs_in"] == "tokenizer":
            assert (
                a["pretraining_data"] == b["pretraining_data"] or "850" in a["pretraining_data"] + b["pretraining_data"]
            )
        if p["differs_in"] == "architecture":
            assert a["architecture"] != b["architecture"]
    tasks = set(pd.read_csv(repo / "config" / "tasks.tsv", sep="\t", usecols=["task"])["task"])
    assert not check_registry(registry, task_ids=tasks)
    flagged = {k: v["trained_on_tasks"] for k, v in registry["models"].items() if v.get("trained_on_tasks")}
    assert flagged["mistral-dna-1m-ft-prom"] == ["gue_prom_core_all", "leannmlindsey_GUE_prom_core_all"]
    # a subset, not the whole: entries a user appends may declare tasks of their own
    assert set(flagged) >= SHIPPED_CONTAMINATED and ("my-own-cnn" in flagged) == with_user_entry


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda e: e.update(family="nope"), "unknown family"),
        (lambda e: e.update(trust_remote_code=True, load={}), "load.transformers"),
        (lambda e: e["extraction"].update(pooling="cls", long_policy="chunk_mean"), "undefined across chunks"),
        (
            lambda e: e.update(source={"kind": "hub-unpinned", "hub_id": "a/b", "revision": "0" * 40}),
            "must not carry a revision",
        ),
        (lambda e: e.update(family="evo2"), "module name"),
        (
            lambda e: e["extraction"].update(pooling="cls", long_policy="truncate", exclude_special_tokens=True),
            "CLS token",
        ),
    ],
)
def test_cross_field_rules(registry, change, message):
    entry = copy.deepcopy(registry["models"]["mistral-dna-1m-ft-prom"])
    change(entry)
    assert any(message in p for p in check_registry({"models": {"m": entry}}))


def test_pair_rules(registry):
    bad = {
        "models": registry["models"],
        "matched_pairs": [{"id": "x", "models": ["kmer-3", "nope"], "differs_in": "size"}],
    }
    problems = check_registry(bad)
    assert any("'nope' is not in the registry" in p for p in problems) and any("differs_in" in p for p in problems)


def test_adding_a_model_is_one_entry(repo, tmp_path, schema):
    """A new model of a known family: one YAML entry, no code."""
    doc = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    doc["models"]["my-mistral"] = {
        **doc["models"]["mistral-dna-1m-ft-tf0"],
        "display": "mine",
        "extraction": {"pooling": "max", "layer": 2, "max_tokens": 128},
    }
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    s = extraction_settings(load_registry(tmp_path / "models.yaml", schema), "my-mistral", {})
    assert s["extraction"]["pooling"] == "max" and s["extraction"]["causal"] is True  # family default
    doc["models"]["typo"] = {**doc["models"]["kmer-3"], "extraction": {"poolng": "mean"}}
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(RegistryError, match="poolng"):
        load_registry(tmp_path / "models.yaml", schema)


def test_unknown_model_suggests(specs):
    with pytest.raises(RegistryError, match="did you mean"):
        extraction_settings(specs, "kmer3", {})
    assert runnable(specs.models["kmer-3"]) == (True, "built in")


def test_a_model_id_given_twice_is_refused_not_replaced(repo, tmp_path):
    """Plain YAML keeps the last of two equal keys, so an entry appended under an id already taken would
    silently replace the first; the registry reader names the id and both lines instead."""
    from geneb.registry.load import load_registry
    from geneb.registry.registry import RegistryError

    sheet = tmp_path / "models.yaml"
    entry = "    family: kmer\n    source: {kind: builtin}\n    builtin: {k: 3}\n"
    sheet.write_text("models:\n  mine:\n" + entry + "  other:\n" + entry + "  mine:\n" + entry)
    with pytest.raises(RegistryError, match=r"'mine' is given twice \(first at line 2\)"):
        load_registry(sheet, schema=None)
