"""Golden tests of the real HyenaDNA and Mistral-Codon checkpoints in ../shared/models, as registered.

For each: a fixed short input gives the stored shape and checksum (per-row sum and L2 norm of the pooled
vectors, measured here on CPU float32), and GENEB's pooled vector equals a plain forward pass written out
below (the library's own tokenizer and model class, a right-padded batch and a masked mean by hand) to 1e-5.
The HDF5 record names how the weights were read (`weights_format`).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from geneb.core.errors import ModelLoadError
from geneb.extract.step import build_encoder, extract_task
from geneb.registry.load import extraction_settings, load_registry

HYENA = "hyenadna-tiny-1k-ft-anticapt"
CODON = "mistral-codon-1m-ft-mrfp"
#: fixed inputs: two rows of different lengths, so GENEB pads one of them
HYENA_SEQS = [
    "ACGTTGCAGGATCCATTGCAAGCTTACGNNACGTAGCTAGCTTTAGGCATCGATCGGATCCAAGTCAGTACGATCGATCGTAGC",
    "GATTACAGATTACA",
]
#: 65 nt (21 codons + 2 trailing bases that length_multiple 3 trims) and 12 nt (4 codons)
CODON_SEQS = ["ATGGCTTCCTCCGAAGACGTTATCAAAGAGTTCATGCGTTTCAAAGTTCGTATGGAAGGTTCCGT", "ATGAAAGGCTAA"]
#: measured on CPU float32 (transformers 5.24, torch 2.13): shape, per-row sum, per-row L2 norm
GOLDEN = {
    HYENA: ((2, 128), [1.126098, 4.049721], [4.04667, 9.527913]),
    CODON: ((2, 64), [-9.359774, -6.662585], [7.574027, 5.513913]),
}


@pytest.fixture(scope="module")
def registry(repo):
    return load_registry(repo / "config" / "models.yaml")


def _encoder(registry, name):
    return build_encoder(extraction_settings(registry, name, {}), batch_size=2, progress=False)


def _folder(registry, name):
    return Path(registry.models[name].source.path)


def _masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    m = mask.unsqueeze(-1).double()
    return ((hidden.double() * m).sum(1) / m.sum(1)).numpy()


def _right_padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, rows))
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return ids, mask


@pytest.mark.parametrize("name,seqs", [(HYENA, HYENA_SEQS), (CODON, CODON_SEQS)])
def test_golden_shape_and_checksum(registry, name, seqs):
    res = _encoder(registry, name).embed(seqs)
    shape, sums, norms = GOLDEN[name]
    e = res.embeddings.astype(np.float64)
    assert e.shape == shape
    np.testing.assert_allclose(e.sum(axis=1), sums, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), norms, rtol=1e-5, atol=1e-5)


def test_hyena_equals_a_plain_forward_pass(registry):
    """HyenaDNAModel through its own remote code: the character tokenizer appends [SEP] (excluded from the pool);
    no attention mask, causal, so right pads sit after every real token. The tokenizer's own left padding moves
    the real positions: GENEB does not use it."""
    from transformers import AutoModel, AutoTokenizer

    folder = _folder(registry, HYENA)
    enc = _encoder(registry, HYENA)
    assert (
        enc.identity()["weights_format"] == "pickle-weights-only" and enc.identity()["model_class"] == "HyenaDNAModel"
    )
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    rows = [tok(s)["input_ids"] for s in HYENA_SEQS]
    assert all(r[-1] == tok.sep_token_id and len(r) == len(s) + 1 for r, s in zip(rows, HYENA_SEQS))
    ids, mask = _right_padded(rows, tok.pad_token_id)
    pool = mask.clone()
    pool[torch.arange(len(rows)), torch.tensor([len(r) - 1 for r in rows])] = 0  # [SEP] is not pooled
    with torch.no_grad():
        plain = _masked_mean(model(input_ids=ids).last_hidden_state, pool)
        # each row alone, unpadded: the mean over its base positions ([SEP], the last one, left out)
        alone = [model(input_ids=torch.tensor([r])).last_hidden_state[0, :-1].double().mean(0).numpy() for r in rows]
        left = tok(HYENA_SEQS, padding=True, return_tensors="pt")  # the tokenizer's own (left) padding
        shifted = model(input_ids=left["input_ids"]).last_hidden_state[1, -len(rows[1]) : -1].double().mean(0).numpy()
    got = enc.embed(HYENA_SEQS).embeddings
    np.testing.assert_allclose(got, plain, atol=1e-5)
    np.testing.assert_allclose(got, np.stack(alone), atol=1e-5)
    assert np.abs(shifted - alone[1]).max() > 1e-2  # left pads change the short row's real positions


def test_mistral_codon_equals_a_plain_forward_pass(registry):
    """MixtralModel with the registry's config override (pad_token_id 67, the [PAD] id; the shipped 69 is
    outside the table): the codons of frame 0 read by the WordLevel tokenizer, [CLS] ... [SEP] excluded from
    the pool, trailing bases that make no codon trimmed and counted."""
    from transformers import AutoModel, AutoTokenizer

    folder = _folder(registry, CODON)
    enc = _encoder(registry, CODON)
    assert enc.identity()["weights_format"] == "safetensors"
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, pad_token_id=67).eval()
    texts = [" ".join(s[i : i + 3] for i in range(0, len(s) - len(s) % 3, 3)) for s in CODON_SEQS]
    rows = [tok(t)["input_ids"] for t in texts]
    assert all(r[0] == tok.cls_token_id and r[-1] == tok.sep_token_id and tok.unk_token_id not in r for r in rows)
    ids, mask = _right_padded(rows, 67)
    pool = mask.clone()
    pool[:, 0] = 0
    pool[torch.arange(len(rows)), torch.tensor([len(r) - 1 for r in rows])] = 0
    with torch.no_grad():
        plain = _masked_mean(model(input_ids=ids, attention_mask=mask).last_hidden_state, pool)
    res = enc.embed(CODON_SEQS)
    np.testing.assert_allclose(res.embeddings, plain, atol=1e-5)
    assert res.trimmed_bases.tolist() == [2, 0] and res.n_tokens.tolist() == [21, 4]


def test_the_record_says_how_the_weights_were_read(registry, make_task, tmp_path):
    task = make_task(["ACGTACGTAAGGCT" * 3, "GGATCCATTGCA" * 2], ["TTGACCAGGTAC" * 2])
    for name, fmt in ((HYENA, "pickle-weights-only"), (CODON, "safetensors")):
        out = tmp_path / f"{name}.h5"
        extract_task(extraction_settings(registry, name, {}), task, out, progress=False)
        with h5py.File(out, "r") as f:
            assert f.attrs["weights_format"] == fmt
            assert json.loads(f.attrs["extraction_key"])["encoder"]["weights_format"] == fmt


def test_the_shipped_pad_token_id_is_an_error_naming_the_model_and_the_fix(registry, repo, tmp_path):
    """Without the override the upstream defect ends in torch's raw AssertionError; GENEB names the fix."""
    import yaml

    doc = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    entry = doc["models"][CODON]
    entry.pop("load")
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"schema_version": 1, "models": {"codon-as-shipped": entry}}))
    bare = load_registry(tmp_path / "m.yaml")
    with pytest.raises(ModelLoadError, match=r"model codon-as-shipped.*pad_token_id 69.*config_overrides") as err:
        _encoder(bare, "codon-as-shipped")
    assert isinstance(err.value.__cause__, AssertionError)
    entry["load"] = {"config_overrides": {"pad_tokn_id": 67}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"schema_version": 1, "models": {"codon-typo": entry}}))
    with pytest.raises(ModelLoadError, match="model codon-typo: load.config_overrides names 'pad_tokn_id'"):
        _encoder(load_registry(tmp_path / "m.yaml"), "codon-typo")


