"""Analytic forward FLOPs of registered models against torch's own count (`torch.utils.flop_counter`) on the real
checkpoints in ../shared/models, and an analytic row for every registered model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from geneb.registry.flops import (
    Architecture,
    analytic_rows,
    architecture,
    flops_per_kb,
    forward_flops,
    tokens_per_base,
)
from geneb.registry.load import load_registry

#: model id -> from_pretrained options that make every matmul visible to the counter (eager attention and
#: experts: the fused CPU kernels are not in torch's flop registry; the arithmetic is the same)
CHECKPOINTS = {
    "mistral-dna-1m-ft-prom": {"attn_implementation": "eager", "experts_implementation": "eager"},
    # the checkpoint's pad_token_id equals its vocab size (../shared/models/README.md): any in-range id loads it
    "mistral-codon-1m-ft-mrfp": {"attn_implementation": "eager", "experts_implementation": "eager", "pad_token_id": 0},
    "hyenadna-tiny-1k-ft-anticapt": {"trust_remote_code": True},
}


@pytest.fixture(scope="module")
def registry(repo):
    return load_registry(repo / "config" / "models.yaml")


def _measured(folder: Path, options: dict, n_tokens: int) -> int:
    from transformers import AutoModel

    config = next(folder.rglob("config.json")).parent
    model = AutoModel.from_pretrained(config, **options).eval()
    ids = torch.randint(5, 9, (1, n_tokens), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids)
    return int(counter.get_total_flops())


@pytest.mark.parametrize("model", sorted(CHECKPOINTS))
def test_analytic_flops_match_torch_counter_on_real_checkpoints(registry, model):
    """Within 10 % at two lengths (the attention's n_ctx^2 term and Hyena's per-position filter make the ratio
    depend on length); the FFT convolution, which the counter does not see, is compared apart."""
    arch = architecture(registry.models[model])
    for n_tokens in (64, 250):
        measured = _measured(Path(registry.models[model].source.path), CHECKPOINTS[model], n_tokens)
        analytic = forward_flops(arch, n_tokens)
        assert analytic.counted == pytest.approx(measured, rel=0.10), (model, n_tokens)
    if arch.kind == "hyena":
        assert analytic.fft > 0 and analytic.total > analytic.counted


def test_windows_pay_their_own_attention():
    """A sequence of two full windows costs twice one window (no n^2 across windows); one token more adds one."""
    a = Architecture("m", "transformer", 1e6, 2, 64, 1.0, 100, "test", d_ff=256, d_kv=64)
    one, two = forward_flops(a, 100), forward_flops(a, 200)
    assert two.total == pytest.approx(2 * one.total)
    assert two.attention == pytest.approx(2 * 4 * 2 * 100 * 100 * 64)
    assert forward_flops(a, 201).total == pytest.approx(two.total + forward_flops(a, 1).total)
    with pytest.raises(ValueError, match="n_tokens -1"):
        forward_flops(a, -1)


def test_tokens_per_base_by_tokenizer():
    assert tokens_per_base("k-mer", "6-mer non-overlapping (+single-nt fallback)") == pytest.approx(1 / 6)
    assert tokens_per_base("k-mer", "overlapping 3-mer (vocab 69)") == 1.0
    assert tokens_per_base("codon") == pytest.approx(1 / 3) and tokens_per_base("single-nucleotide") == 1.0
    assert tokens_per_base("bpe") == pytest.approx(0.2)


def test_every_registered_model_has_an_analytic_row(registry):
    """Every model, the paper's 40 included: finite FLOPs per kb, positive for every neural paper model, a formula
    and where its depth and width came from; the local checkpoints' from their config.json."""
    rows = {r["model"]: r for r in analytic_rows(registry)}
    assert set(rows) == set(registry.models)
    paper = [r for r in rows.values() if r["paper"]]
    assert len(paper) == 40
    assert all(math.isfinite(r["flops_per_kb"]) and r["flops_per_kb"] > 0 for r in paper)
    assert all(r["formula"] and r["arch_source"] and r["embedding_dim"] for r in paper)
    assert rows["mistral-dna-1m-ft-prom"]["arch_source"] == "config.json"
    assert rows["kmer-3"]["flops_per_kb"] == 0
    # a 1 kb input is 200 BPE tokens of Mistral-DNA: inside its 256-token window
    mistral = architecture(registry.models["mistral-dna-1m-ft-prom"])
    assert flops_per_kb(mistral).total == pytest.approx(forward_flops(mistral, 200).total)
