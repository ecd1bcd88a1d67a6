"""GENEB's reference language models for the `llr` scorer: a tiny masked and a tiny causal DNA transformer,
pretrained here, seeded, for a few CPU minutes (docs/zeroshot.md, "Reference language models").

None of the local checkpoints in ../shared/models keeps its language-model head (they are fine-tuned classifiers),
so without these the `llr` path would never run on trained transformer weights. They are GENEB-made, never
committed as weights, and named so everywhere they appear (registry ids `geneb-tiny-mlm`, `geneb-tiny-clm`; their
display names and `pretraining_data` say "GENEB-made"). They are pretrained on the training split of
`PRETRAINING_TASK`, a task no built zero-shot task is made from (`check_pretraining_task` refuses otherwise, and the
llr scorer declines a task built from it).

The pretraining is here too (`pretrain_reference_lm`; `tools/pretrain_tiny_lm.py` is its command line for other
tasks and settings). Both models use one token per base (a fast WordLevel tokenizer over [PAD] [UNK] [CLS] [SEP]
[MASK] A C G T N, with character offsets): masked = `BertForMaskedLM` with [CLS] ... [SEP] and 15% of bases masked
per window (BERT's rate, every selected base replaced by [MASK]); causal = `LlamaForCausalLM` with [CLS] as the BOS
prefix, next-base loss. Training: AdamW, fixed-size windows cropped at random from the sequences, every draw from
one seeded generator; the seed, data digest, settings and the loss curve go into `geneb_pretraining.json`.

Torch-free at import: numpy, torch, tokenizers and transformers are imported inside the functions that pretrain.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no stubs; types-tqdm is not a dependency

from geneb.core.provenance import file_sha256
from geneb.zeroshot.task import CatalogueEntry

#: the real task whose training split the reference models learn from: mouse mRNAs and lncRNAs (median 1.2 kb, so
#: every 520-base window is real sequence), not a source of any built zero-shot task
PRETRAINING_TASK = "prelnc_mouse_lncrna_vs_mrna__resplit"
#: bases per training window: the longest built zero-shot window (512 bases) fits with room to spare
_WINDOW = 520
#: optimiser steps and windows per step: the causal model's loss is flat (about 1.34 nats per base) from about
#: step 50 of 32 windows on; 150 steps of 8 windows keep both models to a few CPU minutes
_STEPS = 150
_BATCH = 8
_SEED = 0
#: the registry id of each reference model -> its head kind
_REFERENCE_LMS: dict[str, str] = {"geneb-tiny-mlm": "masked", "geneb-tiny-clm": "causal"}
_DEFAULT_OUT = Path("resources/reference_lms")
#: the provenance file the pretraining writes into each model folder (`pretrain_reference_lm`)
_PROVENANCE_FILE = "geneb_pretraining.json"
#: the tokenizer's special tokens and bases, in vocabulary order (one token per base)
_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_BASES = ("A", "C", "G", "T", "N")
#: BERT's masking rate (Devlin et al. 2019)
_MASK_RATE = 0.15


@dataclass(frozen=True)
class ReferenceLMSettings:
    """How one reference model is pretrained. kind: "masked" | "causal"; hidden/layers/heads: the network; window:
    bases per training window; steps, batch, lr: the optimisation; seed: every random draw (weights, crops,
    masks). Recorded as `settings` in the model's `geneb_pretraining.json`."""

    kind: str
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    window: int = 128
    steps: int = 300
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0


def check_pretraining_task(catalogue: Iterable[CatalogueEntry], task: str = PRETRAINING_TASK) -> None:
    """Raise ValueError when a catalogued zero-shot task is built from `task`: its rows would be scored by models
    that learned from their own source sequences."""
    built_from = sorted(e.task for e in catalogue if task in e.source_tasks)
    if built_from:
        raise ValueError(f"the reference models' pretraining task {task} is a source of zero-shot task(s) {built_from}")


def pretraining_task_of(folder: str | Path) -> str | None:
    """The task a GENEB-made model folder was pretrained on (its geneb_pretraining.json), None for any other model."""
    record = Path(folder) / _PROVENANCE_FILE
    if not record.is_file():
        return None
    task = json.loads(record.read_text()).get("data", {}).get("task")
    return str(task) if task else None


