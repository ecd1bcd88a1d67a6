"""Genomics-FM adapter (geneb.encoders.families.genomics_fm): a stand-in checkpoint in the released layout (config.json of the
authors' BertConfig subclass, pytorch_model.bin of BertForMaskedLM tensors under `bert.` plus the `cls.` MLM head,
the BPE tokenizer.json), shrunk in depth and width, loaded through the registry entry with `source.kind: local`.
The reference is terry-r123/Genomics-FM genomics_fm/bert_layers.py written out here on the checkpoint's tensors,
one unpadded sequence at a time, with the pretraining input [CLS] [BPE] [ALIBI] tokens [SEP] and use_alibi."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from adapter_support import registry_settings, write_bpe_tokenizer

from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.registry.families import build

H, HEADS, LAYERS, INNER = 32, 4, 2, 40
SEQS = ["ACGTACGTTTAAGGCCA", "ACGTAC", "TTTTAAAACCCCGGGGACGTACGTACGTAAAAAAA", "GATTACA"]


def _checkpoint(folder, *, vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    sd = {
        "bert.embeddings.word_embeddings.weight": r(vocab, H),
        "bert.embeddings.token_type_embeddings.weight": r(2, H),
        "bert.embeddings.LayerNorm.weight": 1 + r(H),
        "bert.embeddings.LayerNorm.bias": r(H),
        "bert.embeddings.position_embeddings.weight": r(512, H),
    }
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}."
        sd |= {
            p + "attention.self.Wqkv.weight": r(3 * H, H),
            p + "attention.self.Wqkv.bias": r(3 * H),
            p + "attention.output.dense.weight": r(H, H),
            p + "attention.output.dense.bias": r(H),
            p + "attention.output.LayerNorm.weight": 1 + r(H),
            p + "attention.output.LayerNorm.bias": r(H),
            p + "mlp.gated_layers.weight": r(2 * INNER, H),
            p + "mlp.wo.weight": r(H, INNER),
            p + "mlp.wo.bias": r(H),
            p + "mlp.layernorm.weight": 1 + r(H),
            p + "mlp.layernorm.bias": r(H),
        }
    sd |= {
        "cls.predictions.transform.dense.weight": r(H, H),
        "cls.predictions.transform.dense.bias": r(H),
        "cls.predictions.transform.LayerNorm.weight": 1 + r(H),
        "cls.predictions.transform.LayerNorm.bias": r(H),
        "cls.predictions.decoder.weight": sd["bert.embeddings.word_embeddings.weight"],
        "cls.predictions.decoder.bias": r(vocab),
    }
    return sd


def _folder(tmp_path, *, prompts_in_tokenizer: bool = False, state=None):
    folder = tmp_path / "genomics-fm"
    folder.mkdir()
    added = ("[BPE]", "[KMER]", "[ALIBI]", "[APE]") if prompts_in_tokenizer else ()
    n_tok = write_bpe_tokenizer(folder / "tokenizer.json", added=added)
    vocab = n_tok + (0 if prompts_in_tokenizer else 4) + 3  # the table may be larger than the tokenizer
    config = {
        "architectures": ["BertForMaskedLM"],
        "model_type": "bert",
        "alibi_starting_size": 512,
        "attention_probs_dropout_prob": 0.0,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": H,
        "intermediate_size": INNER,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 512,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "pad_token_id": 0,
        "type_vocab_size": 2,
        "vocab_size": vocab,
        "transformers_version": "4.29.2",
    }
    (folder / "config.json").write_text(json.dumps(config))
    sd = _checkpoint(folder, vocab=vocab) if state is None else state(_checkpoint(folder, vocab=vocab))
    torch.save(sd, folder / "pytorch_model.bin")
    return folder


def _slopes(n):  # Mosaic's _get_alibi_head_slopes, as written in bert_layers.py
    def p2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return p2(n)
    c = 2 ** math.floor(math.log2(n))
    return p2(c) + _slopes(2 * c)[0::2][: n - c]


def _ln(x, w, b, eps=1e-12):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def _reference_cls(folder, seq: str) -> np.ndarray:
    """bert_layers.py on one sequence (no padding): the authors' tokenization, then BertModel(use_alibi=True)."""
    from tokenizers import Tokenizer

    sd = torch.load(folder / "pytorch_model.bin", weights_only=True)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.add_special_tokens(["[BPE]", "[KMER]", "[ALIBI]", "[APE]"])  # srun_pretrain.py
    ids = torch.tensor(tok.encode("[BPE][ALIBI]" + seq, add_special_tokens=True).ids)
    assert ids[0] == 1 and ids[-1] == 2 and tok.id_to_token(int(ids[1])) == "[BPE]"
    e = "bert.embeddings."
    h = sd[e + "word_embeddings.weight"][ids] + sd[e + "token_type_embeddings.weight"][0]
    h = _ln(h, sd[e + "LayerNorm.weight"], sd[e + "LayerNorm.bias"])
    n, d = len(ids), H // HEADS
    rel = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs()
    alibi = torch.tensor(_slopes(HEADS))[:, None, None] * -rel
    for i in range(LAYERS):
        p = f"bert.encoder.layer.{i}."
        qkv = (h @ sd[p + "attention.self.Wqkv.weight"].T + sd[p + "attention.self.Wqkv.bias"]).view(n, 3, HEADS, d)
        q, k, v = (qkv[:, j].transpose(0, 1) for j in range(3))
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d) + alibi, -1) @ v
        att = att.transpose(0, 1).reshape(n, H)
        att = att @ sd[p + "attention.output.dense.weight"].T + sd[p + "attention.output.dense.bias"]
        h = _ln(att + h, sd[p + "attention.output.LayerNorm.weight"], sd[p + "attention.output.LayerNorm.bias"])
        g = h @ sd[p + "mlp.gated_layers.weight"].T
        m = torch.nn.functional.gelu(g[:, :INNER]) * g[:, INNER:]
        m = m @ sd[p + "mlp.wo.weight"].T + sd[p + "mlp.wo.bias"]
        h = _ln(m + h, sd[p + "mlp.layernorm.weight"], sd[p + "mlp.layernorm.bias"])
    return h[0].numpy()  # pooling cls-token: the [CLS] row of the last hidden state


