"""Batch planning and the out-of-memory step-down (geneb.encoders.engine.batching)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from extraction_support import random_dna
from geneb.encoders.engine.batching import StepDownRunner, is_out_of_memory, largest_first, plan_batches


def test_plan_covers_every_item_once_shortest_first():
    lengths = [5, 1, 9, 1, 3, 7, 2]
    plan = plan_batches(lengths, 3)
    flat = [i for b in plan for i in b]
    assert sorted(flat) == list(range(7)) and len(flat) == 7
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(len(b) <= 3 for b in plan)
    assert flat[:2] == [1, 3]  # ties keep input order


def test_plan_equal_length_buckets():
    plan = plan_batches([4, 4, 2, 4, 2, 9], 2, equal_length=True)
    assert all(len({[4, 4, 2, 4, 2, 9][i] for i in b}) == 1 for b in plan)
    assert sorted(i for b in plan for i in b) == list(range(6))
    with pytest.raises(ValueError):
        plan_batches([1], 0)


def test_out_of_memory_detection():
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: out of memory"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_step_down_keeps_order_and_sticks():
    seen = []

    def fn(batch):
        seen.append(len(batch))
        if len(batch) > 2:
            raise torch.OutOfMemoryError("out of memory")
        return [i * 10 for i in batch]

    runner = StepDownRunner(fn, what="model X")
    out = {}
    runner.run([[0, 1, 2, 3, 4], [5, 6, 7, 8]], lambda b, r: out.update(zip(b, r)))
    assert out == {i: i * 10 for i in range(9)}
    assert runner.step_downs == 2 and runner.max_batch == 2
    assert seen[-2:] == [2, 2]  # the second batch went straight to the smaller size after one failure


def test_step_down_other_errors_propagate_and_single_item_oom_names_it():
    with pytest.raises(ValueError, match="boom"):
        StepDownRunner(lambda b: (_ for _ in ()).throw(ValueError("boom")), what="m").run([[0, 1]], lambda b, r: None)

    def always(batch):
        raise torch.OutOfMemoryError("out of memory")

    with pytest.raises(MemoryError, match="model M: out of memory on a single item"):
        StepDownRunner(always, what="model M").run([[3, 4]], lambda b, r: None)


def test_encoder_out_of_memory_step_down_same_embeddings(zoo, monkeypatch):
    """A real encoder whose forward fails above 2 sequences: same vectors, same order, the step-down counted in
    the result of the call that stepped down."""
    enc = zoo.encoder("llama", batch_size=8)
    seqs = [random_dna(n, n) for n in (90, 20, 60, 33, 120, 45, 70)]
    first = enc.embed(seqs)
    reference = first.embeddings
    assert first.counters.step_downs == 0
    real = enc.hidden_states

    def limited(ids, attn, **kw):
        if ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(ids, attn, **kw)

    monkeypatch.setattr(enc, "hidden_states", limited)
    res = enc.embed(seqs)
    np.testing.assert_allclose(res.embeddings, reference, atol=1e-5)
    assert res.counters.step_downs > 0


def test_a_single_item_out_of_memory_names_its_row():
    """The item index is a chunk position (a long row has several); the error names the task row instead."""
    from geneb.core.errors import ExtractionError, ItemOutOfMemoryError

    def always(batch):
        raise MemoryError("out of memory")

    rows_of_chunks = {0: 100, 1: 412, 2: 412}  # chunk -> row id
    with pytest.raises(ItemOutOfMemoryError, match="model M: out of memory on row 100 alone") as err:
        StepDownRunner(always, what="model M", row_of=rows_of_chunks.get).run([[0, 1, 2]], lambda b, r: None)
    assert err.value.rows == [100] and isinstance(err.value, ExtractionError) and isinstance(err.value, MemoryError)


def test_largest_batch_runs_first_with_the_same_members():
    """Shortest first left an out-of-memory on the longest rows to the end of a long job: the batch
    with the most padded tokens runs first, then the others widest first, each with its plan members."""
    lengths = [5, 1, 9, 1, 3, 7, 2, 9]
    plan = plan_batches(lengths, 3)  # [[1, 3, 6], [4, 0, 5], [2, 7]]
    order = largest_first(plan, lengths)
    assert sorted(map(tuple, order)) == sorted(map(tuple, plan))
    assert order[0] == [4, 0, 5]  # 3 x 7 = 21 padded tokens beat 2 x 9 = 18
    assert order[1:] == [[2, 7], [1, 3, 6]]
    assert largest_first(plan_batches([4, 4, 8], 2), [4, 4, 8]) == [[2], [0, 1]]  # 2 x 4 = 1 x 8: the wider first
    assert largest_first([[0]], [3]) == [[0]] and largest_first([], []) == []


def test_encoder_runs_its_largest_batch_first_and_vectors_are_bit_identical(zoo, monkeypatch):
    """The first forward pass of an embed call is its largest batch (most padded tokens); the vectors and their row order are
    those of shortest-first order, bit for bit."""
    from geneb.encoders.engine import tokenmodel

    enc = zoo.encoder("llama", batch_size=2)
    seqs = [random_dna(n, n) for n in (90, 20, 60, 33, 120, 45, 70)]
    real, widths = enc.hidden_states, []

    def recording(ids, attn, **kw):
        widths.append(tuple(ids.shape))
        return real(ids, attn, **kw)

    monkeypatch.setattr(enc, "hidden_states", recording)
    largest = enc.embed(seqs).embeddings
    assert widths[0][0] * widths[0][1] == max(n * t for n, t in widths) and widths[0][0] == 2
    assert [w[1] for w in widths[1:]] == sorted((w[1] for w in widths[1:]), reverse=True)
    widths.clear()
    monkeypatch.setattr(tokenmodel, "largest_first", lambda plan, lengths: plan)  # the old order
    shortest = enc.embed(seqs).embeddings
    assert [w[1] for w in widths] == sorted(w[1] for w in widths)
    assert np.array_equal(largest, shortest)


def test_the_split_with_the_longest_row_is_embedded_first(zoo, make_task, tmp_path, monkeypatch):
    """Train before test left an out-of-memory on a long test row to the end of the job: the split holding the
    longest row runs first; the file keeps its layout and row order."""
    import h5py

    from geneb.extract import step as extract

    calls = []
    real = extract.embed_with_rc

    def recording(encoder, sequences, rows, rc, *, desc=None):
        calls.append(desc.rsplit(" ", 1)[-1])
        return real(encoder, sequences, rows, rc, desc=desc)

    monkeypatch.setattr(extract, "embed_with_rc", recording)
    task = make_task([random_dna(40, 1), random_dna(60, 2)], [random_dna(30, 3), random_dna(90, 4), random_dna(20, 5)])
    extract.extract_task(zoo.settings("llama"), task, tmp_path / "e.h5", progress=False)
    assert calls == ["test", "train"]
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f["test"]["row"][:].tolist() == [0, 1, 2] and f["train"]["row"][:].tolist() == [0, 1]
    calls.clear()
    extract.extract_task(
        zoo.settings("llama"),
        make_task([random_dna(99, 6)], [random_dna(30, 7)], task="u"),
        tmp_path / "u.h5",
        progress=False,
    )
    assert calls == ["train", "test"]
