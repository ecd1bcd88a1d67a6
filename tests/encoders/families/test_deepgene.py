"""DeepGene adapter (geneb.encoders.families.deepgene): a stand-in checkpoint in the released layout (config.json of the
authors' RoFormerConfig with use_bias/norm_type, pytorch_model.bin of RoFormerForMaskedLM tensors under `roformer.`
plus the `cls.` MLM head, no rotary table (`_keys_to_ignore_on_save`), the repository's BPE tokenizer.json), shrunk
in depth, width and positions, loaded through the registry entry with `source.kind: local`. The reference is
wds-seu/DeepGene PanGeneGraphTrans/modeling_roformer.py written out here on the checkpoint's tensors, on a batch
padded as dataset_finetune.py pads it ([CLS] [SEP] tokens, pad 3, pos_ids of pads = padded length - 1), pooled by
the attention-mask mean."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from adapter_support import registry_settings, write_bpe_tokenizer

from geneb.core.errors import ModelLoadError, WeightsNotLoadedError
from geneb.registry.families import build

H, HEADS, LAYERS, INNER, POSITIONS = 32, 4, 2, 64, 256
SEQS = ["ACGTACGTTTAAGGCCA", "ACGTAC", "TTTTAAAACCCCGGGGACGTACGTACGTAAAAAAA", "GATTACA"]


def _checkpoint(vocab: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    e = "roformer.embeddings."
    sd = {
        e + "word_embeddings.weight": r(vocab, H),
        e + "token_type_embeddings.weight": r(2, H),
        e + "LayerNorm.weight": 1 + r(H),
        e + "LayerNorm.bias": r(H),
    }
    for i in range(LAYERS):
        p = f"roformer.encoder.layer.{i}."
        for name in ("query", "key", "value"):
            sd |= {p + f"attention.self.{name}.weight": r(H, H), p + f"attention.self.{name}.bias": r(H)}
        sd |= {
            p + "attention.output.dense.weight": r(H, H),
            p + "attention.output.dense.bias": r(H),
            p + "attention.output.LayerNorm.weight": 1 + r(H),
            p + "attention.output.LayerNorm.bias": r(H),
            p + "intermediate.dense.weight": r(INNER, H),
            p + "intermediate.dense.bias": r(INNER),
            p + "output.dense.weight": r(H, INNER),
            p + "output.dense.bias": r(H),
            p + "output.LayerNorm.weight": 1 + r(H),
            p + "output.LayerNorm.bias": r(H),
        }
    bias = r(vocab)
    sd |= {
        "cls.predictions.bias": bias,
        "cls.predictions.transform.dense.weight": r(H, H),
        "cls.predictions.transform.dense.bias": r(H),
        "cls.predictions.transform.LayerNorm.weight": 1 + r(H),
        "cls.predictions.transform.LayerNorm.bias": r(H),
        "cls.predictions.decoder.weight": r(vocab, H),
        "cls.predictions.decoder.bias": bias,
    }
    return sd


def _folder(tmp_path, *, state=None, **config_changes):
    folder = tmp_path / "pretrain_params_epoch_20"
    folder.mkdir()
    vocab = write_bpe_tokenizer(folder / "tokenizer.json")
    config = {
        "architectures": ["RoFormerForMaskedLM"],
        "model_type": "roformer",
        "vocab_size": vocab,
        "embedding_size": H,
        "hidden_size": H,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INNER,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 3,
        "rotary_value": False,
        "use_cache": True,
        "use_bias": True,
        "norm_type": "layer_norm",
        "pooler_activation": "tanh",
        "transformers_version": "4.29.2",
        **config_changes,
    }
    (folder / "config.json").write_text(json.dumps(config))
    sd = _checkpoint(vocab) if state is None else state(_checkpoint(vocab))
    torch.save(sd, folder / "pytorch_model.bin")
    return folder


def _ln(x, w, b, eps=1e-12):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def _sinusoid(n_pos, dim):  # RoFormerSinusoidalPositionalEmbedding._init_weight, as written in modeling_roformer.py
    enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = torch.zeros(n_pos, dim)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, 0:half] = torch.FloatTensor(np.sin(enc[:, 0::2]))
    out[:, half:] = torch.FloatTensor(np.cos(enc[:, 1::2]))
    return out


def _rotary(x, sin_table, cos_table, pos_ids):  # RoFormerSelfAttention.apply_rotary
    sin, cos = sin_table[pos_ids][:, None], cos_table[pos_ids][:, None]  # (B, 1, L, d/2)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).flatten(-2, -1)


def _reference_means(folder, seqs) -> np.ndarray:
    """modeling_roformer.py RoFormerModel on the batch dataset_finetune.py builds, attention-mask mean."""
    from tokenizers import Tokenizer

    sd = torch.load(folder / "pytorch_model.bin", weights_only=True)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    bodies = [tok.encode(s, add_special_tokens=False).ids for s in seqs]
    width = max(map(len, bodies)) + 2
    ids = torch.full((len(seqs), width), 3)
    mask = torch.zeros(len(seqs), width, dtype=torch.bool)
    pos = torch.full((len(seqs), width), width - 1)
    for b, body in enumerate(bodies):
        ids[b, 0], ids[b, 1], ids[b, 2 : 2 + len(body)] = 1, 2, torch.tensor(body)
        mask[b, : 2 + len(body)] = True
        pos[b, : 2 + len(body)] = torch.arange(2 + len(body))
    e = "roformer.embeddings."
    h = sd[e + "word_embeddings.weight"][ids] + sd[e + "token_type_embeddings.weight"][0]
    h = _ln(h, sd[e + "LayerNorm.weight"], sd[e + "LayerNorm.bias"])
    d = H // HEADS
    sin_t, cos_t = _sinusoid(POSITIONS, d)[:width].chunk(2, dim=-1)
    bias = (1.0 - mask[:, None, None, :].float()) * -10000.0
    n, t = ids.shape
    for i in range(LAYERS):
        p = f"roformer.encoder.layer.{i}."

        def proj(name, x, p=p):
            y = x @ sd[p + f"attention.self.{name}.weight"].T + sd[p + f"attention.self.{name}.bias"]
            return y.view(n, t, HEADS, d).permute(0, 2, 1, 3)

        q = _rotary(proj("query", h), sin_t, cos_t, pos)
        k = _rotary(proj("key", h), sin_t, cos_t, pos)
        v = proj("value", h)
        ctx = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, -1) @ v
        ctx = ctx.permute(0, 2, 1, 3).reshape(n, t, H)
        a = ctx @ sd[p + "attention.output.dense.weight"].T + sd[p + "attention.output.dense.bias"]
        a = _ln(a + h, sd[p + "attention.output.LayerNorm.weight"], sd[p + "attention.output.LayerNorm.bias"])
        m = torch.nn.functional.gelu(a @ sd[p + "intermediate.dense.weight"].T + sd[p + "intermediate.dense.bias"])
        m = m @ sd[p + "output.dense.weight"].T + sd[p + "output.dense.bias"]
        h = _ln(m + a, sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"])
    mean = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # attention-mask mean: [CLS] [SEP] included
    return mean.numpy()


def _encoder(folder, **kwargs):
    # the stand-in is H wide with POSITIONS positions, not 768 and 5120
    settings = registry_settings("deepgene", folder, embedding_dim=H, max_tokens=POSITIONS)
    ext = settings["extraction"]
    assert settings["family"] == "deepgene" and not settings["trust_remote_code"]
    assert ext["pooling"] == "mean" and ext["exclude_special_tokens"] is False
    return build(settings, device="cpu", progress=False, **kwargs)


def test_mask_mean_equals_the_authors_forward_on_cpu(tmp_path):
    folder = _folder(tmp_path)
    enc = _encoder(folder, batch_size=8)
    got = enc.embed(SEQS)
    np.testing.assert_allclose(got.embeddings, _reference_means(folder, SEQS), atol=1e-5, rtol=0)
    ident = enc.identity()
    assert ident["special_prefix"] == [1, 2] and ident["special_suffix"] == []
    assert ident["model_class"] == "RoFormerModel" and ident["weights_format"] == "pickle-weights-only"


def test_padding_does_not_change_a_vector(tmp_path):
    enc = _encoder(_folder(tmp_path), batch_size=8)
    alone = enc.embed([SEQS[1]]).embeddings[0]
    np.testing.assert_allclose(enc.embed(SEQS).embeddings[1], alone, atol=1e-5, rtol=0)


def test_a_wrong_tensor_name_is_refused_naming_model_and_tensor(tmp_path):
    def rename(sd):
        sd["roformer.encoder.layer.0.attention.self.qry.weight"] = sd.pop(
            "roformer.encoder.layer.0.attention.self.query.weight"
        )
        return sd

    with pytest.raises(WeightsNotLoadedError, match=r"deepgene.*encoder\.layer\.0\.attention\.self\.query\.weight"):
        _encoder(_folder(tmp_path, state=rename))


def test_a_saved_rotary_table_that_is_not_the_formula_is_refused(tmp_path):
    def add_table(sd):
        sd["roformer.encoder.embed_positions.weight"] = torch.zeros(POSITIONS, H // HEADS)
        return sd

    with pytest.raises(ModelLoadError, match=r"deepgene.*sinusoidal formula"):
        _encoder(_folder(tmp_path, state=add_table))


@pytest.mark.parametrize(("key", "value"), [("use_bias", False), ("norm_type", "norm")])
def test_options_transformers_cannot_express_are_refused(tmp_path, key, value):
    with pytest.raises(ModelLoadError, match=rf"deepgene.*{key}"):
        _encoder(_folder(tmp_path, **{key: value}))


def test_a_missing_tokenizer_names_the_file_and_where_to_get_it(tmp_path):
    folder = _folder(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelLoadError, match=r"deepgene: tokenizer\.json is missing.*data/vocab/tokenizer\.json"):
        _encoder(folder)
