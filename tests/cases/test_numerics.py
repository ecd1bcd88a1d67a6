"""Failure cases of kind "numerics" (../shared/cases/CASES.md): bf16/fp16 results that move with
batch size (CPU-checkable parts; the bf16 parts are device checks that skip without CUDA), batch invariance with
an explicit tolerance, fp16 overflow to NaN/inf. Policy: docs/footguns.md ("Numerics").
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

from extraction_support import KINDS, random_dna
from geneb.core.errors import NonFiniteEmbeddingError
from geneb.encoders.engine.chunking import pool
from geneb.encoders.engine.invariance import _DEFAULT_ATOL, InvarianceError, check_batch_invariance
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.encoders.protocol import EmbedResult
from geneb.extract.cache import CacheError, SplitEmbeddings, write_embeddings
from geneb.extract.step import extract_task
from geneb.registry.load import DEFAULT_EXTRACTION

# ---- bf16/fp16 compute dtype and batch size -----------------------------------------------------------------------


def test_pooling_accumulates_in_fp32():
    """bf16 states [256, 1 x 100]: a bf16 running sum sticks at 256 (257 is not representable); GENEB's pool
    casts first, so the mean is 356/101 and the result is float32."""
    h = torch.ones(1, 101, 1, dtype=torch.bfloat16)
    h[0, 0, 0] = 256
    m = torch.ones(1, 101, dtype=torch.long)
    out = pool(h, m, "mean")
    assert out.dtype == torch.float32
    assert out.item() == pytest.approx(356 / 101, rel=1e-6)
    acc = torch.zeros((), dtype=torch.bfloat16)
    for v in h[0, :, 0]:  # a running sum kept in bf16, as a reduced-precision kernel may do
        acc = acc + v
    assert acc.item() == 256


def test_compute_dtype_is_recorded(zoo, make_task, tmp_path):
    """compute_dtype is an HDF5 attribute; bf16 weights on CPU give float32, finite, close vectors."""
    task = make_task([random_dna(120, i) for i in range(4)], [random_dna(80, 9)])
    files = {}
    for dtype in ("float32", "bfloat16"):
        files[dtype] = tmp_path / f"{dtype}.h5"
        extract_task(zoo.settings("mistral-dna", dtype=dtype), task, files[dtype], progress=False)
    with h5py.File(files["float32"], "r") as a, h5py.File(files["bfloat16"], "r") as b:
        assert a.attrs["compute_dtype"] == "float32" and b.attrs["compute_dtype"] == "bfloat16"
        x, y = a["train"]["embeddings"][:], b["train"]["embeddings"][:]
        assert y.dtype == np.float32 and np.isfinite(y).all()
        cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
        assert cos.min() >= 0.99


def test_probe_scores_carry_the_compute_dtype(zoo, repo, tmp_path):
    """Under dtype auto the device picks the compute dtype and a device change never reruns work, so every score
    row states the dtype its embeddings were computed in (read from the cache key): bfloat16 here, not the
    float32 default."""
    import gzip

    import pandas as pd
    import yaml

    from geneb.probe.job import fit_probes, write_shot_indices
    from geneb.tasks.catalogue import read_catalogue, task_row
    from geneb.tasks.prepare import prepare_task
    from geneb.tasks.sources import open_source
    from geneb.tasks.validation import AlphabetPolicy

    task = "ienhancer2l_strong_vs_weak"
    src = tmp_path / "m" / task
    src.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = {
        split: [("".join(rng.choice(list("ACGT"), 30)) + ("GGGGCC" if y else "ATATAT") * 3, y) for y in [0, 1] * n]
        for split, n in (("train", 12), ("test", 4))
    }
    for split, data in rows.items():
        with gzip.open(src / f"{split}.csv.gz", "wt") as f:
            f.write("sequence,label\n" + "".join(f"{q},{y}\n" for q, y in data))
    out = tmp_path / "tasks" / task
    prepare_task(
        task,
        task_row(read_catalogue(repo / "config/tasks.tsv"), task),
        open_source(str(tmp_path / "m")),
        AlphabetPolicy(),
        {},
        0,
        out,
    )
    settings = zoo.settings("mistral-dna", dtype="bfloat16")
    extract_task(settings, out, tmp_path / "emb.h5", progress=False)
    strict = {**yaml.safe_load((repo / "config/config.yaml").read_text())["probe"]["geneb-strict"], "seeds": [0]}
    write_shot_indices(
        train=out / "train.parquet",
        card=out / "card.json",
        output=tmp_path / "shots.json",
        task=task,
        protocol="geneb-strict",
        settings=strict,
    )
    scores = fit_probes(
        train=out / "train.parquet",
        test=out / "test.parquet",
        card=out / "card.json",
        embeddings=tmp_path / "emb.h5",
        shots=tmp_path / "shots.json",
        scores_out=tmp_path / "s.parquet",
        predictions_out=tmp_path / "p.parquet",
        task=task,
        model=settings["model"],
        protocol="geneb-strict",
        settings=strict,
    )
    assert len(scores) > 0 and scores["embedding_compute_dtype"].tolist() == ["bfloat16"] * len(scores)
    assert set(pd.read_parquet(tmp_path / "s.parquet")["embedding_compute_dtype"]) == {"bfloat16"}
    with h5py.File(tmp_path / "emb.h5", "r") as f:
        assert f.attrs["compute_dtype"] == "bfloat16"


def _evo_package(monkeypatch, package_dtype):
    """A stand-in `evo` package (evo-model's API, as in test_model_loading's looks-like-logits tests) whose
    Evo(name).model comes in `package_dtype`, the way evo-model loads Evo in bfloat16 whatever the device, and
    which has evo-model's `to_bfloat16_except_poles_residues` (bfloat16 everywhere except the filter's `poles`,
    kept float32). Returns a dict that records the dtype the forward pass ran in and whether the package's own
    cast was used."""
    import importlib.machinery
    import sys
    import types

    seen: dict = {"bf16_except_poles": 0}

    class StripedHyenaStandIn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.config = {"hidden_size": 8, "vocab_size": 512}
            self.embed = torch.nn.Embedding(512, 8)
            self.mix = torch.nn.Linear(8, 8)
            self.poles = torch.nn.Parameter(torch.ones(8))
            self.unembed = torch.nn.Linear(8, 512)

        def to_bfloat16_except_poles_residues(self):
            seen["bf16_except_poles"] += 1
            for name, p in self.named_parameters():
                if name != "poles":
                    p.data = p.data.to(torch.bfloat16)

        def forward(self, ids):
            h = torch.cumsum(self.mix(self.embed(ids)) * self.poles.to(self.mix.weight.dtype), dim=1)  # causal
            seen["ran_in"] = h.dtype
            return self.unembed.unembed(h) if hasattr(self.unembed, "unembed") else self.unembed(h), None

    class Tok:
        def tokenize(self, seq):
            return list(seq.encode())

    class Evo:
        def __init__(self, name):
            self.model, self.tokenizer = StripedHyenaStandIn().to(package_dtype), Tok()

    module = types.ModuleType("evo")
    module.Evo = Evo
    module.__spec__ = importlib.machinery.ModuleSpec("evo", None)
    monkeypatch.setitem(sys.modules, "evo", module)
    return seen


def _evo_settings(dtype):
    from geneb.registry.load import extraction_settings

    entry = {
        "display": "evo",
        "family": "evo",
        "source": {"kind": "builtin"},
        "architecture_family": "striped-hyena",
        "tokenizer_type": "single-nucleotide",
        "params": 0,
        "pretraining_domain": "prokaryote",
        "license": "x",
        "load": {"package_model_name": "evo-1-8k-base"},
        "extraction": {"max_tokens": 8192, "dtype": dtype},
    }
    return extraction_settings({"models": {"evo-standin": entry}}, "evo-standin", {})


def test_evo_runs_in_the_recorded_dtype(monkeypatch):
    """evo-model hands Evo over in bfloat16 whatever the device; GENEB casts it to its own weights dtype so the
    recorded compute_dtype is what runs. dtype auto on CPU: float32 parameters, a float32 forward pass, float32
    recorded. dtype bfloat16 of a package model in float32: the package's to_bfloat16_except_poles_residues is
    used (poles stay float32, the rest is bfloat16) and bfloat16 is recorded."""
    from geneb.extract.step import build_encoder

    seen = _evo_package(monkeypatch, torch.bfloat16)
    enc = build_encoder(_evo_settings("auto"), device="cpu", progress=False)
    assert {p.dtype for p in enc.model.parameters()} == {torch.float32}
    assert enc.identity()["compute_dtype"] == "float32" and enc.identity()["weights_dtype"] == "float32"
    res = enc.embed([random_dna(50, 1)])
    assert seen["ran_in"] == torch.float32 and res.embeddings.dtype == np.float32 and np.isfinite(res.embeddings).all()
    assert seen["bf16_except_poles"] == 0

    seen = _evo_package(monkeypatch, torch.float32)
    enc = build_encoder(_evo_settings("bfloat16"), device="cpu", progress=False)
    assert seen["bf16_except_poles"] == 1  # the package's own cast, not a blanket .to(bfloat16)
    dtypes = {name: p.dtype for name, p in enc.model.named_parameters()}
    assert dtypes.pop("poles") == torch.float32 and set(dtypes.values()) == {torch.bfloat16}
    assert enc.identity()["compute_dtype"] == "bfloat16" and enc.identity()["weights_dtype"] == "bfloat16"
    enc.embed([random_dna(50, 1)])
    assert seen["ran_in"] == torch.bfloat16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="device check: bf16 autocast vs fp32 on CUDA needs a GPU")
def test_device_bf16_vs_fp32_and_batch_size(zoo, shared):
    """8 x 200 nt: per-row cosine >= 0.999 (fp32 vs bf16 autocast); bf16 batch sizes 1 and 8: probe MCC within 0.01."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import matthews_corrcoef

    from geneb.extract.step import build_encoder

    seqs = [random_dna(200, i) for i in range(8)]
    fp32 = build_encoder(zoo.settings("mistral-dna", dtype="float32"), device="cuda", progress=False)
    bf16 = build_encoder(
        zoo.settings("mistral-dna", dtype="bfloat16", nonfinite="retry_fp32"), device="cuda", progress=False
    )
    x, y = fp32.embed(seqs).embeddings, bf16.embed(seqs).embeddings
    assert ((x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)).min() >= 0.999
    folder = shared / "data" / "tasks" / "gue_human_tf_2"
    tr, te = pd.read_csv(folder / "train.csv.gz").iloc[:600], pd.read_csv(folder / "test.csv.gz").iloc[:300]
    mcc = []
    for bs in (1, 8):
        bf16.batch_size = bs
        xt, xs = bf16.embed(tr["sequence"].tolist()).embeddings, bf16.embed(te["sequence"].tolist()).embeddings
        clf = LogisticRegression(max_iter=1000, random_state=0).fit(xt, tr["label"])
        mcc.append(matthews_corrcoef(te["label"], clf.predict(xs)))
    assert abs(mcc[0] - mcc[1]) <= 0.01


