"""The embedding-distance scorers (geneb.zeroshot.scorers), on the k-mer spectrum encoder and a real checkpoint."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from extraction_support import random_dna
from geneb.extract.step import build_encoder
from geneb.registry.load import extraction_settings, load_registry
from geneb.zeroshot.scorers import _PAIRED_REASON, _embedding_scores, embedding_distances, variant_windows
from geneb.zeroshot.task import NotApplicable, ZeroShotModel, ZeroShotTask


def _variants(seqs: list[str], pos: list[int], alt: list[str]) -> ZeroShotTask:
    rows = pd.DataFrame(
        {
            "sequence": seqs,
            "pos": pos,
            "ref": [s[p] for s, p in zip(seqs, pos)],
            "alt": alt,
            "label": [0, 1] * (len(seqs) // 2),
        }
    )
    return ZeroShotTask(name="vars", kind="variant", rows=rows, data_sha256="0" * 64)


def _kmer(repo, rc: str = "none") -> ZeroShotModel:
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    settings = {**settings, "extraction": {**settings["extraction"], "rc": rc}}
    return ZeroShotModel("kmer-3", build_encoder(settings, progress=False), rc=rc)


def _task(n: int = 6, length: int = 80) -> ZeroShotTask:
    seqs = [random_dna(length, i) for i in range(n)]
    pos = [length // 2] * n
    alt = [{"A": "C", "C": "G", "G": "T", "T": "A"}[s[p]] for s, p in zip(seqs, pos)]
    return _variants(seqs, pos, alt)


def test_identical_vectors_are_at_distance_zero_and_the_distances_are_the_usual_ones():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8))
    cosine, euclidean = embedding_distances(x, x.copy())
    np.testing.assert_allclose(cosine, 0, atol=1e-12)
    np.testing.assert_allclose(euclidean, 0)
    y = rng.normal(size=(5, 8))
    cosine, euclidean = embedding_distances(x, y)
    want = 1 - (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(cosine, want)
    np.testing.assert_allclose(euclidean, np.linalg.norm(x - y, axis=1))
    with pytest.raises(ValueError, match=r"rows \[1\]"):
        embedding_distances(x, np.where(np.arange(5)[:, None] == 1, 0.0, y))


@pytest.mark.parametrize("rc", ["none", "average"])
def test_kmer_spectrum_distances(repo, rc):
    model = _kmer(repo, rc)
    task = _task()
    cosine, euclidean, *at_variant = _embedding_scores(model, task)
    assert set(cosine["scorer"]) == {"embedding-cosine"} and set(euclidean["scorer"]) == {"embedding-euclidean"}
    # a k-mer spectrum has no per-token states: the at-variant distances say so instead of a made-up score
    assert [(a.scorer, a.reason) for a in at_variant] == [
        (s, "KmerEncoder gives pooled vectors only: no per-token states at the variant")
        for s in ("embedding-cosine-at-variant", "embedding-euclidean-at-variant")
    ]
    assert (cosine["score"] > 0).all() and (euclidean["score"] > 0).all()  # an SNV changes three 3-mers
    refs, alts = variant_windows(task)
    ref = model.encoder.embed(refs).embeddings.astype(np.float64)
    alt = model.encoder.embed(alts).embeddings.astype(np.float64)
    if rc == "none":  # the scorer's distances are those of the model's own vectors
        np.testing.assert_allclose(euclidean["score"], np.linalg.norm(ref - alt, axis=1), rtol=1e-5)
    # a variant that changes more k-mers moves the spectrum further: a 2-base window gives one 3-mer less
    many = _variants(["AAAAAAAAAA", "AAAAAAAAAA"], [5, 0], ["C", "C"])  # the middle changes 3 k-mers, the edge 1
    far = _embedding_scores(model, many)[1]["score"].to_numpy()
    assert far[0] > far[1]


def test_a_paired_task_is_not_applicable(repo):
    rows = pd.DataFrame({"sequence_a": ["ACGTACGT"], "sequence_b": ["TTTTACGT"]})
    task = ZeroShotTask(name="pairs", kind="paired", rows=rows, data_sha256="0" * 64)
    assert _embedding_scores(_kmer(repo), task) == [
        NotApplicable("kmer-3", "pairs", scorer, _PAIRED_REASON)
        for scorer in (
            "embedding-cosine",
            "embedding-euclidean",
            "embedding-cosine-at-variant",
            "embedding-euclidean-at-variant",
        )
    ]


def test_bad_rows_are_all_named():
    task = _variants(["ACGT", "ACGT"], [1, 2], ["C", "A"])  # row 0: alt equals ref
    bad = ZeroShotTask(name="vars", kind="variant", rows=task.rows.assign(pos=[1, 9]), data_sha256="0" * 64)
    with pytest.raises(ValueError, match=r"row 0: alt 'C' must be one base other than ref 'C'; row 1: pos 9"):
        variant_windows(bad)


def test_a_real_checkpoint_scores_every_variant(zoo):
    model = ZeroShotModel("mistral-dna", zoo.encoder("mistral-dna"), rc="none")
    task = _task(n=4, length=60)
    cosine, euclidean, cosine_at, euclidean_at = _embedding_scores(model, task)
    assert (cosine["score"] > 0).all() and np.isfinite(euclidean["score"]).all()
    assert (cosine_at["score"] > 0).all() and np.isfinite(euclidean_at["score"]).all()
    # the same alleles on both sides: the model's own vectors at distance zero, up to float32 rounding (the two
    # copies sit in other rows of the batch, and BLAS may split a row's sums differently with the thread count)
    refs, _ = variant_windows(task)
    same = model.encoder.embed(refs + refs).embeddings
    rounding = 1e-5 * np.linalg.norm(same.astype(np.float64), axis=1).max()
    np.testing.assert_allclose(embedding_distances(same[:4], same[4:])[1], 0, atol=rounding)


LOCAL_CHECKPOINTS = [
    "mistral-dna-1m-ft-prom",
    "mistral-dna-1m-ft-tf0",
    "mistral-dna-1m-ft-tf1",
    "mistral-codon-1m-ft-mrfp",
    "hyenadna-tiny-1k-ft-anticapt",
]


@pytest.mark.parametrize("name", LOCAL_CHECKPOINTS)
def test_every_real_local_checkpoint_scores_every_variant(repo, name):
    """The embedding scorer on each real checkpoint of ../shared/models as registered (its own pooling, rc mode,
    tokenizer and input transform): finite distances, larger than zero for a changed base."""
    registry = load_registry(repo / "config" / "models.yaml")
    settings = extraction_settings(registry, name, {})
    model = ZeroShotModel(name, build_encoder(settings, batch_size=4, progress=False), rc=settings["extraction"]["rc"])
    task = _task(n=4, length=90)
    cosine, euclidean, *at_variant = _embedding_scores(model, task)
    assert np.isfinite(cosine["score"]).all() and (euclidean["score"] > 0).all()
    # every local checkpoint is a token-level model whose tokens can be placed on bases (BPE offsets, codons,
    # HyenaDNA's one token per base): the at-variant distances exist and a changed base moves them
    assert [f["scorer"].iloc[0] for f in at_variant] == [
        "embedding-cosine-at-variant",
        "embedding-euclidean-at-variant",
    ]
    assert np.isfinite(at_variant[0]["score"]).all() and (at_variant[1]["score"] > 0).all()
