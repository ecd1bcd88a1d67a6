"""Helpers of the Google-Drive adapter tests: a real-format BPE tokenizer file and the committed registry entry
of a model pointed at a local stand-in folder (`source.kind: local`), resolved through the registry path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from geneb.registry.load import extraction_settings
from geneb.registry.registry import Registry

REPO = Path(__file__).resolve().parents[3]

#: special tokens at ids 0..4, as in both repositories' tokenizer.json (DNABERT-2-style BPE)
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
#: a small merge table: A C G T, then pairs and triples (the released files have 4,087 merges)
MERGES = [("A", "A"), ("T", "T"), ("C", "G"), ("A", "C"), ("G", "T"), ("AC", "GT"), ("T", "A"), ("G", "G")]


def write_bpe_tokenizer(path: Path, *, added: tuple[str, ...] = ()) -> int:
    """Write a `tokenizers` BPE file in the layout of Genomics-FM's tokenizer_bpe/tokenizer.json and DeepGene's
    data/vocab/tokenizer.json (BPE model with [UNK] and no fused UNK, Whitespace pre-tokenizer, [CLS] $A [SEP]
    template, specials 0..4), plus `added` special tokens after the vocabulary. Returns the vocabulary size
    (added tokens included)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {t: i for i, t in enumerate(SPECIALS + ["A", "C", "G", "T"])}
    for a, b in MERGES:
        vocab.setdefault(a + b, len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=MERGES, unk_token="[UNK]", fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    tok.add_special_tokens(SPECIALS + list(added))
    tok.save(str(path))
    return tok.get_vocab_size(with_added_tokens=True)


def registry_settings(model: str, folder: Path, **extraction: Any) -> dict[str, Any]:
    """The resolved extraction settings of the committed config/models.yaml entry of `model`, with its source
    pointed at `folder` (`source.kind: local`) and `extraction` keys overridden (a shrunk input cap)."""
    entry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())["models"][model]
    entry["source"] = {"kind": "local", "path": str(folder)}
    entry["extraction"] = {**entry["extraction"], **extraction}
    return extraction_settings(Registry.from_mapping({"models": {model: entry}}), model, {})