# ---- batch invariance with an explicit tolerance ------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_batch_invariance_fp32_every_family(zoo, kind):
    """Tiny random model of every family on CPU fp32: batch 1 vs 4 vs 7, max |diff| <= 1e-5."""
    seqs = [random_dna(n, n) for n in (37, 200, 12, 90, 64, 150, 300)]
    report = check_batch_invariance(zoo.encoder(kind), seqs, batch_sizes=(1, 4, 7)).require()
    assert report.atol == 1e-5


class _Drifting:
    """A stand-in encoder whose vectors drift by 1e-7 per extra batch member (float-error-sized)."""

    compute_dtype = "float32"

    def __init__(self) -> None:
        self.batch_size = 1

    def embed(self, seqs, rows=None, *, desc=None):
        x = np.ones((len(seqs), 3), np.float32) + np.float32(1e-7) * (self.batch_size - 1)
        return EmbedResult(x, np.ones(len(seqs), np.int32), np.ones(len(seqs), np.int32), np.zeros(len(seqs), bool))


def test_checker_tolerance_is_explicit():
    enc = _Drifting()
    report = check_batch_invariance(enc, ["A", "C"], batch_sizes=(1, 4))
    assert 0 < report.max_abs_diff < 1e-6 and report.ok  # fp32 default 1e-5
    with pytest.raises(InvarianceError, match="atol 0.0e"):
        check_batch_invariance(enc, ["A", "C"], batch_sizes=(1, 4), atol=0).require()
    assert _DEFAULT_ATOL["float32"] == 1e-5 and _DEFAULT_ATOL["bfloat16"] == 2e-2
    enc.compute_dtype = "bfloat16"
    assert check_batch_invariance(enc, ["A"], batch_sizes=(1, 2)).atol == 2e-2


