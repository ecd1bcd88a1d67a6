"""Random-init twins built from the real checkpoints' configurations in ../shared/models: the same tokenizer and
architecture, seeded random weights that differ from the trained ones, the same vectors from the same seed, other
vectors from another seed, and the weights' hash as the encoder's identity."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from geneb.extract.step import build_encoder
from geneb.registry.load import extraction_settings, load_registry

SEQS = ["ACGTTGCAGGATCCATTGCAAGCTTACGACGTAGCTAGCTTTAGGCATCGATCGGATCCAAGTCAGTACGATCGATCGTAGC", "GATTACAGATTACAGGCT"]


@pytest.fixture(scope="module")
def registry(repo, tmp_path_factory):
    data = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    data["models"]["hyena-twin-7"] = {"twin_of": "hyenadna-tiny-1k-ft-anticapt", "twin_seed": 7}
    sheet = tmp_path_factory.mktemp("twins") / "models.yaml"
    sheet.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_registry(sheet)


def _embed(registry, model):
    encoder = build_encoder(extraction_settings(registry, model, {}), batch_size=2, progress=False)
    return encoder.embed(SEQS).embeddings, encoder.identity()


@pytest.mark.parametrize(
    "model", ["mistral-dna-1m-ft-prom", "hyenadna-tiny-1k-ft-anticapt", "mistral-codon-1m-ft-mrfp"]
)
def test_a_twin_is_its_models_network_with_reproducible_random_weights(registry, model):
    trained, trained_id = _embed(registry, model)
    twin, twin_id = _embed(registry, f"{model}-twin")
    again, again_id = _embed(registry, f"{model}-twin")
    assert twin.shape == trained.shape and np.isfinite(twin).all()
    assert np.abs(twin - trained).max() > 1e-2  # not the trained weights
    np.testing.assert_array_equal(twin, again)  # one seed, one set of weights
    assert twin_id["weights_sha256"] == again_id["weights_sha256"] != trained_id["weights_sha256"]


def test_another_seed_gives_other_weights(registry):
    zero, zero_id = _embed(registry, "hyenadna-tiny-1k-ft-anticapt-twin")
    seven, seven_id = _embed(registry, "hyena-twin-7")
    assert np.abs(zero - seven).max() > 1e-3 and zero_id["weights_sha256"] != seven_id["weights_sha256"]
