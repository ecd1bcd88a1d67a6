"""DeepGene (wds-seu/DeepGene) behind the shared token-model engine, in transformers' `RoFormerModel`.

Facts used, all from wds-seu/DeepGene at commit 486343e5212361d6cd7ed03c624f430ed3d5f02e:

* Model (`PanGeneGraphTrans/modeling_roformer.py`, junnyu's RoFormer with `use_bias`/`norm_type` options;
  `parse.py` builds `RoFormerForMaskedLM(RoFormerConfig())`): word + token-type embeddings, LayerNorm, no
  absolute positions; rotary position embeddings on query and key from a sinusoidal table of
  `max_position_embeddings` x head size, indexed by `pos_ids`; post-LN BERT blocks with the tensor names of
  transformers' RoFormer (`attention.self.query/key/value`, `attention.output.dense/LayerNorm`,
  `intermediate.dense`, `output.dense/LayerNorm`); padding bias `(1 - mask) * -10000`. Its rotation
  (`apply_rotary`: x1 = x[..., 0::2], x2 = x[..., 1::2], [x1 cos - x2 sin, x2 cos + x1 sin] interleaved) is the
  one of transformers' `RoFormerSelfAttention.apply_rotary_position_embeddings`, and the table is the same
  formula, so with `pos_ids` = 0, 1, 2, ... (a linear sequence) transformers' `RoFormerModel` computes the
  authors' hidden states. What transformers cannot express is refused: `use_bias: false`, `norm_type` other
  than layer_norm, a decoder config.
* Config (`configuration_roformer.py`, defaults = `_DEEPGENE_DEFAULTS`): vocab 4096, hidden 768, 12 layers, 12
  heads, intermediate 3072, gelu, max_position_embeddings 5120, type_vocab 2, layer_norm_eps 1e-12, pad id 3.
* Checkpoint: `model.module.save_pretrained(model_dir + 'pretrain_params_epoch_N')` (pretrain.py; transformers
  4.29.2, torch 1.7 per requirements.txt): a folder with `config.json` and `pytorch_model.bin`, tensors under
  `roformer.` plus the MLM head `cls.`; the sinusoidal table is not saved (`_keys_to_ignore_on_save`), it is
  recomputed and checked against the formula here. The README links the folder on Google Drive
  (drive.google.com/drive/folders/1gb2IqO3NdSMbydKMLGZBFAbsbKhgm0i8).
* Tokenizer: not part of the checkpoint; the repository's `data/vocab/tokenizer.json` (a `tokenizers` BPE file,
  4096 tokens, [UNK] [CLS] [SEP] [PAD] [MASK] = 0..4; the same file as PanGeneGraphTrans/tokenizer.json),
  read with `tokenizers.Tokenizer` and encoded without special tokens (dataset_finetune.py).
* Input layout (dataset_finetune.py, as in pretraining's dataset.py): [CLS] [SEP] tokens, no trailing token,
  pad id 3, attention mask over the real positions, pos_ids 0, 1, 2, ...; at most 5120 positions
  (sequences of more than 5118 tokens are cut to 5118). GENEB uses the same: prefix [CLS] [SEP], no suffix.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from geneb.core.errors import ModelLoadError
from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork
from geneb.encoders.loading import (
    CONFIG_NAME,
    TOKENIZER_NAME,
    FolderTokenizerEncoder,
    load_mapped,
    model_folder,
    read_json,
    read_state_dict,
    require_file,
)
from geneb.registry.spec import ExtractionSettings

_log = logging.getLogger(__name__)

_SOURCE = "github.com/wds-seu/DeepGene@486343e5212361d6cd7ed03c624f430ed3d5f02e"
_GET = (
    "download the DeepGene checkpoint folder (config.json, pytorch_model.bin; pretrain_params_epoch_N) from the "
    "authors' Google Drive (drive.google.com/drive/folders/1gb2IqO3NdSMbydKMLGZBFAbsbKhgm0i8, linked from the "
    f"README of {_SOURCE}) and copy data/vocab/tokenizer.json of that repository into it (the checkpoint has no "
    "tokenizer)"
)
#: the checkpoint's wrapper prefix (RoFormerForMaskedLM.roformer)
_PREFIX = "roformer."
#: the rotary table: recomputed by the module, not saved by the authors' save_pretrained
_POSITIONS_KEY = "encoder.embed_positions.weight"
#: the authors' RoFormerConfig defaults (configuration_roformer.py): what their from_pretrained fills in for a key
#: config.json lacks
_DEEPGENE_DEFAULTS: dict[str, Any] = {
    "vocab_size": 4096,
    "embedding_size": None,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "max_position_embeddings": 5120,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 3,
    "rotary_value": False,
    "use_bias": True,
    "norm_type": "layer_norm",
    "is_decoder": False,
    "add_cross_attention": False,
}


def _roformer_config(raw: dict[str, Any], *, model: str) -> Any:
    """transformers' `RoFormerConfig` for a DeepGene config.json mapping (absent keys: DEEPGENE_DEFAULTS).
    Raises ModelLoadError naming the model for options transformers' RoFormer does not have (use_bias false,
    norm_type other than layer_norm, a decoder)."""
    from transformers import RoFormerConfig

    cfg = {k: raw.get(k, v) for k, v in _DEEPGENE_DEFAULTS.items()}
    unsupported = {
        k: cfg[k]
        for k, ok in (
            ("use_bias", cfg["use_bias"] is True),
            ("norm_type", cfg["norm_type"] == "layer_norm"),
            ("is_decoder", not cfg["is_decoder"]),
            ("add_cross_attention", not cfg["add_cross_attention"]),
        )
        if not ok
    }
    if unsupported:
        raise ModelLoadError(
            f"model {model}: config.json sets {unsupported}, which transformers' RoFormer cannot express; GENEB's "
            "DeepGene adapter serves the released configuration (biases, LayerNorm, encoder only)"
        )
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise ModelLoadError(
            f"model {model}: config.json hidden_size {cfg['hidden_size']} is not a multiple of "
            f"num_attention_heads {cfg['num_attention_heads']}"
        )
    keep = [k for k in cfg if k not in ("use_bias", "norm_type")]
    return RoFormerConfig(
        **{k: cfg[k] for k in keep},
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


def _sinusoidal_table(n_positions: int, dim: int) -> torch.Tensor:
    """The rotary table (n_positions, dim) of DeepGene's `RoFormerSinusoidalPositionalEmbedding._init_weight`:
    angle pos / 10000^(2 (j // 2) / dim); sin of the even columns in the first half, cos of the odd ones in the
    second."""
    pos = np.arange(n_positions)[:, None]
    j = np.arange(dim)[None, :]
    enc = pos / np.power(10000, 2 * (j // 2) / dim)
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = np.zeros((n_positions, dim))
    out[:, :half] = np.sin(enc[:, 0::2])
    out[:, half:] = np.cos(enc[:, 1::2])
    return torch.tensor(out, dtype=torch.float32)


class DeepGeneEncoder(FolderTokenizerEncoder):
    """DeepGene from a local checkpoint folder (`source.kind: local`: config.json, pytorch_model.bin or
    model.safetensors, and the repository's tokenizer.json). Input per chunk: [CLS] [SEP] tokens (the module
    docstring). Raises ModelLoadError for a missing file, an unsupported config, a config/weights mismatch, a
    rotary table that is not the authors' formula or an unreadable pickle, and WeightsNotLoadedError for
    missing or unused tensors, each naming the model."""

    def _load(self) -> LoadedNetwork:
        from transformers import RoFormerModel

        folder = model_folder(self.settings, get=_GET)
        raw = read_json(require_file(folder, CONFIG_NAME, model=self.model_id, get=_GET), model=self.model_id)
        tokenizer = self._open_tokenizer(require_file(folder, TOKENIZER_NAME, model=self.model_id, get=_GET))
        config = _roformer_config(raw, model=self.model_id)
        state, fmt = read_state_dict(folder, model=self.model_id, get=_GET)
        model = RoFormerModel(config)
        heads = load_mapped(model, state, prefix=_PREFIX, model=self.model_id, recomputed=(_POSITIONS_KEY,))
        if heads:
            _log.info("model %s: checkpoint heads not used for embeddings: %s", self.model_id, heads[:5])
        table = model.get_parameter("encoder.embed_positions.weight").detach().float()
        head_dim = config.hidden_size // config.num_attention_heads
        want = _sinusoidal_table(config.max_position_embeddings, head_dim)
        if table.shape != want.shape or not torch.allclose(table, want, atol=1e-5):
            raise ModelLoadError(
                f"model {self.model_id}: the rotary table of {type(model).__name__} ({tuple(table.shape)}) is not "
                f"DeepGene's sinusoidal formula ({tuple(want.shape)}); this transformers release computes other "
                "positions"
            )
        model = model.to(getattr(torch, self.weights_dtype)).eval().to(self.device)
        prefix = (self.token_id("[CLS]", tokenizer), self.token_id("[SEP]", tokenizer))
        pad_id, unk_id = self.token_id("[PAD]", tokenizer), self.token_id("[UNK]", tokenizer)
        max_tokens = resolve_max_tokens(
            None, config.max_position_embeddings, self.extraction.max_tokens, model=self.model_id
        )
        if max_tokens > config.max_position_embeddings:
            raise ModelLoadError(
                f"model {self.model_id}: max_tokens {max_tokens} exceeds the rotary table's "
                f"{config.max_position_embeddings} positions"
            )
        return LoadedNetwork(
            model=model,
            tokenizer=tokenizer,
            max_tokens=max_tokens,
            # not tried at load: the check above already bounds it by the rotary table
            max_tokens_from="registry",
            prefix=prefix,
            pad_id=pad_id,
            unk_id=unk_id,
            hidden_size=config.hidden_size,
            vocab_size=config.vocab_size,
            num_embeddings=int(model.get_input_embeddings().num_embeddings),
            n_layers=config.num_hidden_layers,
            uses_attention_mask=True,
            weights_format=fmt,
            details={"folder": folder},
        )

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        return self.model(**inputs, output_hidden_states=want_states)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), **self._folder_identity(), "source_code": _SOURCE}


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> DeepGeneEncoder:
    """Adapter entry point (see geneb.registry.families)."""
    return DeepGeneEncoder(settings, **kwargs)
