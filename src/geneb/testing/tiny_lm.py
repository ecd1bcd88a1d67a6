"""GENEB-made reference language models: a tiny masked and a tiny causal DNA transformer pretrained for a few CPU
minutes on real sequences, seeded, written as hub-snapshot folders with their head, so the `llr` scorer can be
run end to end on a trained (not random) head offline (docs/zeroshot.md, "LLR scorer"). Not product code: no
runtime module imports this one; `tools/pretrain_tiny_lm.py` is its command line.

Both use one token per base (a fast WordLevel tokenizer over [PAD] [UNK] [CLS] [SEP] [MASK] A C G T N, with
character offsets): masked = `BertForMaskedLM` with [CLS] ... [SEP] and 15% of bases masked per window (BERT's
rate, every selected base replaced by [MASK]); causal = `LlamaForCausalLM` with [CLS] as the BOS prefix,
next-base loss. Training: AdamW, fixed-size windows cropped at random from the sequences, every draw from one
seeded generator; the seed, data digest, settings and the loss curve go into `geneb_pretraining.json`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BASES = ("A", "C", "G", "T", "N")
PROVENANCE_FILE = "geneb_pretraining.json"
#: BERT's masking rate (Devlin et al. 2019)
MASK_RATE = 0.15


@dataclass(frozen=True)
class TinyLMSettings:
    """kind: "masked" | "causal"; hidden/layers/heads: the network; window: bases per training window; steps,
    batch, lr: the optimisation; seed: every random draw (weights, crops, masks)."""

    kind: str
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    window: int = 128
    steps: int = 300
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0


def write_tokenizer(folder: Path, kind: str) -> Any:
    """A fast one-base tokenizer saved into `folder`; masked adds [CLS] ... [SEP], causal [CLS] only."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate((*SPECIALS, *BASES))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    template = "[CLS] $A [SEP]" if kind == "masked" else "[CLS] $A"
    core.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        bos_token="[CLS]",
    )
    tokenizer.save_pretrained(folder)
    return tokenizer


def _network(settings: TinyLMSettings, vocab_size: int, max_tokens: int) -> Any:
    from transformers import BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM

    if settings.kind == "masked":
        return BertForMaskedLM(
            BertConfig(
                vocab_size=vocab_size,
                hidden_size=settings.hidden,
                num_hidden_layers=settings.layers,
                num_attention_heads=settings.heads,
                intermediate_size=4 * settings.hidden,
                max_position_embeddings=max_tokens,
                pad_token_id=0,
            )
        )
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=settings.hidden,
            num_hidden_layers=settings.layers,
            num_attention_heads=settings.heads,
            num_key_value_heads=settings.heads,
            intermediate_size=4 * settings.hidden,
            max_position_embeddings=max_tokens,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
            tie_word_embeddings=False,
        )
    )


def pretrain_tiny_lm(
    out: Path, sequences: Sequence[str], settings: TinyLMSettings, *, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Pretrain one tiny model on `sequences` (A/C/G/T/N, each at least `settings.window` long) and write it to
    `out` (config, safetensors weights with the head, tokenizer, `geneb_pretraining.json`). data: provenance of
    the sequences (task, file digest), recorded. Returns the provenance record (with the loss every 10 steps).
    Raises ValueError for an unknown kind or no sequence long enough."""
    if settings.kind not in ("masked", "causal"):
        raise ValueError(f"kind {settings.kind!r}: expected masked or causal")
    usable = [s.upper() for s in sequences if len(s) >= settings.window]
    if not usable:
        raise ValueError(f"no sequence of at least {settings.window} bases to train on")
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = write_tokenizer(out, settings.kind)
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    model = _network(settings, len(tokenizer), settings.window + 2)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    mask_id = int(tokenizer.mask_token_id)
    curve: list[float] = []
    started = time.process_time()
    model.train()
    for step in range(settings.steps):
        picks = rng.integers(len(usable), size=settings.batch)
        texts = []
        for i in picks:
            start = int(rng.integers(len(usable[i]) - settings.window + 1))
            texts.append(usable[i][start : start + settings.window])
        ids = torch.as_tensor(tokenizer(texts)["input_ids"], dtype=torch.long)
        if settings.kind == "masked":
            chosen = torch.as_tensor(rng.random(ids.shape) < MASK_RATE)
            chosen[:, 0] = chosen[:, -1] = False  # never the [CLS] / [SEP]
            labels = torch.where(chosen, ids, torch.full_like(ids, -100))
            loss = model(input_ids=torch.where(chosen, torch.full_like(ids, mask_id), ids), labels=labels).loss
        else:
            loss = model(input_ids=ids, labels=ids).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % 10 == 0 or step == settings.steps - 1:
            curve.append(round(float(loss.detach()), 5))
    model.eval()
    model.save_pretrained(out)
    record = {
        "builder": "geneb.testing.tiny_lm.pretrain_tiny_lm",
        "settings": asdict(settings),
        "data": dict(data or {}),
        "sequences": len(usable),
        "loss_every_10_steps": curve,
        "cpu_seconds": round(time.process_time() - started, 2),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record
