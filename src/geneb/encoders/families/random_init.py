"""The seeded random-init NT/ESM-style encoder: the floor a pretrained model must beat.

Built from the registry's `builtin` section into a temporary folder with `save_pretrained` and loaded back
through `HFEncoder`, i.e. through exactly the path a hub checkpoint takes.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from geneb.encoders.engine.checks import SENTINEL_MAX_LENGTH
from geneb.encoders.families.hf import HFEncoder
from geneb.registry.spec import ExtractionSettings

_NT_SPECIAL_TOKENS = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]


def _nt_vocabulary() -> list[str]:
    """NT's 6-mer vocabulary (Dalla-Torre et al. 2023): 6 special tokens, the 4^6 6-mers in lexicographic
    order, then the single-letter fallbacks A, C, G, T, N (4107 tokens)."""
    return _NT_SPECIAL_TOKENS + ["".join(p) for p in itertools.product("ACGT", repeat=6)] + list("ACGTN")


def _build_random_esm(builtin: Mapping[str, Any], folder: str | os.PathLike[str]) -> Path:
    """Build the seeded random-init NT/ESM-style encoder into `folder` (save_pretrained) and return it.

    builtin: {"config": EsmConfig kwargs, "init_seed": int, "tokenizer": "nt-6mer"}; the config may set
    `position_embedding_type` (default "absolute"; "rotary" as in NT-v2), not the vocabulary or the special
    ids, which the tokenizer fixes (a TypeError if it tries). The tokenizer is NT's
    scheme (6-mers, single-letter fallback, a CLS prefix and no EOS). Weights come from
    `torch.manual_seed(init_seed)` then the model constructor, so the same seed and torch version give the
    same weights (their hash is stored in the extraction key). Raises ValueError for another tokenizer.
    """
    from transformers import EsmConfig, EsmModel, EsmTokenizer

    if builtin.get("tokenizer", "nt-6mer") != "nt-6mer":
        raise ValueError(f"unknown builtin tokenizer {builtin.get('tokenizer')!r}; only 'nt-6mer' is built in")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = _nt_vocabulary()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = EsmTokenizer(
        str(folder / "vocab.txt"),
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<cls>",
        eos_token=None,
    )
    tok.model_max_length = SENTINEL_MAX_LENGTH * 10  # "not set", like many hub tokenizers
    tok.save_pretrained(folder)
    # absolute positions unless the config names them (NT-v2 uses rotary ones); the vocabulary is the tokenizer's
    config = EsmConfig(
        **{"position_embedding_type": "absolute", **builtin["config"]},
        vocab_size=len(vocab),
        pad_token_id=1,
        mask_token_id=2,
    )
    torch.manual_seed(int(builtin.get("init_seed", 0)))
    EsmModel(config, add_pooling_layer=False).save_pretrained(folder)
    return folder


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> HFEncoder:
    """Adapter entry point: build the folder in a temporary directory, load it through HFEncoder, delete the
    folder (the weights hash stays in the encoder's identity)."""
    with tempfile.TemporaryDirectory(prefix="geneb-random-esm-") as tmp:
        encoder = HFEncoder(settings, where=str(_build_random_esm(settings.builtin, tmp)), **kwargs)
    encoder.where = "builtin:random-esm"
    return encoder
