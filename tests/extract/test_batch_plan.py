"""The batch plan (geneb.extract.batch_plan): the default (`execution.batch_tokens: by_device`) is a fixed budget
per device class, taken from a table without any timing; the CPU plan chosen by measurement (`auto`): the probe
takes the cheapest candidate, the record spares later loads the probe until what it was measured on changes;
either plan never enters a file's key, and its vectors equal fixed batches' within the batch-invariance
tolerance."""

from __future__ import annotations

import json
import time

import h5py
import numpy as np
import pytest

from extraction_support import random_dna
from geneb.encoders.engine.invariance import _DEFAULT_ATOL
from geneb.extract import batch_plan
from geneb.extract.step import extract_task, load_model


class _Burner:
    """A stand-in token encoder whose embed burns CPU time that depends on its budget (2048 is cheapest)."""

    load_check_names = ("vocabulary", "max_length", "padding_invariance")  # the token-model engine's

    def __init__(self):
        self.batch_size, self.batch_tokens, self.progress = 64, None, True
        self.seen: list[int | None] = []

    def make_chunks(self, *args):
        raise AssertionError("not used")

    def embed(self, seqs, rows=None, *, desc=None):
        self.seen.append(self.batch_tokens)
        end = time.process_time() + (0.002 if self.batch_tokens == 2048 else 0.03)
        while time.process_time() < end:
            pass


def test_the_probe_takes_the_budget_of_least_cpu_time_and_restores_the_encoder():
    enc = _Burner()
    best, seconds = batch_plan.probe_budget(enc, candidates=(1024, 2048, 4096))
    assert best == 2048 and set(seconds) == {1024, 2048, 4096}
    assert seconds[2048] < seconds[1024] and seconds[2048] < seconds[4096]
    assert (enc.batch_size, enc.batch_tokens, enc.progress) == (64, None, True)


def test_auto_is_none_on_a_gpu_and_without_token_batches_and_a_typo_is_refused(tmp_path):
    kw = {"device": "cpu", "checks_dir": tmp_path, "model": "m", "settings_hash": "h", "identity_sha256": "i"}
    gpu = _Burner()
    assert batch_plan.resolve_batch_tokens(gpu, "auto", **{**kw, "device": "cuda"}) is None and not gpu.seen
    kmer = _Burner()
    kmer.load_check_names = ()  # an encoder without token batches (k-mer counts)
    assert batch_plan.resolve_batch_tokens(kmer, "auto", **kw) is None and not kmer.seen
    assert batch_plan.resolve_batch_tokens(_Burner(), 4096, **kw) == 4096
    assert batch_plan.resolve_batch_tokens(_Burner(), None, **kw) is None
    with pytest.raises(ValueError, match="'fast'"):
        batch_plan.resolve_batch_tokens(_Burner(), "fast", **kw)
    assert not (tmp_path / batch_plan._BATCH_PLAN_FILE).exists()


def test_a_failing_probe_leaves_batches_of_batch_size_and_records_nothing(tmp_path):
    class Refusing(_Burner):
        def embed(self, seqs, rows=None, *, desc=None):
            raise ValueError("row 0: 21 tokens > 14 (long_policy: error)")

    kw = {"device": "cpu", "checks_dir": tmp_path, "model": "m", "settings_hash": "h", "identity_sha256": "i"}
    assert batch_plan.resolve_batch_tokens(Refusing(), "auto", **kw) is None
    assert not (tmp_path / batch_plan._BATCH_PLAN_FILE).exists()


def test_the_record_spares_later_loads_the_probe_until_the_cpu_changes(zoo, tmp_path, monkeypatch):
    calls = []
    real = batch_plan.probe_budget
    monkeypatch.setattr(batch_plan, "probe_budget", lambda enc: (calls.append(1), real(enc))[1])
    settings = zoo.settings("mistral-dna")
    first = load_model(settings, checks_dir=tmp_path, batch_tokens="auto", progress=False)
    record = json.loads((tmp_path / batch_plan._BATCH_PLAN_FILE).read_text())
    assert first.encoder.batch_tokens == record["batch_tokens"] in batch_plan._CANDIDATES
    assert set(record["cpu_seconds"]) == {str(b) for b in batch_plan._CANDIDATES} and len(calls) == 1
    second = load_model(settings, checks_dir=tmp_path, batch_tokens="auto", progress=False)
    assert second.encoder.batch_tokens == record["batch_tokens"] and len(calls) == 1
    record["key"]["cpu"] = "another CPU"
    (tmp_path / batch_plan._BATCH_PLAN_FILE).write_text(json.dumps(record))
    load_model(settings, checks_dir=tmp_path, batch_tokens="auto", progress=False)
    assert len(calls) == 2
    fixed = load_model(settings, checks_dir=tmp_path, batch_tokens=None, batch_size=3, progress=False)
    assert fixed.encoder.batch_tokens is None and len(calls) == 2