def _write_base_tokenizer(folder: Path, kind: str) -> Any:
    """A fast one-base tokenizer saved into `folder`; masked adds [CLS] ... [SEP], causal [CLS] only."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate((*_SPECIALS, *_BASES))}
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


def _network(settings: ReferenceLMSettings, vocab_size: int, max_tokens: int) -> Any:
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


def pretrain_reference_lm(
    out: Path,
    sequences: Sequence[str],
    settings: ReferenceLMSettings,
    *,
    data: dict[str, Any] | None = None,
    quiet: bool | None = False,
) -> dict[str, Any]:
    """Pretrain one tiny reference model on `sequences` (A/C/G/T/N, each at least `settings.window` long) and write it to
    `out` (config, safetensors weights with the head, tokenizer, `geneb_pretraining.json`). data: provenance of
    the sequences (task, file digest), recorded; quiet: no progress line (None: tqdm's default, a line only on a
    terminal). Returns the provenance record (with the loss every 10 steps).
    Raises ValueError for an unknown kind or no sequence long enough."""
    import numpy as np
    import torch

    if settings.kind not in ("masked", "causal"):
        raise ValueError(f"kind {settings.kind!r}: expected masked or causal")
    usable = [s.upper() for s in sequences if len(s) >= settings.window]
    if not usable:
        raise ValueError(f"no sequence of at least {settings.window} bases to train on")
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _write_base_tokenizer(out, settings.kind)
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    model = _network(settings, len(tokenizer), settings.window + 2)
    optimiser = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    mask_id = int(tokenizer.mask_token_id)
    curve: list[float] = []
    started = time.process_time()
    model.train()
    # a progress line on stderr (steps done, rate, ETA, last loss) at most every 10 s: a few CPU minutes per model
    # on a busy 2-core machine, where silence reads as a hang
    progress = tqdm(
        range(settings.steps),
        desc=f"pretraining the {settings.kind} reference LM",
        unit="step",
        mininterval=10,
        file=sys.stderr,
        disable=None if quiet is None else quiet,
    )
    for step in progress:
        picks = rng.integers(len(usable), size=settings.batch)
        texts = []
        for i in picks:
            start = int(rng.integers(len(usable[i]) - settings.window + 1))
            texts.append(usable[i][start : start + settings.window])
        ids = torch.as_tensor(tokenizer(texts)["input_ids"], dtype=torch.long)
        if settings.kind == "masked":
            chosen = torch.as_tensor(rng.random(ids.shape) < _MASK_RATE)
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
            progress.set_postfix(loss=curve[-1], refresh=False)
    progress.close()
    model.eval()
    model.save_pretrained(out)
    record = {
        "builder": "geneb.zeroshot.reference_lms.pretrain_reference_lm",
        "settings": asdict(settings),
        "data": dict(data or {}),
        "sequences": len(usable),
        "loss_every_10_steps": curve,
        "cpu_seconds": round(time.process_time() - started, 2),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    (out / _PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def _wanted(kind: str, train: Path) -> dict[str, Any]:
    return {
        "settings": asdict(ReferenceLMSettings(kind=kind, window=_WINDOW, steps=_STEPS, batch=_BATCH, seed=_SEED)),
        "data": {"task": PRETRAINING_TASK, "train_sha256": file_sha256(train, 64)},
    }


def build_reference_lms(task_source: str | Path, out: str | Path = _DEFAULT_OUT) -> list[tuple[str, Path, str]]:
    """Pretrain each reference model into `out`/<registry id>/ from the mirror folder `task_source`, unless the
    folder already holds one made with the same settings from the same training file. Each model is written to a
    temporary folder and renamed into place, so a killed run leaves no half-written model. Returns (id, folder,
    "built" | "kept") per model. Raises FileNotFoundError naming the training split when the mirror lacks it."""
    import pandas as pd

    train = Path(task_source) / PRETRAINING_TASK / "train.csv.gz"
    if not train.is_file():
        raise FileNotFoundError(f"reference language models: no training split {train} (task {PRETRAINING_TASK})")
    done: list[tuple[str, Path, str]] = []
    sequences: list[str] | None = None  # read once, and only when a model is built
    for name, kind in _REFERENCE_LMS.items():
        folder = Path(out) / name
        wanted = _wanted(kind, train)
        record = folder / _PROVENANCE_FILE
        if record.is_file():
            found = json.loads(record.read_text())
            if {k: found.get(k) for k in wanted} == wanted:
                done.append((name, folder, "kept"))
                continue
        if sequences is None:
            sequences = pd.read_csv(train)["sequence"].astype(str).tolist()
        staging = folder.with_name(f".{name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        pretrain_reference_lm(staging, sequences, ReferenceLMSettings(**wanted["settings"]), data=wanted["data"])
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        done.append((name, folder, "built"))
    return done