def test_config_overrides_are_part_of_the_cache_key(registry):
    from geneb.registry.load import extraction_hash
    from geneb.registry.registry import Registry

    raw = {"models": {k: dict(v) for k, v in registry.raw["models"].items() if k == CODON}}
    base = extraction_hash(extraction_settings(Registry.from_mapping(raw), CODON, {}))
    raw["models"][CODON]["load"] = {"config_overrides": {"pad_token_id": 0}}
    assert extraction_hash(extraction_settings(Registry.from_mapping(raw), CODON, {})) != base


class _NotATensor:
    pass


def test_a_pickle_with_more_than_weights_is_refused(registry, tmp_path):
    """Weights-only unpickling: a pytorch_model.bin that holds an arbitrary object is refused, naming the model."""
    import shutil

    import yaml

    folder = tmp_path / "hyena-copy"
    shutil.copytree(_folder(registry, HYENA), folder)
    (folder / "pytorch_model.bin").chmod(0o644)
    state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    state["extra"] = _NotATensor()
    torch.save(state, folder / "pytorch_model.bin", pickle_protocol=pickle.DEFAULT_PROTOCOL)
    entry = {**registry.raw["models"][HYENA], "source": {"kind": "local", "path": str(folder)}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump({"schema_version": 1, "models": {"hyena-pickle": entry}}))
    with pytest.raises(ModelLoadError, match="model hyena-pickle: its pickled weight file holds objects other"):
        _encoder(load_registry(tmp_path / "m.yaml"), "hyena-pickle")


def test_weights_format_of_a_folder_and_of_a_hub_snapshot(tmp_path, monkeypatch):
    import transformers.utils

    from geneb.encoders.loading import weights_format

    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    assert weights_format(str(tmp_path), None) == "pickle-weights-only"
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert weights_format(str(tmp_path), None) == "safetensors"
    asked = []

    def cached_file(repo, name, **kwargs):
        asked.append((repo, name, kwargs["revision"]))
        return "/cache/model.safetensors" if repo == "org/safe" and name == "model.safetensors" else None

    monkeypatch.setattr(transformers.utils, "cached_file", cached_file)
    assert weights_format("org/safe", "a" * 40) == "safetensors"
    assert weights_format("org/pickled", "b" * 40) == "pickle-weights-only"
    assert ("org/pickled", "model.safetensors.index.json", "b" * 40) in asked
