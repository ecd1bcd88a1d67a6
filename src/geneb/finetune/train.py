"""One fine-tune cell: its trainable network and its training.

The trainable network of one fine-tune cell: the registry's encoder (loaded through the encoder contract,
`geneb.extract.step.build_encoder`), low-rank adapters or its last block made trainable, and a linear head on the
pooled representation the registry declares (its layer and pooling; chunks of a long row averaged).

Tokenisation, special tokens, chunking and padding are the encoder engine's (`TokenModelEncoder`): the fine-tuned
network sees exactly the model input its probe's embeddings were computed from.

Training one fine-tune cell (model, task, regime, seed): AdamW, warm-up schedule, early stopping on a seeded
validation split of the cell's own training rows, and a resumable checkpoint after every epoch.

Determinism (CPU, one thread count): the adapters and the head are initialised after `torch.manual_seed(seed)`
(`network.adapt`), each epoch's row order is `numpy.random.default_rng([seed, epoch]).permutation`, and dropout
draws from torch's global generator, whose state is in the checkpoint. A job killed after epoch e resumes at
epoch e + 1 from the checkpoint (trainable tensors, optimizer, scheduler, generator state, the best epoch so far)
and ends with exactly the tensors an uninterrupted run ends with (tests/finetune/test_resume.py).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.metrics import matthews_corrcoef
from torch import nn

from geneb.encoders.engine.checks import get_layer
from geneb.encoders.engine.chunking import Chunk, pool
from geneb.encoders.engine.tokenmodel import TokenModelEncoder
from geneb.finetune.recipe import FALLBACK, LORA, FineTuneInputError, NonFiniteLossError, Recipe


@dataclasses.dataclass
class Tokenised:
    """One split's model input: every chunk (`Chunk`: ids with special tokens, pool mask, seq_index = position of
    its row in the split) and the split's UNK counts (rows with an UNK token, UNK tokens)."""

    chunks: list[Chunk]
    n_rows: int
    unknown: tuple[int, int]

    def rows_chunks(self, positions: np.ndarray) -> list[list[Chunk]]:
        """The chunks of each row position in `positions` (int (n,)), in order."""
        by_row: dict[int, list[Chunk]] = {}
        for c in self.chunks:
            by_row.setdefault(c.seq_index, []).append(c)
        return [by_row[int(p)] for p in positions]


def tokenise(encoder: TokenModelEncoder, sequences: list[str], rows: list[int]) -> Tokenised:
    """The encoder engine's chunks of `sequences` (model-input text, as extraction gives it), seq_index = list
    position. Raises what `TokenModelEncoder.chunks_and_unknowns` raises (dropped letters, long rows under
    long_policy error, ...)."""
    chunks, _, _, _, unknown = encoder.chunks_and_unknowns(sequences, rows)
    return Tokenised(chunks, len(sequences), (int(unknown[0]), int(unknown[1])))


def _lora_targets(model: nn.Module, suffixes: tuple[str, ...]) -> list[str]:
    """Full names of the nn.Linear modules whose last name component is one of `suffixes`."""
    return sorted(
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in suffixes
    )


def _last_block(model: nn.Module, n_layers: int | None) -> tuple[str, nn.Module]:
    """(name, module) of the network's last block: the last element of the largest nn.ModuleList with n_layers
    elements (any length when n_layers is unknown). Raises FineTuneInputError when there is none."""
    lists = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, nn.ModuleList) and len(m) > 0 and (n_layers is None or len(m) == n_layers)
    ]
    if not lists:
        raise FineTuneInputError(
            f"no list of {n_layers} blocks in {type(model).__name__}: neither LoRA targets nor a last block to train"
        )
    name, blocks = max(lists, key=lambda nm: sum(p.numel() for p in nm[1].parameters()))
    return f"{name}.{len(blocks) - 1}", blocks[len(blocks) - 1]


