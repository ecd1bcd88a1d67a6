"""The HDF5 cache (complete flag, key check, float16 storage, atomic write) and extract_task (RC modes,
lazy imports, error context)."""

from __future__ import annotations

import subprocess
import sys

import h5py
import numpy as np
import pytest

from extraction_support import random_dna
from geneb.core.provenance import code_revision, dirty_label
from geneb.encoders.protocol import EmbedCounters, EmbedResult
from geneb.extract.cache import (
    CacheKeyMismatchError,
    IncompleteCacheError,
    SplitEmbeddings,
    read_embeddings,
    read_key,
    write_embeddings,
)
from geneb.extract.step import extract_task
from geneb.registry.load import extraction_settings, load_registry
from geneb.tasks.validation import reverse_complement


def _split(n=4, d=3, value=None):
    x = np.arange(n * d, dtype=np.float32).reshape(n, d) / 7 if value is None else np.full((n, d), value, np.float32)
    return SplitEmbeddings(
        x, np.arange(10, 10 + n), np.full(n, 5, np.int32), trimmed_bases=np.arange(n, dtype=np.int32)
    )


def test_roundtrip_attrs_and_datasets(tmp_path):
    key = {"model": "M", "task": "T", "task_data_hash": "abc"}
    write_embeddings(tmp_path / "x.h5", {"train": _split(), "test": _split(2)}, key, attrs={"pooling": "mean", "n": 3})
    c = read_embeddings(tmp_path / "x.h5", expected={"task_data_hash": "abc"})
    np.testing.assert_array_equal(c.splits["train"][0], _split().embeddings)
    assert c.splits["train"][1].tolist() == [10, 11, 12, 13] and c.key == key
    with h5py.File(tmp_path / "x.h5", "r") as f:
        assert f.attrs["pooling"] == "mean" and f.attrs["storage_dtype"] == "float32"
        assert f["train"]["trimmed_bases"][:].tolist() == [0, 1, 2, 3]
    with pytest.raises(CacheKeyMismatchError, match="task_data_hash: file has 'abc', expected 'zzz'"):
        read_embeddings(tmp_path / "x.h5", expected={"task_data_hash": "zzz"})


def test_incomplete_file_is_never_read(tmp_path):
    """A file without the `complete` attribute (a killed writer, a foreign file) raises on every read path."""
    with h5py.File(tmp_path / "partial.h5", "w") as f:
        f.attrs["extraction_key"] = "{}"
        f.create_group("train").create_dataset("embeddings", data=np.zeros((2, 2)))
    for read in (read_embeddings, read_key):
        with pytest.raises(IncompleteCacheError, match="incomplete"):
            read(tmp_path / "partial.h5")


def test_failed_write_leaves_nothing(tmp_path):
    bad = SplitEmbeddings(np.ones((2, 2), np.float32), np.arange(3), np.ones(2, np.int32))  # 3 row ids for 2 rows
    with pytest.raises(Exception, match="does not match 3 rows"):
        write_embeddings(tmp_path / "x.h5", {"train": bad}, {"model": "M", "task": "T"})
    assert not list(tmp_path.iterdir())


def test_float16_storage(tmp_path):
    write_embeddings(tmp_path / "h.h5", {"train": _split()}, {"model": "M", "task": "T"}, storage_dtype="float16")
    with h5py.File(tmp_path / "h.h5", "r") as f:
        assert f["train"]["embeddings"].dtype == np.float16 and f.attrs["storage_dtype"] == "float16"
    c = read_embeddings(tmp_path / "h.h5", splits=("train",))
    assert c.splits["train"][0].dtype == np.float32
    np.testing.assert_allclose(c.splits["train"][0], _split().embeddings, rtol=1e-3)


