"""Training one fine-tune cell (model, task, regime, seed): AdamW, warm-up schedule, early stopping on a seeded
validation split of the cell's own training rows, and a resumable checkpoint after every epoch.

Determinism (CPU, one thread count): the adapters and the head are initialised after `torch.manual_seed(seed)`
(`network.adapt`), each epoch's row order is `numpy.random.default_rng([seed, epoch]).permutation`, and dropout
draws from torch's global generator, whose state is in the checkpoint. A job killed after epoch e resumes at
epoch e + 1 from the checkpoint (trainable tensors, optimizer, scheduler, generator state, the best epoch so far)
and ends with exactly the tensors an uninterrupted run ends with (tests/finetune/test_resume.py).
"""

from __future__ import annotations

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

from geneb.encoders.engine.chunking import Chunk
from geneb.finetune.errors import NonFiniteLossError
from geneb.finetune.network import Adapted
from geneb.finetune.recipe import Recipe

log = logging.getLogger(__name__)
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


def lr_factor(step: int, total: int, recipe: Recipe) -> float:
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
    fitted and held out, and whether it resumed from a checkpoint (epoch it resumed after, or -1)."""

    epochs_run: int
    best_epoch: int
    best_val_mcc: float
    stopped_early: bool
    final_loss: float
    n_fit: int
    n_val: int
    resumed_after: int = -1
    history: list[dict[str, float]] = field(default_factory=list)


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
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, recipe))
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
            log.info("%s: resumed after epoch %d from %s", cell, ck["epoch"], checkpoint)
        else:
            log.warning("%s: checkpoint %s belongs to other settings; starting afresh", cell, checkpoint)
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
        val_mcc = math.nan
        if len(val):
            proba = predict(adapted, [rows[i] for i in val], recipe.batch_size)
            val_mcc = float(matthews_corrcoef(y[val], proba.argmax(axis=1)))
        improved = (not len(val)) or val_mcc > best_val
        if improved:
            best_state, best_epoch, best_val, bad = adapted.trainable_state(), epoch, val_mcc, 0
        else:
            bad += 1
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "val_mcc": val_mcc})
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
    )
