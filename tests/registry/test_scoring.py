"""The registry's zero-shot fields (geneb.registry.spec): `lm_head` with its source for the paper's 40 models,
`scoring:` with the family default, and the errors that name the model and the value."""

from __future__ import annotations

from collections import Counter

import pytest

from geneb.registry.families import _default_scoring, resolved_lm_head, resolved_scoring, scoring_problems
from geneb.registry.load import check_registry, load_registry


@pytest.fixture(scope="module")
def raw(repo):
    return load_registry(repo / "config" / "models.yaml").raw["models"]


def test_every_paper_model_says_whether_it_has_a_head_and_why(raw):
    paper = {k: v for k, v in raw.items() if "paper" in v}
    assert len(paper) == 40
    assert all(v.get("lm_head") in ("masked", "causal", "none") and v.get("lm_head_source") for v in paper.values())
    assert Counter(v["lm_head"] for v in paper.values()) == {"masked": 18, "causal": 16, "none": 6}
    assert paper["enformer-official-rough"]["lm_head"] == "none"  # supervised on tracks: no token head
    assert paper["nucleotide-transformer-v2-50m-multi-species"]["lm_head"] == "masked"
    assert paper["METAGENE-1"]["lm_head"] == "causal"


def test_llr_is_never_a_default_without_a_head(raw):
    for name, entry in raw.items():
        if resolved_lm_head(entry) == "none":
            assert "llr" not in resolved_scoring(entry), name
    # the shipped fine-tuned checkpoints keep a classifier, not their LM head
    assert resolved_scoring(raw["mistral-dna-1m-ft-prom"]) == ("embedding",)
    assert resolved_scoring(raw["GenomeOcean-4B"]) == ("llr", "embedding")
    # a head GENEB has no loader for (Evo's own package) scores by embeddings by default
    assert resolved_lm_head(raw["evo-1-131k-base"]) == "causal"
    assert resolved_scoring(raw["evo-1-131k-base"]) == ("embedding",)


def test_family_defaults():
    assert _default_scoring({"family": "hf-decoder"}) == ("llr", "embedding")
    assert _default_scoring({"family": "caduceus"}) == ("llr", "embedding")
    assert _default_scoring({"family": "hf-encoder"}) == ("embedding",)  # often a bare backbone: say lm_head
    assert _default_scoring({"family": "hf-encoder", "lm_head": "masked"}) == ("llr", "embedding")
    assert resolved_scoring({"family": "hf-decoder", "scoring": ["embedding"]}) == ("embedding",)


def test_an_unknown_scorer_or_llr_without_a_head_is_named(raw):
    problems = scoring_problems("m", {"family": "hf-decoder", "scoring": ["llr", "perplexity"]})
    assert problems == ["model m: scoring names an unknown scorer 'perplexity' (known: ['llr', 'embedding'])"]
    problems = scoring_problems("e", {"family": "hf-encoder", "scoring": ["llr"]})
    assert len(problems) == 1 and "model e: scoring lists llr but the model has no language-model head" in problems[0]
    assert "lm_head 'both'" in scoring_problems("b", {"family": "hf-encoder", "lm_head": "both"})[0]
    broken = {"models": {**raw, "METAGENE-1": {**raw["METAGENE-1"], "scoring": ["llr", "cosine"]}}}
    assert any("model METAGENE-1: scoring names an unknown scorer 'cosine'" in p for p in check_registry(broken))
    assert not [p for p in check_registry({"models": raw}) if "scor" in p or "lm_head" in p]