def _encoder(folder, **kwargs):
    settings = registry_settings("genomics-fm", folder, embedding_dim=H)  # the stand-in is H wide, not 768
    assert settings["family"] == "genomics-fm" and settings["extraction"]["pooling"] == "cls"
    assert settings["extraction"]["max_tokens"] == 512 and not settings["trust_remote_code"]
    return build(settings, device="cpu", progress=False, **kwargs)


@pytest.mark.parametrize("prompts_in_tokenizer", [False, True])
def test_cls_vector_equals_the_authors_forward_on_cpu(tmp_path, prompts_in_tokenizer):
    folder = _folder(tmp_path, prompts_in_tokenizer=prompts_in_tokenizer)
    enc = _encoder(folder, batch_size=8)
    got = enc.embed(SEQS).embeddings
    want = np.stack([_reference_cls(folder, s) for s in SEQS])
    assert got.shape == (len(SEQS), H)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    ident = enc.identity()
    assert ident["use_alibi"] is True and ident["prompts"] == ["[BPE]", "[ALIBI]"]
    assert ident["weights_format"] == "pickle-weights-only" and ident["special_suffix"] == [2]


def test_padding_does_not_change_a_vector(tmp_path):
    enc = _encoder(_folder(tmp_path), batch_size=8)
    alone = enc.embed([SEQS[1]]).embeddings[0]
    padded = enc.embed(SEQS).embeddings[1]  # batched with rows up to ~6x longer
    np.testing.assert_allclose(padded, alone, atol=1e-5, rtol=0)


def test_a_wrong_tensor_name_is_refused_naming_model_and_tensor(tmp_path):
    def rename(sd):
        sd["bert.encoder.layer.1.mlp.w_o.weight"] = sd.pop("bert.encoder.layer.1.mlp.wo.weight")
        return sd

    with pytest.raises(WeightsNotLoadedError, match=r"genomics-fm.*encoder\.layer\.1\.mlp\.wo\.weight"):
        _encoder(_folder(tmp_path, state=rename))


def test_a_config_that_does_not_fit_the_tensors_is_refused(tmp_path):
    folder = _folder(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": INNER + 8}))
    with pytest.raises(ModelLoadError, match=r"genomics-fm.*gated_layers"):
        _encoder(folder)


def test_a_missing_tokenizer_names_the_file_and_where_to_get_it(tmp_path):
    folder = _folder(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match=r"genomics-fm: tokenizer\.json is missing.*tokenizer_bpe/tokenizer\.json"):
        _encoder(folder)