# ---- fp16 overflow: NaN/inf never cached --------------------------------------------------------------------------


class InfModel(TokenModelEncoder):
    """A stand-in model: hidden states = a small embedding of A/C/G/T; a row made only of T overflows to inf,
    either always (`only_reduced` False) or only under reduced-precision autocast (True)."""

    only_reduced = False

    def _load(self) -> LoadedNetwork:
        torch.manual_seed(0)
        table = torch.nn.Embedding(4, 4)
        return LoadedNetwork(table, None, max_tokens=64, hidden_size=4, vocab_size=4, num_embeddings=4)

    def _tokenize(self, texts):
        return [["ACGT".index(c) for c in t] for t in texts]

    def _call(self, inputs, want_states):
        ids = inputs["input_ids"]
        h = self.model(ids).float()
        if not self.only_reduced or torch.is_autocast_enabled("cpu"):
            h[(ids == 3).all(dim=1)] = float("inf")
        return h


def _inf_settings(**extraction):
    return {
        "model": "fake-inf",
        "family": "hf-encoder",
        "source": {"kind": "builtin"},
        "builtin": {},
        "trust_remote_code": False,
        "load": {},
        "extraction": {**DEFAULT_EXTRACTION, **extraction},
        "alphabet": {},
    }


def test_inf_row_raises_naming_model_task_row(make_task, tmp_path, monkeypatch):
    """One inf row in a batch of 3: the job fails naming model, task and row 1, and writes no file."""
    settings = _inf_settings()
    monkeypatch.setattr("geneb.extract.step.build_encoder", lambda s, **kw: InfModel(s, batch_size=3, progress=False))
    task = make_task(["ACGA", "TTTT", "GGCA"], ["ACGT"], task="overflow")
    out = tmp_path / "e.h5"
    with pytest.raises(NonFiniteEmbeddingError, match="model fake-inf, task overflow, split train: .*row 1") as err:
        extract_task(settings, task, out, progress=False)
    assert err.value.rows == [1]
    assert not out.exists() and not list(tmp_path.glob(".tmp-*"))


