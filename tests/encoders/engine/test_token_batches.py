"""Batches sized to a token budget (execution.batch_tokens), the row accumulator behind cross-chunk pooling,
and the host-to-device copy; CPU results are those of row-count batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from extraction_support import random_dna
from geneb.encoders.engine.batching import plan_batches, plan_chunks, plan_token_batches
from geneb.encoders.engine.chunking import RowAccumulator
from geneb.encoders.engine.tokenmodel import to_device


def _check_plan(plan: list[list[int]], lengths: list[int], budget: int) -> None:
    flat = [i for b in plan for i in b]
    assert sorted(flat) == list(range(len(lengths))) and len(flat) == len(lengths)  # every item exactly once
    assert [lengths[i] for i in flat] == sorted(lengths)  # length-sorted buckets
    for b in plan:
        padded = len(b) * max(lengths[i] for i in b)
        assert padded <= budget or len(b) == 1, (b, padded)


@pytest.mark.parametrize("budget", [1, 7, 64, 500, 10_000])
def test_token_plan_covers_every_item_once_within_the_budget(budget):
    rng = np.random.default_rng(budget)
    lengths = [int(x) for x in rng.integers(1, 300, size=200)]
    plan = plan_token_batches(lengths, budget)
    _check_plan(plan, lengths, budget)
    if budget >= 10_000:
        assert len(plan) < len(plan_batches(lengths, 8))  # large budgets mean fewer, fuller batches


def test_token_plan_packs_short_items_densely_and_gives_a_long_item_its_own_batch():
    lengths = [3, 50, 4, 4, 2, 20]
    plan = plan_token_batches(lengths, 12)
    assert plan == [[4, 0, 2], [3], [5], [1]]  # 3 x 4 = 12; then 4 alone (2 x 20 > 12); 20 and 50 exceed it alone
    assert plan_token_batches([5, 5, 5, 5], 20) == [[0, 1, 2, 3]]
    assert plan_token_batches([], 10) == []


def test_token_plan_equal_length_buckets_and_errors():
    lengths = [4, 4, 2, 4, 2, 9, 4]
    plan = plan_token_batches(lengths, 8, equal_length=True)
    assert all(len({lengths[i] for i in b}) == 1 for b in plan)
    assert plan == [[2, 4], [0, 1], [3, 6], [5]]
    with pytest.raises(ValueError, match="batch_tokens"):
        plan_token_batches([1], 0)


def test_plan_chunks_picks_the_budget_only_when_set():
    lengths = [5, 1, 9, 1, 3, 7, 2]
    assert plan_chunks(lengths, batch_size=3) == plan_batches(lengths, 3)
    assert plan_chunks(lengths, batch_size=3, batch_tokens=9) == plan_token_batches(lengths, 9)


@pytest.mark.parametrize("method", ["mean", "max", "cls"])
def test_row_accumulator_matches_a_plain_loop_bit_for_bit(method):
    """The vectorised accumulation gives the engine's former per-chunk loop, bit for bit, in any arrival order."""
    rng = np.random.default_rng(0)
    n_rows, d = 6, 5
    rows = np.array([0, 1, 1, 2, 3, 3, 3, 4, 5] if method != "cls" else [0, 1, 2, 3, 4, 5])
    pooled = rng.standard_normal((len(rows), d)).astype(np.float32)
    used = rng.integers(1, 40, size=len(rows)) if method != "cls" else np.ones(len(rows), int)
    acc, counts = np.zeros((n_rows, d)), np.zeros(n_rows, np.int64)
    if method == "max":
        acc[:] = -np.inf
    for i, v, n in zip(rows, pooled.astype(np.float64), used):
        acc[i] = acc[i] + v * n if method == "mean" else (np.maximum(acc[i], v) if method == "max" else v)
        counts[i] += n
    want = (acc / counts[:, None] if method == "mean" else acc).astype(np.float32)
    got = RowAccumulator(n_rows, method)
    for part in (slice(0, 4), slice(4, None)):  # two batches
        got.add(rows[part], pooled[part], used[part])
    vectors, n_tokens = got.result()
    assert np.array_equal(vectors, want) and np.array_equal(n_tokens, counts)


def test_row_accumulator_refuses_bad_input():
    acc = RowAccumulator(3, "mean")
    with pytest.raises(ValueError, match="no chunk vectors"):
        acc.result()
    with pytest.raises(ValueError, match="do not match"):
        acc.add(np.array([0, 1]), np.zeros((3, 2)), np.array([1, 1]))
    acc.add(np.array([0, 1]), np.ones((2, 2)), np.array([1, 1]))
    with pytest.raises(ValueError, match="width 3 after width 2"):
        acc.add(np.array([2]), np.ones((1, 3)), np.array([1]))
    with pytest.raises(ValueError, match="row 2 received no pooled position"):
        acc.result()
    with pytest.raises(ValueError, match="unknown pooling"):
        RowAccumulator(1, "median")


def test_encoder_token_budget_batches_same_vectors_in_input_order(zoo, monkeypatch):
    """A token budget changes only the batches: each forward pass holds at most the budget (or one chunk), and
    the vectors, in input order, are those of row-count batches and of one row at a time."""
    enc = zoo.encoder("llama", batch_size=3)
    seqs = [random_dna(n, n) for n in (90, 20, 60, 33, 120, 45, 70, 20, 300)]
    by_rows = enc.embed(seqs)
    alone = np.vstack([enc.embed([s]).embeddings for s in seqs])
    enc = zoo.encoder("llama", batch_size=3, batch_tokens=64)
    real, shapes = enc.hidden_states, []

    def recording(ids, attn, **kw):
        shapes.append(tuple(ids.shape))
        return real(ids, attn, **kw)

    monkeypatch.setattr(enc, "hidden_states", recording)
    by_tokens = enc.embed(seqs)
    assert shapes and all(b * t <= 64 or b == 1 for b, t in shapes)
    assert any(b > 3 for b, _ in shapes)  # short rows share a batch larger than batch_size
    assert sum(b for b, _ in shapes) == by_tokens.n_chunks.sum()  # every chunk exactly once
    np.testing.assert_allclose(by_tokens.embeddings, by_rows.embeddings, atol=1e-5)
    np.testing.assert_allclose(by_tokens.embeddings, alone, atol=1e-5)
    assert np.array_equal(by_tokens.n_tokens, by_rows.n_tokens)


def test_batch_tokens_below_one_is_refused(zoo):
    from geneb.extract.step import build_encoder

    with pytest.raises(ValueError, match="batch_tokens must be >= 1"):
        build_encoder(zoo.settings("llama"), batch_tokens=0, progress=False)


def test_to_device_on_cpu_is_the_tensor_itself():
    t = torch.arange(6).reshape(2, 3)
    assert to_device(t, "cpu") is t


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_to_device_on_cuda_copies_through_pinned_memory():
    t = torch.arange(6).reshape(2, 3)
    moved = to_device(t, "cuda")
    assert moved.device.type == "cuda" and torch.equal(moved.cpu(), t)
