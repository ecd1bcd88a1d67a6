"""geneb.encoders.engine.chunking: every (layer, pooling) from one forward pass per chunk, equal to the registry's
single-view extraction of the same layer and pooling, independent of the batch plan, with first/last taken from the
row's first/last chunk."""

from __future__ import annotations

import numpy as np
import pytest

from extraction_support import random_dna
from geneb.encoders.engine.views import _chunk_ordinals, embed_views
from geneb.extract.step import build_encoder, embed_split_views, embed_with_rc
from geneb.registry.spec import ExtractionSettings
from geneb.run.checks import plan_views

SEQS = [random_dna(n, seed) for seed, n in enumerate([30, 200, 61, 500, 12, 333, 90])]


def _views(settings: dict, **request) -> dict:
    return plan_views({"views": request}, {settings["model"]: settings})[settings["model"]]


def test_chunk_ordinals():
    ordinal, total = _chunk_ordinals(np.array([0, 0, 1, 0, 2, 2]))
    assert ordinal.tolist() == [0, 1, 0, 2, 0, 1]
    assert total.tolist() == [3, 3, 1, 3, 2, 2]


@pytest.mark.parametrize("layer", [0, 1, -1])
@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_each_view_equals_the_single_view_extraction(zoo, layer, pooling):
    """A view (layer, pooling) is the vector the registry's extraction with that layer and pooling gives."""
    settings = zoo.settings("esm", max_tokens=16)  # short chunks: several per row
    single = zoo.encoder("esm", batch_size=3, max_tokens=16, layer=layer, pooling=pooling)
    want = single.embed(SEQS).embeddings
    views = _views(settings, layers=[layer], poolings=[pooling])
    enc = build_encoder(views, batch_size=5, progress=False)
    n_layers = ExtractionSettings.of(views).views.n_layers
    base, (got,) = embed_views(enc, SEQS, None, [(layer if layer >= 0 else n_layers, pooling)])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert base.embeddings.shape == (len(SEQS), 0) and (base.n_chunks > 1).any()


def test_all_views_batch_invariant_and_rc_is_the_mean_of_strands(zoo):
    settings = _views(
        zoo.settings("esm", max_tokens=16),
        layers="all",
        poolings=["mean", "last", "max"],
        reverse_complement=[False, True],
    )
    views = ExtractionSettings.of(settings).views
    results = []
    for batch_size in (1, 64):
        enc = build_encoder(settings, batch_size=batch_size, progress=False)
        results.append(embed_split_views(enc, SEQS, list(range(len(SEQS))), views)[1])
    assert len(results[0]) == len(views.views()) == (views.n_layers + 1) * 3 * 2
    for vid, x in results[0].items():
        np.testing.assert_allclose(x, results[1][vid], atol=1e-5, err_msg=vid)
    rc_single = embed_with_rc(zoo.encoder("esm", max_tokens=16), SEQS, list(range(len(SEQS))), "average").embeddings
    np.testing.assert_allclose(results[0][f"L{views.n_layers}|mean|rc1"], rc_single, atol=1e-5)


def test_last_and_cls_come_from_the_rows_last_and_first_chunk(zoo):
    """A row cut into chunks: last = the last chunk's last pooled position, cls = the first chunk's first token
    (an encoder with a CLS prefix), whatever order the batches ran in."""
    settings = _views(zoo.settings("esm", max_tokens=16), layers=[-1], poolings=["last", "cls"])
    enc = build_encoder(settings, batch_size=2, progress=False)
    long_row = SEQS[3]
    _, (last, cls) = embed_views(enc, [long_row], None, [(enc.n_layers, "last"), (enc.n_layers, "cls")])
    chunks = enc.make_chunks([long_row], [0])[0]
    assert len(chunks) > 2
    ids, attn, pmask = enc.batch_tensors([chunks[-1]])
    hidden = enc.hidden_states(ids, attn, layers=[enc.n_layers])[0][0]
    np.testing.assert_allclose(last[0], hidden[int(np.flatnonzero(pmask[0].numpy())[-1])].numpy(), atol=1e-5)
    ids, attn, _ = enc.batch_tensors([chunks[0]])
    first = enc.hidden_states(ids, attn, layers=[enc.n_layers])[0][0, 0]
    np.testing.assert_allclose(cls[0], first.numpy(), atol=1e-5)


def test_cls_refused_without_a_prefix_token():
    class NoPrefix:  # what embed_views reads before anything runs
        model_id = "m"
        prefix: list[int] = []

    with pytest.raises(ValueError, match="model m: pooling cls needs a prefix token"):
        embed_views(NoPrefix(), SEQS[:2], None, [(0, "mean"), (0, "cls")])