def test_retry_in_fp32_by_policy(make_task, tmp_path, monkeypatch):
    """nonfinite: retry_fp32 with bf16 autocast: the overflowing batch is rerun in float32; the file is finite."""

    class ReducedOnly(InfModel):
        only_reduced = True

    settings = _inf_settings(dtype="bfloat16", nonfinite="retry_fp32")
    monkeypatch.setattr(
        "geneb.extract.step.build_encoder", lambda s, **kw: ReducedOnly(s, batch_size=3, progress=False)
    )
    task = make_task(["ACGA", "TTTT", "GGCA"], ["ACGT"], task="overflow")
    out = tmp_path / "e.h5"
    extract_task(settings, task, out, progress=False)
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] and f.attrs["fp32_retries"] == 1 and f.attrs["compute_dtype"] == "bfloat16"
        assert np.isfinite(f["train"]["embeddings"][:]).all()
    enc = ReducedOnly(settings, batch_size=3, progress=False)
    for _ in range(2):  # each call's result counts its own retries (the load-time checks count none)
        assert enc.embed(["ACGA", "TTTT", "GGCA"]).counters.fp32_retries == 1


def test_cache_never_holds_non_finite_values(tmp_path):
    emb = np.ones((3, 2), np.float32)
    emb[1, 0] = np.inf
    split = SplitEmbeddings(emb, np.arange(3), np.ones(3, np.int32))
    with pytest.raises(CacheError, match="row index 1"):
        write_embeddings(tmp_path / "x.h5", {"train": split}, {"model": "M", "task": "T"})
    big = SplitEmbeddings(np.full((2, 2), 1e5, np.float32), np.arange(2), np.ones(2, np.int32))  # > fp16 max 65504
    with pytest.raises(CacheError, match="float16"):
        write_embeddings(tmp_path / "y.h5", {"train": big}, {"model": "M", "task": "T"}, storage_dtype="float16")
    assert not list(tmp_path.iterdir())


def test_fp32_retries_count_the_task_rows_only(make_task, tmp_path, monkeypatch):
    """A model whose rows of over 32 tokens overflow under reduced-precision autocast: the load-time padding check
    batches a long probe, but with float32 weights it runs in float32 (a pad leak must not hide in rounding), so
    nothing overflows at load, and the written fp32_retries counts the task's one overflowing batch: 1."""
    overflows: list[int] = []

    class LongOverflows(InfModel):
        def _call(self, inputs, want_states):
            h = self.model(inputs["input_ids"]).float()
            long = inputs["attention_mask"].sum(dim=1) > 32
            if torch.is_autocast_enabled("cpu") and long.any():
                overflows.append(int(long.sum()))
                h[long] = float("inf")
            return h

    at_load: list[int] = []

    def build(s, **kw):
        enc = LongOverflows(s, batch_size=3, progress=False)
        at_load.append(len(overflows))
        return enc

    monkeypatch.setattr("geneb.extract.step.build_encoder", build)
    task = make_task(["ACGA", "ACGT" * 10, "GGCA"], ["ACGT", "GGCC"], task="overflow")
    extract_task(_inf_settings(dtype="bfloat16", nonfinite="retry_fp32"), task, tmp_path / "e.h5", progress=False)
    assert at_load == [0] and len(overflows) == 1  # none at load (checked in float32), one in the task's train split
    with h5py.File(tmp_path / "e.h5", "r") as f:
        assert f.attrs["complete"] and f.attrs["fp32_retries"] == 1
        assert np.isfinite(f["train"]["embeddings"][:]).all()


def test_bigbird_vectors_do_not_depend_on_which_rows_came_before(zoo):
    """BigBird switches itself to full attention for good after one batch too short for block-sparse attention;
    GENEB restores block-sparse attention before every batch, so a long row's vector is the same whether a short
    row was embedded before it or not."""
    enc = zoo.encoder("bigbird")
    enc.batch_size = 1
    long_row, short_row = random_dna(300, 1), random_dna(12, 2)
    first = enc.embed([long_row]).embeddings
    enc.embed([short_row])  # too short for block-sparse attention
    np.testing.assert_array_equal(enc.embed([long_row]).embeddings, first)
