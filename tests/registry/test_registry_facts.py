"""config/models.yaml against the facts it is built from: it is exactly tools/build_model_registry.py's output;
where the paper's sheet (models.tsv) and registry.yaml disagree on a factor matched-pair derivation compares,
the verified fact is used and the disagreement noted; hub ids follow registry.yaml's verified records; and an
input cap above the trained context is caught by check_registry."""

from __future__ import annotations

import copy
import importlib.util
import re
import sys

import pytest
import yaml

from geneb.analysis.inputs import model_frame, with_param_count
from geneb.analysis.paper import _derive_pairs
from geneb.registry.load import check_registry, load_registry
from geneb.registry.registry import RegistryError


@pytest.fixture(scope="module")
def tool(repo):
    spec = importlib.util.spec_from_file_location("build_model_registry", repo / "tools" / "build_model_registry.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def reference(shared):
    return {e["name"]: e for e in yaml.safe_load((shared / "reference" / "registry.yaml").read_text())}


def check_generated_entries(text, shared, tool):
    """The generated entries of a registry file's `text` are never hand-edited: they are a fresh build from
    ../shared/reference and config/curation, in the tool's order, first in the file, with the tool's matched
    pairs first; entries (and pairs) users appended after them are theirs. With no user entry the file is the
    tool's output byte for byte."""
    doc = yaml.safe_load(text)
    fresh = tool.build(shared)
    generated, models = list(fresh["models"]), list(doc["models"])
    hint = "config/models.yaml differs from `python tools/build_model_registry.py` output: change the tool and rerun it"
    assert models[: len(generated)] == generated, hint
    for key in generated:
        assert doc["models"][key] == fresh["models"][key], f"{key}: {hint}"
    assert doc["matched_pairs"][: len(fresh["matched_pairs"])] == fresh["matched_pairs"], hint
    if len(models) == len(generated) and len(doc["matched_pairs"]) == len(fresh["matched_pairs"]):
        assert text == tool.render(fresh), hint
    assert tool.render(tool.build(shared, existing=doc)) == tool.render(doc)  # a rerun keeps the user entries


def test_models_yaml_is_the_tool_output(repo, shared, tool):
    check_generated_entries((repo / "config" / "models.yaml").read_text(), shared, tool)


def test_a_hand_added_model_is_one_yaml_entry_that_the_tool_keeps(repo, shared, tool, schema, tmp_path):
    """Adding a model is one YAML entry appended to config/models.yaml; rerunning the tool keeps it, while a
    hand edit of a generated entry is overwritten by the tool's value."""
    doc = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    mine = {**doc["models"]["mistral-dna-1m-ft-prom"], "display": "my copy"}
    doc["models"]["my-model"] = mine
    doc["models"]["kmer-3"] = {**doc["models"]["kmer-3"], "notes": "hand edit"}
    rebuilt = tool.build(shared, existing=doc)
    assert rebuilt["models"]["my-model"] == mine and list(rebuilt["models"])[-1] == "my-model"
    assert rebuilt["models"]["kmer-3"]["notes"] != "hand edit"
    out = tmp_path / "models.yaml"
    out.write_text(tool.render(rebuilt))
    assert load_registry(out, schema).models["my-model"].display == "my copy"


def test_plantcaduceus_l32_tokenizer_is_single_nucleotide(registry):
    """models.tsv says bpe; its own tokenizer field and registry.yaml (verified) say single nucleotide (char)."""
    e = registry["models"]["PlantCaduceus_l32"]
    assert e["tokenizer_type"] == "single-nucleotide" and "char" in e["tokenizer"]
    assert "tokenizer type: models.tsv says bpe" in e["notes"] and "verified registry.yaml value is used" in e["notes"]


def test_tokenizer_type_matches_each_entrys_own_tokenizer(registry, tool):
    """Wherever an entry's tokenizer description classifies, its tokenizer_type agrees (PlantCaduceus_l32 said bpe
    next to 'single nucleotide (char)'; Enformer single-nucleotide next to 'one-hot')."""
    wrong = {
        k: (v["tokenizer_type"], v.get("tokenizer"))
        for k, v in registry["models"].items()
        if tool.tokenizer_type_of(str(v.get("tokenizer", ""))) not in ("unknown", v["tokenizer_type"])
    }
    assert not wrong


def _fixed_kmer_k(entry: dict) -> int | None:
    """k of a fixed non-overlapping k-mer vocabulary, read from the entry's tokenizer facts (its `tokenizer`
    description and `tokenizer_type`); None for any other tokenizer. A vocabulary with a single-nucleotide
    fallback (Nucleotide Transformer's 6-mers) spells a trailing partial k-mer and needs no rule; overlapping
    k-mers (DNABERT-1) and shifted k-mers are not fixed windows."""
    text = str(entry.get("tokenizer", "")).lower()
    if "fallback" in text or "overlapping" in text.replace("non-overlapping", ""):
        return None
    m = re.search(r"(\d+)-mer non-overlapping|non-overlapping (\d+)-mer", text)
    if m:
        return int(m.group(1) or m.group(2))
    if entry.get("tokenizer_type") == "codon" and re.search(r"\b3-mer\b|\bcodon\b", text):
        return 3
    return None


def test_every_fixed_kmer_vocabulary_has_its_length_rule(registry):
    """A fixed non-overlapping k-mer vocabulary turns the trailing len % k bases into UNK (GENERator: `<oov>`):
    every such entry trims to a multiple of k (`extraction.length_multiple`), derived from the tokenizer facts
    of every entry, not a list of names."""
    fixed = {k: _fixed_kmer_k(e) for k, e in registry["models"].items() if _fixed_kmer_k(e)}
    assert {"GENERator-eukaryote-3b-base", "GENERator-eukaryote-1.2b-base"} <= set(fixed)
    assert fixed["GENERator-eukaryote-3b-base"] == 6
    assert not any(k.startswith(("nucleotide-transformer-v2-50m-multi", "DNABERT-6")) for k in fixed)
    wrong = {k: (n, registry["models"][k]["extraction"].get("length_multiple")) for k, n in fixed.items()}
    wrong = {k: v for k, v in wrong.items() if v[0] != v[1]}
    assert not wrong, f"(k, length_multiple) of fixed k-mer vocabularies without their length rule: {wrong}"


def test_verified_registry_facts_win_for_all_paper_models(registry, reference, tool):
    """All 40 paper models: for the three pair-derivation factors, a verified (V) registry.yaml record's value
    is used; any disagreement with models.tsv is written in the notes."""
    checked = 0
    for key, v in registry["models"].items():
        if "paper" not in v or not v.get("registry_name"):
            continue
        ref = reference[v["registry_name"]]
        for field, ref_value in (
            ("architecture_family", tool.arch_family_of(ref["architecture"])),
            ("tokenizer_type", tool.tokenizer_type_of(ref["tokenizer"])),
            ("pretraining_domain", ref["domain"]),
        ):
            if ref_value == "unknown":
                continue
            if str(ref["verified"]).startswith("V"):
                assert v[field] == ref_value, (key, field)
                checked += 1
            elif v[field] != ref_value:  # unverified record: the paper's sheet kept, the disagreement noted
                assert f"{tool.FACT_LABEL[field]}: models.tsv says {v[field]}" in v["notes"], (key, field)
    assert checked >= 75  # 26 paper models with a verified record, 3 factors each


def test_disagreements_are_noted(registry):
    notes = {k: v.get("notes", "") for k, v in registry["models"].items()}
    assert (
        "tokenizer type: models.tsv says single-nucleotide, registry.yaml says one-hot"
        in notes["enformer-official-rough"]
    )
    assert "registry.yaml says codon" in notes["nucleotide-transformer-v2-50m-3mer-multi-species"]
    # DNAGPT's registry record (K) covers the whole family; the 0.1B human checkpoint is human, 4,096 tokens
    h = registry["models"]["dna_gpt0.1b_h"]
    assert h["pretraining_domain"] == "human" and h["context_tokens"] == 4096 == h["extraction"]["max_tokens"]
    assert "registry.yaml is unverified there" in h["notes"]
    assert registry["models"]["dna_gpt3b_m"]["pretraining_domain"] == "multispecies"


def test_no_derived_pair_claims_a_false_tokenizer_factor(registry, tool):
    """Derived pairs (every model, the configured ratio 2): a pair 'differing in tokenizer' has tokenizers whose
    own descriptions differ in type, and a pair holding the tokenizer equal has descriptions of one type."""
    meta = with_param_count(model_frame(registry["models"]), "current")
    pairs = _derive_pairs(meta, list(meta.index), 2.0)
    ids = {p["id"] for p in pairs}
    assert "PlantCAD2-Medium-l48-d1024~PlantCaduceus_l32" not in ids  # both char: no tokenizer difference
    assert "PlantCaduceus_l32~plant-dnagemma-BPE" not in ids  # char vs BPE: the tokenizer is not held equal
    assert "borzoi-replicate-0~enformer-official-rough" not in ids  # both one-hot
    for p in pairs:
        kinds = {tool.tokenizer_type_of(str(registry["models"][m].get("tokenizer", ""))) for m in p["models"]}
        if "unknown" in kinds:
            continue
        if p["differs_in"] == "tokenizer":
            assert len(kinds) == 2, p
        else:
            assert len(kinds) == 1, p


def test_genomeocean_hub_ids_follow_the_verified_records(registry, reference):
    """registry.yaml verifies GenomeOcean-100M and -4B under pGenomeOcean/; models.tsv's DOEJGI/ ids are not used,
    and the notes say why (these ids are what `geneb pin-revisions` asks the hub for)."""
    go = {k: v for k, v in registry["models"].items() if v.get("registry_name", "").startswith("GenomeOcean")}
    assert set(go) == {"GenomeOcean-100M", "GenomeOcean-500M", "GenomeOcean-4B"}
    for key, v in go.items():
        assert v["source"]["hub_id"] == reference[v["registry_name"]]["hf_id"] == f"pGenomeOcean/{key}", key
    for key in ("GenomeOcean-500M", "GenomeOcean-4B"):
        assert f"not models.tsv's DOEJGI/{key}" in go[key]["notes"]
    assert "every verified GenomeOcean record is under pGenomeOcean/" in go["GenomeOcean-500M"]["notes"]


# ---- extraction.max_tokens against context_tokens -----------------------------------------------------------


def _entry(registry, **changes):
    e = copy.deepcopy(registry["models"]["mistral-dna-1m-ft-prom"])  # context_tokens 256, max_tokens 256
    e.update(changes)
    return e


def test_max_tokens_above_context_is_an_error(registry):
    e = _entry(registry)
    e["extraction"]["max_tokens"] = 4096
    problems = check_registry({"models": {"m": e}})
    assert any("model m: extraction.max_tokens 4096 exceeds context_tokens 256" in p for p in problems), problems
    assert not check_registry({"models": {"m": {**e, "beyond_trained_context": "the paper's cap, on purpose"}}})
    assert not check_registry({"models": {"m": _entry(registry)}})  # equal is fine
    unknown = _entry(registry, context_tokens=None)
    unknown["extraction"]["max_tokens"] = 4096
    assert not check_registry({"models": {"m": unknown}})  # context not stated in tokens: nothing to compare


def test_a_stale_beyond_context_reason_is_an_error(registry):
    problems = check_registry({"models": {"m": _entry(registry, beyond_trained_context="no longer true")}})
    assert any("beyond_trained_context is set" in p for p in problems), problems


def test_lucaone_overrun_is_declared_and_caught_without_the_reason(registry, repo, tmp_path, schema):
    """LucaOne: context 1,280 tokens (registry.yaml), the paper's cap 4,096 tokens; both are tokens of a
    single-nucleotide tokenizer. Kept as the paper default with the reason; the file without it is refused."""
    luca = registry["models"]["LucaOne-default-step36M"]
    assert luca["context_tokens"] == 1280 and luca["extraction"]["max_tokens"] == 4096
    assert (
        "single-nucleotide" in luca["beyond_trained_context"]
        and "max_position_embeddings" in luca["beyond_trained_context"]
    )
    doc = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    del doc["models"]["LucaOne-default-step36M"]["beyond_trained_context"]
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(
        RegistryError, match="LucaOne-default-step36M: extraction.max_tokens 4096 exceeds context_tokens 1280"
    ):
        load_registry(tmp_path / "models.yaml", schema)
    doc["models"]["LucaOne-default-step36M"]["beyond_trained_context"] = ""
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(RegistryError, match="beyond_trained_context"):  # the schema wants a reason, not ""
        load_registry(tmp_path / "models.yaml", schema)


def test_no_other_entry_exceeds_its_context(registry):
    over = sorted(
        k
        for k, v in registry["models"].items()
        if isinstance(v.get("context_tokens"), int)
        and isinstance((v.get("extraction") or {}).get("max_tokens"), int)
        and v["extraction"]["max_tokens"] > v["context_tokens"]
    )
    assert over == ["LucaOne-default-step36M"]


def _docs_user_entries(repo):
    """The walk-through's YAML block of docs/adding-a-model.md (section 5), as text to append under `models:`."""
    text = (repo / "docs" / "adding-a-model.md").read_text()
    marker = "<!-- tests/registry/test_registry_facts.py appends the next block to a copy of config/models.yaml -->"
    block = text.split(marker, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    return block


def test_the_suite_passes_with_the_docs_user_entries_appended(repo, shared, tool, schema, tmp_path):
    """Appending the doc's two user entries to config/models.yaml (as text, as a user does) keeps the registry
    valid and the registry tests green, and they resolve to the settings of the shipped entries of the same
    checkpoints: only the model id differs, so the doc's walk-through gives the golden-tested embeddings."""
    from test_registry import check_runnable

    from geneb.registry.load import extraction_settings

    text = (repo / "config" / "models.yaml").read_text().rstrip("\n") + "\n" + _docs_user_entries(repo)
    sheet = tmp_path / "models.yaml"
    sheet.write_text(text)
    mine = load_registry(sheet, schema)
    assert [m for m, s in mine.models.items() if s.twin is None][-2:] == ["my-hyena", "my-codon"]
    check_generated_entries(text, shared, tool)
    check_runnable(mine)
    assert not check_registry(mine)
    for user, shipped in (("my-hyena", "hyenadna-tiny-1k-ft-anticapt"), ("my-codon", "mistral-codon-1m-ft-mrfp")):
        a, b = extraction_settings(mine, user, {}), extraction_settings(mine, shipped, {})
        assert {**a, "model": shipped} == b, user
