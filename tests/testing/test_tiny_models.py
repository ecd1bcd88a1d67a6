"""The test-only builders of tests/tiny_models.py: each writes a checkpoint folder that transformers loads, with
the size asked for, and the same seed gives the same weights."""

from __future__ import annotations

import pytest

from tiny_models import build_tiny, write_remote_hyena


def test_a_tiny_random_esm_loads_with_the_size_asked_for(tmp_path):
    from transformers import AutoModel

    folder = build_tiny("esm", tmp_path / "esm", hidden=16, layers=3, seed=1)
    model = AutoModel.from_pretrained(folder)
    assert model.config.hidden_size == 16 and model.config.num_hidden_layers == 3


def test_the_same_seed_gives_the_same_weights(tmp_path):
    import torch
    from transformers import AutoModel

    a = AutoModel.from_pretrained(build_tiny("esm", tmp_path / "a", hidden=16, layers=1, seed=3))
    b = AutoModel.from_pretrained(build_tiny("esm", tmp_path / "b", hidden=16, layers=1, seed=3))
    c = AutoModel.from_pretrained(build_tiny("esm", tmp_path / "c", hidden=16, layers=1, seed=4))
    pa, pb, pc = (next(iter(m.parameters())) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_a_family_that_needs_a_tokenizer_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer_dir"):
        build_tiny("bert", tmp_path / "bert")


def test_the_remote_code_hyena_loads_through_trust_remote_code(tmp_path):
    from transformers import AutoModel

    folder = write_remote_hyena(tmp_path / "hyena", d_model=8)
    model = AutoModel.from_pretrained(folder, trust_remote_code=True)
    assert sum(p.numel() for p in model.parameters()) > 0