class Classifier(nn.Module):
    """Encoder network (adapted) + linear head on its pooled representation.

    forward(ids (B, T) long, attn (B, T), pmask (B, T), seg (B,) long: the output row of each chunk, n_out) ->
    logits float32 (n_out, n_classes): each chunk pooled with the registry's pooling over its pool mask, the
    chunks of a row averaged (long_policy chunk_mean), then the head.
    """

    def __init__(self, encoder: TokenModelEncoder, network: nn.Module, n_classes: int) -> None:
        super().__init__()
        # the engine's execution attributes (extraction, model_id, device) are set at run time (init_execution)
        self.encoder: Any = encoder
        self.network = network
        enc: Any = encoder
        width = enc.hidden_size or enc.extraction.embedding_dim
        if not width:
            raise FineTuneInputError(f"model {enc.model_id}: hidden size unknown: no head can be sized")
        self.head = nn.Linear(int(width), n_classes)

    def forward(
        self, ids: torch.Tensor, attn: torch.Tensor, pmask: torch.Tensor, seg: torch.Tensor, n_out: int
    ) -> torch.Tensor:
        enc = self.encoder
        inputs = {"input_ids": ids}
        if enc.uses_attention_mask and not enc.elide_causal_mask:
            inputs["attention_mask"] = attn
        layer = enc.extraction.layer
        enc._captured.clear()
        out = enc._call(inputs, isinstance(layer, int) and layer != -1)
        if isinstance(layer, str):
            hidden = enc._captured[0]
        else:
            hidden = get_layer(out, layer, model=enc.model_id, n_layers=enc.n_layers)
        pooled = pool(hidden.float(), pmask, enc.extraction.pooling)
        summed = torch.zeros(n_out, pooled.shape[1], dtype=pooled.dtype, device=pooled.device)
        summed.index_add_(0, seg, pooled)
        counts = torch.bincount(seg, minlength=n_out).clamp(min=1).to(pooled.dtype)
        result: torch.Tensor = self.head(summed / counts[:, None])
        return result

    def batch(self, row_chunks: list[list[Chunk]]) -> tuple[torch.Tensor, ...]:
        """(ids, attn, pmask, seg) of the rows' chunks, padded by the engine (`batch_tensors`), on the device."""
        flat = [c for cs in row_chunks for c in cs]
        seg = torch.tensor([i for i, cs in enumerate(row_chunks) for _ in cs], dtype=torch.long)
        ids, attn, pmask = self.encoder.batch_tensors(flat)
        dev = self.encoder.device
        return ids.to(dev), attn.to(dev), pmask.to(dev), seg.to(dev)


@dataclasses.dataclass
class Adapted:
    """A cell's network: the classifier, its trainable parameters (name -> tensor), and what was adapted."""

    classifier: Classifier
    method: str
    targets: list[str]

    def trainable(self) -> dict[str, nn.Parameter]:
        """The trainable parameters by name (adapter or last block, and the head)."""
        return {n: p for n, p in self.classifier.named_parameters() if p.requires_grad}

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """A copy of the trainable tensors (what a checkpoint and the kept adapter hold)."""
        return {n: p.detach().clone() for n, p in self.trainable().items()}

    def load_trainable(self, state: dict[str, torch.Tensor]) -> None:
        """Copy `state` (from `trainable_state`) into the trainable parameters; KeyError on a name mismatch."""
        params = self.trainable()
        if set(state) != set(params):
            raise KeyError(f"trainable parameters differ: {sorted(set(state) ^ set(params))[:5]}")
        with torch.no_grad():
            for n, p in params.items():
                p.copy_(state[n])


def adapt(
    encoder: TokenModelEncoder, pristine: nn.Module, family: str, recipe: Recipe, n_classes: int, seed: int
) -> Adapted:
    """A fresh trainable network for one cell: a copy of `pristine` (the encoder's loaded network, never
    changed), LoRA (peft `inject_adapter_in_model`, rank/alpha/dropout of the recipe) on the linear modules named
    by `recipe.targets_for(family)`, or, when the recipe names none for the family or none match, its last block
    (`_last_block`) trainable; plus the linear head. Everything else frozen. Initialisation is seeded:
    `torch.manual_seed(seed)` before the adapters and the head are created."""
    from peft import LoraConfig, inject_adapter_in_model

    network = copy.deepcopy(pristine)
    for p in network.parameters():
        p.requires_grad_(False)
    torch.manual_seed(seed)
    targets = _lora_targets(network, recipe.targets_for(family))
    if targets:
        cfg = LoraConfig(r=recipe.rank, lora_alpha=recipe.alpha, lora_dropout=recipe.dropout, target_modules=targets)
        network = inject_adapter_in_model(cfg, network)
        for name, p in network.named_parameters():
            p.requires_grad_("lora_" in name)
        method = LORA
    else:
        name, block = _last_block(network, encoder.n_layers)
        for p in block.parameters():
            p.requires_grad_(True)
        targets, method = [name], FALLBACK
    encoder.loaded = dataclasses.replace(encoder.loaded, model=network)
    classifier = Classifier(encoder, network, n_classes)
    classifier.to(classifier.encoder.device)
    return Adapted(classifier, method, targets)