@pytest.mark.parametrize("rc", ["none", "average", "concat"])
def test_rc_modes(repo, make_task, tmp_path, rc):
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    settings = {**settings, "extraction": {**settings["extraction"], "rc": rc}}
    s = random_dna(60, 1)
    task = make_task([s, reverse_complement(s)], [random_dna(30, 2)])
    extract_task(settings, task, tmp_path / "e.h5", progress=False)
    with h5py.File(tmp_path / "e.h5", "r") as f:
        x = f["train"]["embeddings"][:]
        assert f.attrs["rc"] == rc
    assert x.shape[1] == (128 if rc == "concat" else 64)
    if rc == "average":  # a sequence and its reverse complement get the same vector
        np.testing.assert_allclose(x[0], x[1], atol=1e-7)
    if rc == "concat":
        np.testing.assert_allclose(x[0, :64], x[1, 64:], atol=1e-7)


class _Counting:
    """A stand-in encoder with no counter attributes: each call's counters come in its result (the reverse strand
    reports other unknown-token counts than the forward one, to show which strand the file keeps)."""

    load_check_names = ()  # the Encoder protocol: no load-time probes

    def __init__(self, settings):
        self.extraction = settings.extraction  # build_encoder gets the typed ExtractionSettings
        self.calls = 0

    def identity(self):
        return {}

    def run_load_checks(self):
        return self.load_check_names

    def embed(self, seqs, rows=None, *, desc=None):
        self.calls += 1
        reverse = desc is not None and desc.endswith("(RC)")
        counters = EmbedCounters(
            unknown_rows=1, unknown_tokens=50 if reverse else len(seqs), step_downs=1, fp32_retries=2
        )
        n = len(seqs)
        x = np.ones((n, 2), np.float32)
        return EmbedResult(x, np.ones(n, np.int32), np.ones(n, np.int32), np.zeros(n, bool), counters=counters)


def test_file_counters_come_from_the_embed_results(repo, make_task, tmp_path, monkeypatch):
    """rc average over two splits (four embed calls): n_unknown_tokens is each split's forward-strand count,
    batch_step_downs and fp32_retries add up every call of the file."""
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    settings = {**settings, "extraction": {**settings["extraction"], "rc": "average"}}
    encoders = []
    monkeypatch.setattr(
        "geneb.extract.step.build_encoder", lambda s, **kw: encoders.append(_Counting(s)) or encoders[-1]
    )
    task = make_task([random_dna(40, 1), random_dna(40, 2), random_dna(40, 3)], [random_dna(40, 4)])
    extract_task(settings, task, tmp_path / "e.h5", progress=False)
    assert encoders[0].calls == 4
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f["train"].attrs["n_unknown_tokens"] == 3 and f["test"].attrs["n_unknown_tokens"] == 1
        assert f.attrs["batch_step_downs"] == 4 and f.attrs["fp32_retries"] == 8
        # the code's revision is an attribute, never part of the extraction key
        assert f.attrs["geneb_commit"] == code_revision()["geneb_commit"]
        assert f.attrs["geneb_dirty"] == dirty_label(code_revision()["geneb_dirty"])
        assert "geneb_commit" not in f.attrs["extraction_key"]


def test_kmer_job_imports_no_torch(repo, make_task, tmp_path):
    """A k-mer extraction job never imports torch or transformers (per-job start-up cost)."""
    task = make_task([random_dna(60, 3), random_dna(70, 4)], [random_dna(50, 5)])
    code = f"""
import sys
from geneb.extract.step import extract_task
from geneb.registry.load import extraction_settings
from geneb.registry.load import load_registry
from geneb.core.provenance import code_revision, dirty_label
s = extraction_settings(load_registry({str(repo / "config" / "models.yaml")!r}), "kmer-4", {{}})
extract_task(s, {str(task)!r}, {str(tmp_path / "k.h5")!r}, threads=1, progress=False)
print(sorted(m for m in ("torch", "transformers", "tokenizers") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=repo)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_errors_name_model_task_split_and_keep_rows(zoo, make_task, tmp_path):
    settings = zoo.settings("bert", long_policy="error", max_tokens=16)
    task = make_task([random_dna(20, 6), random_dna(400, 7)], [random_dna(20, 8)], task="ctx")
    with pytest.raises(ValueError, match="model tiny-bert, task ctx, split train: model tiny-bert, row 1"):
        extract_task(settings, task, tmp_path / "e.h5", progress=False)