def test_the_measured_plan_keeps_the_key_and_the_vectors_of_fixed_batches(zoo, make_task, tmp_path, monkeypatch):
    monkeypatch.setattr(batch_plan, "probe_budget", lambda enc: (512, {512: 0.0}))  # small batches of long rows
    train = [random_dna(n, seed) for seed, n in enumerate([40, 300, 90, 700, 15, 260, 520, 33, 180, 400])]
    task = make_task(train, [random_dna(120, 99), random_dna(610, 98)])
    settings = zoo.settings("mistral-dna")
    extract_task(settings, task, tmp_path / "a" / "auto.h5", batch_tokens="auto", progress=False)
    extract_task(settings, task, tmp_path / "f" / "fixed.h5", batch_size=64, batch_tokens=None, progress=False)
    with h5py.File(tmp_path / "a" / "auto.h5", "r") as a, h5py.File(tmp_path / "f" / "fixed.h5", "r") as f:
        assert (a.attrs["batch_tokens"], f.attrs["batch_tokens"]) == (512, 0)
        assert a.attrs["key_hash"] == f.attrs["key_hash"] and a.attrs["extraction_key"] == f.attrs["extraction_key"]
        for split in ("train", "test"):
            diff = np.abs(a[split]["embeddings"][:] - f[split]["embeddings"][:]).max()
            assert diff <= _DEFAULT_ATOL["float32"]


class _Params:
    """A stand-in network whose parameters() are tensors of the given sizes (only numel() is read)."""

    def __init__(self, sizes):
        self.sizes = sizes

    def parameters(self):
        return [type("P", (), {"numel": lambda self, n=n: n})() for n in self.sizes]


def test_by_device_takes_the_table_budget_of_the_device_class_without_timing(tmp_path, monkeypatch):
    monkeypatch.setattr(batch_plan, "probe_budget", lambda enc: pytest.fail("by_device must not time anything"))
    kw = {"device": "cpu", "checks_dir": tmp_path, "model": "m", "settings_hash": "h", "identity_sha256": "i"}
    cpu = _Burner()
    assert batch_plan.resolve_batch_tokens(cpu, "by_device", **kw) == batch_plan.DEVICE_BUDGETS["cpu"] == 2048
    gpu = _Burner()
    gpu.device = "cuda:1"  # the encoder's resolved device decides the class
    assert batch_plan.resolve_batch_tokens(gpu, "by_device", **kw) == batch_plan.DEVICE_BUDGETS["cuda"] == 65536
    large = _Burner()
    large.model = _Params([batch_plan._CPU_LARGE_PARAMS - 1, 1])  # a 20M-parameter network: smaller CPU batches
    assert batch_plan.resolve_batch_tokens(large, "by_device", **kw) == batch_plan._CPU_LARGE_BUDGET == 1024
    large.device = "cuda"
    assert batch_plan.resolve_batch_tokens(large, "by_device", **kw) == 65536
    kmer = _Burner()
    kmer.load_check_names = ()  # an encoder without token batches (k-mer counts) keeps batch_size
    assert batch_plan.resolve_batch_tokens(kmer, "by_device", **kw) is None
    assert not cpu.seen and not gpu.seen and not large.seen and not (tmp_path / batch_plan._BATCH_PLAN_FILE).exists()
    with pytest.raises(ValueError, match="'tpu'"):
        batch_plan._device_class("tpu")


def test_an_unset_batch_tokens_runs_the_table_budget_with_the_vectors_of_batches_of_64(zoo, make_task, tmp_path):
    """The workflow's path: `execution:` without batch_tokens -> ExecutionOptions -> load_model -> the HDF5
    attribute; the vectors equal those of batches of 64 within the float32 invariance tolerance, same key."""
    from geneb.extract.batch_plan import ExecutionOptions

    options = ExecutionOptions.from_config({"device": "cpu"})
    assert options.batch_tokens == batch_plan._BY_DEVICE
    train = [random_dna(n, seed) for seed, n in enumerate([40, 300, 90, 700, 15, 260, 520, 33, 180, 400, 1500])]
    task = make_task(train, [random_dna(120, 99), random_dna(610, 98)])
    settings = zoo.settings("mistral-dna")
    extract_task(settings, task, tmp_path / "d" / "default.h5", batch_tokens=options.batch_tokens, progress=False)
    extract_task(settings, task, tmp_path / "f" / "fixed.h5", batch_size=64, batch_tokens=None, progress=False)
    with h5py.File(tmp_path / "d" / "default.h5", "r") as d, h5py.File(tmp_path / "f" / "fixed.h5", "r") as f:
        assert (d.attrs["batch_tokens"], f.attrs["batch_tokens"]) == (batch_plan.DEVICE_BUDGETS["cpu"], 0)
        assert d.attrs["key_hash"] == f.attrs["key_hash"] and d.attrs["extraction_key"] == f.attrs["extraction_key"]
        for split in ("train", "test"):
            diff = np.abs(d[split]["embeddings"][:] - f[split]["embeddings"][:]).max()
            assert diff <= _DEFAULT_ATOL["float32"]