def load_encoder(settings: dict[str, Any], *, device: str, threads: int | None) -> TokenModelEncoder:
    """The registry's encoder for resolved extraction `settings`, through the contract's loading path
    (`geneb.extract.step.build_encoder`; load-time checks run). Raises FineTuneInputError when the family's
    adapter is not a token-level torch network (nothing to fine-tune)."""
    from geneb.extract.step import build_encoder

    encoder = build_encoder(settings, device=device, threads=threads, progress=False)
    if not isinstance(encoder, TokenModelEncoder):
        raise FineTuneInputError(
            f"model {settings.get('model')}: its encoder ({type(encoder).__name__}) is not a token-level torch "
            "network; it cannot be fine-tuned"
        )
    return encoder


_log = logging.getLogger(__name__)
#: a hook called after each completed epoch (after its checkpoint is written): (cell name, epoch) -> None
EpochHook = Callable[[str, int], None]


def validation_split(y: np.ndarray, recipe: Recipe, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit positions, validation positions) into a cell's training rows y (n,), carved per class in sorted
    label order: round(val_fraction * n_c) rows, at least 1 and at most n_c - 1, drawn by
    `numpy.random.default_rng([val_seed, seed, class index])`. When a class has a single row (1-shot) there is no
    validation split (empty: the cell trains the recipe's epochs without early stopping)."""
    classes, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        return np.arange(len(y)), np.zeros(0, dtype=np.int64)
    val = []
    for i, c in enumerate(classes):
        pos = np.flatnonzero(y == c)
        n_val = min(max(1, round(recipe.val_fraction * len(pos))), len(pos) - 1)
        rng = np.random.default_rng([recipe.val_seed, seed, i])
        val.append(np.sort(rng.choice(pos, size=n_val, replace=False)))
    v = np.sort(np.concatenate(val))
    return np.setdiff1d(np.arange(len(y)), v), v


def _lr_factor(step: int, total: int, recipe: Recipe) -> float:
    """The learning-rate multiplier at optimizer step `step` of `total`: linear warm-up over
    ceil(warmup_fraction * total) steps, then linear decay to 0 ("linear") or flat ("constant")."""
    warm = math.ceil(recipe.warmup_fraction * total)
    if step < warm:
        return (step + 1) / warm
    if recipe.schedule == "constant":
        return 1.0
    return max(0.0, (total - step) / max(1, total - warm))


@dataclass
class CellRecord:
    """What training one cell did: epochs run, the epoch whose tensors were kept, its validation MCC (NaN
    without a validation split), whether patience stopped it, the last epoch's mean training loss, the rows
    fitted and held out, and whether it resumed from a checkpoint (epoch it resumed after, or -1).

    Validation loss (mean cross-entropy, nats, of the held-out rows after each epoch; `history[i]["val_loss"]`):
    `first_val_loss` (after the first epoch), `best_val_loss` (lowest after a later epoch; NaN with one
    evaluation), and `val_loss_improved`: whether a later evaluation fell below the first (strictly: min_delta 0,
    the default of Keras' and PyTorch Lightning's early stopping); None when it cannot be told (no validation
    split, 1-shot; or a single evaluation). A run whose validation loss never improved is collapsed
    (`geneb.tables.collapse`)."""

    epochs_run: int
    best_epoch: int
    best_val_mcc: float
    stopped_early: bool
    final_loss: float
    n_fit: int
    n_val: int
    resumed_after: int = -1
    history: list[dict[str, float]] = field(default_factory=list)
    first_val_loss: float = math.nan
    best_val_loss: float = math.nan
    val_loss_improved: bool | None = None


def val_loss_trend(history: list[dict[str, float]]) -> tuple[float, float, bool | None]:
    """(first validation loss, lowest later one, improved) of a cell's epoch history (`CellRecord`): NaN, NaN,
    None without validation losses (no validation split); first, NaN, None with one evaluation."""
    losses = [float(h["val_loss"]) for h in history if math.isfinite(float(h.get("val_loss", math.nan)))]
    if not losses:
        return math.nan, math.nan, None
    if len(losses) == 1:
        return losses[0], math.nan, None
    later = min(losses[1:])
    return losses[0], later, bool(later < losses[0])


def _atomic_save(obj: Any, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def predict(adapted: Adapted, rows: list[list[Chunk]], batch_size: int) -> np.ndarray:
    """Class probabilities float64 (n, K) of each row's chunks (eval mode, no gradients)."""
    clf = adapted.classifier
    clf.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            part = rows[i : i + batch_size]
            ids, attn, pmask, seg = clf.batch(part)
            out.append(torch.softmax(clf(ids, attn, pmask, seg, len(part)), dim=1).double().cpu().numpy())
    return np.concatenate(out)


def train_cell(
    adapted: Adapted,
    rows: list[list[Chunk]],
    y: np.ndarray,
    recipe: Recipe,
    seed: int,
    *,
    cell: str,
    checkpoint: Path,
    key: dict[str, Any],
    on_epoch_end: EpochHook | None = None,
) -> CellRecord:
    """Train one cell in place and leave the kept epoch's tensors in `adapted`.

    rows: each training row's chunks; y: their class codes 0..K-1 (n,). cell: the name used in messages and the
    hook ("<model>/<task>/<regime>/seed <s>"). checkpoint: this cell's file, written after every epoch; one
    whose `key` matches (the recipe hash, data and shot hashes, model settings hash, regime, seed) is resumed,
    another is ignored and overwritten. Raises NonFiniteLossError naming the cell, epoch and step when a loss is
    not finite.
    """
    fit, val = validation_split(y, recipe, seed)
    params = adapted.trainable()
    decay = [p for n, p in params.items() if p.ndim > 1]
    no_decay = [p for n, p in params.items() if p.ndim <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.learning_rate,
    )
    steps_per_epoch = math.ceil(len(fit) / recipe.batch_size)
    total = steps_per_epoch * recipe.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, total, recipe))
    loss_fn = torch.nn.CrossEntropyLoss()
    start, best_state, best_epoch, best_val, bad, history = 0, adapted.trainable_state(), -1, -math.inf, 0, []
    resumed = -1
    if checkpoint.exists():
        ck = torch.load(checkpoint, weights_only=False)
        if ck.get("key") == key:
            adapted.load_trainable(ck["trainable"])
            opt.load_state_dict(ck["optimizer"])
            sched.load_state_dict(ck["scheduler"])
            torch.set_rng_state(ck["torch_rng"])
            start, best_state, best_epoch = ck["epoch"] + 1, ck["best"], ck["best_epoch"]
            best_val, bad, history, resumed = ck["best_val"], ck["bad_epochs"], ck["history"], ck["epoch"]
            _log.info("%s: resumed after epoch %d from %s", cell, ck["epoch"], checkpoint)
        else:
            _log.warning("%s: checkpoint %s belongs to other settings; starting afresh", cell, checkpoint)
    clf = adapted.classifier
    target = torch.as_tensor(y, dtype=torch.long)
    stopped = False
    for epoch in range(start, recipe.epochs):
        if bad >= recipe.patience:
            stopped = True
            break
        clf.train()
        order = fit[np.random.default_rng([seed, epoch]).permutation(len(fit))]
        losses = []
        for step in range(steps_per_epoch):
            idx = order[step * recipe.batch_size : (step + 1) * recipe.batch_size]
            ids, attn, pmask, seg = clf.batch([rows[i] for i in idx])
            loss = loss_fn(clf(ids, attn, pmask, seg, len(idx)), target[idx].to(ids.device))
            if not torch.isfinite(loss):
                raise NonFiniteLossError(f"{cell}: training loss {loss.item()} at epoch {epoch}, step {step}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(params.values()), recipe.max_grad_norm)
            opt.step()
            sched.step()
            losses.append(float(loss.item()))
        val_mcc = val_loss = math.nan
        if len(val):
            proba = predict(adapted, [rows[i] for i in val], recipe.batch_size)
            val_mcc = float(matthews_corrcoef(y[val], proba.argmax(axis=1)))
            picked = proba[np.arange(len(val)), y[val]]
            val_loss = float(-np.mean(np.log(np.clip(picked, np.finfo(np.float64).tiny, None))))
        improved = (not len(val)) or val_mcc > best_val
        if improved:
            best_state, best_epoch, best_val, bad = adapted.trainable_state(), epoch, val_mcc, 0
        else:
            bad += 1
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "val_mcc": val_mcc, "val_loss": val_loss})
        _atomic_save(
            {
                "key": key,
                "epoch": epoch,
                "trainable": adapted.trainable_state(),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "torch_rng": torch.get_rng_state(),
                "best": best_state,
                "best_epoch": best_epoch,
                "best_val": best_val,
                "bad_epochs": bad,
                "history": history,
            },
            checkpoint,
        )
        if on_epoch_end is not None:
            on_epoch_end(cell, epoch)
    adapted.load_trainable(best_state)
    first_loss, best_loss, loss_improved = val_loss_trend(history)
    return CellRecord(
        epochs_run=len(history),
        best_epoch=best_epoch,
        best_val_mcc=float(best_val) if len(val) else math.nan,
        stopped_early=stopped,
        final_loss=history[-1]["loss"] if history else math.nan,
        n_fit=len(fit),
        n_val=len(val),
        resumed_after=resumed,
        history=history,
        first_val_loss=first_loss,
        best_val_loss=best_loss,
        val_loss_improved=loss_improved,
    )
