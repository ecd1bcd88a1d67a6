"""The workflow step of the fine-tuning stage, file in, file out (called by workflow/scripts/finetune_lora.py).

`finetune_task`: task splits + card + the probe protocol's shot file (+ audit) + the model's resolved extraction
settings -> `results/probes/finetune-lora/{model}/{task}.parquet` and `results/predictions/finetune-lora/...`, with
exactly the probe tables' columns (docs/data-dictionary.md, stage 3), so aggregation, every leaderboard, the
analyses and the CLI read them unchanged. What differs is in columns that exist for every protocol: `config_hash`
is the recipe hash, `C` is NaN, `C_selection` names how the model was adapted (`lora+head` or
`last_block+head`), `n_iter` the epochs trained, `embedding_key_hash` the model's extraction settings hash (its
weights, tokenizer, layer and pooling; no embedding file is read). Each cell's training record (targets, epochs,
best epoch, validation MCC, final loss, resumed) and any failed cell are in the table's metadata
(FINETUNE_ATTR), with each run's mark (`status` ok | collapsed, `collapse_reason`: one class predicted for every test
row, or a validation loss that never fell below its first evaluation; `geneb.tables.collapse`), which aggregation
joins onto the score table as `finetune_status` / `collapse_reason`.

Work in progress lives in `scratch` (one checkpoint per cell, `train.train_cell`; one result file per finished
cell), so a killed job resumes; it is deleted when the tables are written. The fine-tuned weights are never
kept; with `adapter_dir` the trainable tensors (adapter or last block, and the head) of each cell are.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import torch

from geneb.core import integrity
from geneb.core.provenance import stable_hash
from geneb.finetune.recipe import FINETUNE_PROTOCOL, FineTuneInputError, NonFiniteLossError, Recipe, from_config
from geneb.finetune.train import CellRecord, EpochHook, Tokenised, adapt, load_encoder, predict, tokenise, train_cell
from geneb.probe.fit import Fit, TaskArrays, score_fits, thread_record
from geneb.probe.job import dedup_scores, stamp_rows
from geneb.probe.metrics import clean_columns
from geneb.probe.protocols import Protocol
from geneb.probe.protocols import from_config as probe_protocol
from geneb.probe.shots import check_shots, read_shots
from geneb.probe.views import registry_view, with_view
from geneb.tables.collapse import COLLAPSED, FINETUNE_ATTR, run_status
from geneb.tables.scores import PROBE_THREADS_ATTR
from geneb.tasks.audit import read_audit
from geneb.tasks.prepare import read_card

_PathLike = str | os.PathLike[str]
_log = logging.getLogger(__name__)
#: parquet metadata key of a fine-tune score table: {"recipe": settings, "recipe_hash", "cells": [...], "failed": [...]}
_FINETUNE_ATTR = FINETUNE_ATTR


def _split(path: _PathLike, task: str, split: str) -> pd.DataFrame:
    df = integrity.read_parquet(path, columns=["row", "label", "sequence"])
    if df["row"].duplicated().any():
        raise FineTuneInputError(f"task {task!r}, split {split!r}: duplicated row ids in {path}")
    return df


def _cells(
    recipe: Recipe, shot: dict[str, Any], rows_train: np.ndarray, task: str
) -> list[tuple[str, int, np.ndarray, int]]:
    """(regime, seed, positions into the training split, classes short of k) of every cell, in output order:
    full then each k-shot regime, seeds in recipe order; rows are the shot file's (`full_rows`, `draws`), the
    probes' own. Raises FineTuneInputError for a shot row that is not a training row."""
    pos_of = {int(r): i for i, r in enumerate(rows_train)}

    def positions(ids: list[int], regime: str, seed: int) -> np.ndarray:
        missing = [r for r in ids if int(r) not in pos_of]
        if missing:
            raise FineTuneInputError(
                f"task {task!r}, {regime} seed {seed}: shot row {missing[0]} is not a training row"
            )
        return np.array([pos_of[int(r)] for r in ids], dtype=np.int64)

    draws = {(d["regime"], int(d["seed"])): d for d in shot["draws"]}
    out = []
    for regime in recipe.regimes:
        for seed in recipe.seeds:
            if regime == "full":
                out.append((regime, seed, positions(shot["full_rows"], regime, seed), 0))
            else:
                d = draws[(regime, seed)]
                out.append((regime, seed, positions(d["rows"], regime, seed), len(d.get("short_classes", {}))))
    return out


def finetune_task(
    *,
    train: _PathLike,
    test: _PathLike,
    card: _PathLike,
    shots: _PathLike,
    scores_out: _PathLike,
    predictions_out: _PathLike,
    task: str,
    model: str,
    settings: dict[str, Any],
    probe_settings: dict[str, Any],
    extraction: dict[str, Any],
    settings_hash: str,
    scratch: _PathLike,
    audit: _PathLike | None = None,
    n_layers: int | None = None,
    device: str = "cpu",
    threads: int = 1,
    adapter_dir: _PathLike | None = None,
    on_epoch_end: EpochHook | None = None,
) -> pd.DataFrame:
    """Fine-tune every (regime, seed) cell of `finetune-lora` for one (model, task); write both tables.

    settings: config finetune.finetune-lora; probe_settings: config probe.<shots_from> (its shot draws, bootstrap
    and F1 rule); extraction / settings_hash: the model's resolved extraction settings and their hash. scratch: the
    job's folder for checkpoints (a rerun after a kill resumes from it; removed on success). device, threads:
    execution knobs (torch intra-op threads; CPU results are reproducible at one thread count). on_epoch_end: a
    hook after each epoch's checkpoint (tests simulate a kill with it). A cell whose loss turns non-finite
    (NonFiniteLossError) is left out and recorded in the metadata; the job fails only when every cell does.
    Returns the score table. Raises FineTuneInputError / ProbeInputError for inconsistent inputs.
    """
    recipe = from_config(settings, probe_settings)
    proto: Protocol = probe_protocol(recipe.shots_from, probe_settings)
    c = read_card(card)
    tr, te = _split(train, task, "train"), _split(test, task, "test")
    shot = read_shots(shots, task=task, data_hash=c.data_hash, settings=probe_settings, protocol=recipe.shots_from)
    check_shots(shot, tr["row"].to_numpy(), tr["label"].to_numpy(), path=shots)
    classes = np.unique(tr["label"].to_numpy())
    code = {int(k): i for i, k in enumerate(classes)}
    y_train = np.array([code[int(v)] for v in tr["label"]], dtype=np.int64)
    torch.set_num_threads(int(threads))
    from geneb.extract.step import model_inputs

    encoder = load_encoder(extraction, device=device, threads=threads)
    device = str(cast(Any, encoder).device)  # "auto" resolved by the engine
    pristine = encoder.model
    tok_train: Tokenised = tokenise(encoder, model_inputs(tr, task=task, split="train"), tr["row"].tolist())
    tok_test: Tokenised = tokenise(encoder, model_inputs(te, task=task, split="test"), te["row"].tolist())
    test_rows = tok_test.rows_chunks(np.arange(len(te)))
    scratch = Path(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    base_key = {
        "recipe_hash": recipe.recipe_hash(),
        "data_hash": c.data_hash,
        "shots_hash": shot["draw_hash"],
        "settings_hash": settings_hash,
        "device": device,
        "threads": int(threads),
    }
    fits: list[Fit] = []
    records: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for regime, seed, pos, n_short in _cells(recipe, shot, tr["row"].to_numpy(), task):
        name = f"{model}/{task}/{regime}/seed {seed}"
        key = {**base_key, "regime": regime, "seed": seed}
        stem = f"{regime}-{seed}"
        done = scratch / f"{stem}.result.pt"
        if done.exists() and (res := torch.load(done, weights_only=False)).get("key") == key:
            _log.info("%s: finished in an earlier attempt; its result is reused", name)
        else:
            adapted = adapt(encoder, pristine, extraction["family"], recipe, len(classes), seed)
            try:
                rec: CellRecord = train_cell(
                    adapted,
                    tok_train.rows_chunks(pos),
                    y_train[pos],
                    recipe,
                    seed,
                    cell=name,
                    checkpoint=scratch / f"{stem}.ckpt.pt",
                    key=key,
                    on_epoch_end=on_epoch_end,
                )
            except NonFiniteLossError as err:
                _log.error("%s", err)
                failed.append({"regime": regime, "seed": seed, "error": f"NonFiniteLossError: {err}"})
                continue
            proba = predict(adapted, test_rows, recipe.batch_size)
            res = {
                "key": key,
                "proba": proba,
                "record": {**vars(rec), "method": adapted.method, "targets": adapted.targets},
                "n_train": len(pos),
                "n_short": n_short,
            }
            if adapter_dir is not None:
                Path(adapter_dir).mkdir(parents=True, exist_ok=True)
                torch.save(adapted.trainable_state(), Path(adapter_dir) / f"{stem}.pt")
            torch.save(res, done)
        rec_d = res["record"]
        proba = res["proba"]
        fits.append(
            Fit(
                regime,
                (seed,),
                classes[proba.argmax(axis=1)],
                proba,
                res["n_train"],
                float("nan"),
                rec_d["method"],
                True,
                int(rec_d["epochs_run"]),
                n_short_classes=res["n_short"],
            )
        )
        mark = run_status(
            classes[proba.argmax(axis=1)],
            classes,
            rec_d.get("val_loss_improved"),
            first_val_loss=float(rec_d.get("first_val_loss", float("nan"))),
            best_val_loss=float(rec_d.get("best_val_loss", float("nan"))),
        )
        if mark["status"] == COLLAPSED:
            _log.warning("%s: collapsed (%s); its scores are kept and never ranked", name, mark["collapse_reason"])
        records.append(
            {
                "regime": regime,
                "seed": seed,
                **{k: v for k, v in rec_d.items() if k != "history"},
                "val_losses": [h.get("val_loss") for h in rec_d.get("history", [])],
                **mark,
            }
        )
    if not fits:
        raise NonFiniteLossError(f"{model}/{task}: every cell failed: {[f['error'] for f in failed]}")
    scores, preds = _tables(fits, classes, te, task, proto, c, audit)
    view = registry_view({"settings": extraction, "model": model}, n_layers)
    scores, preds = with_view(scores, **view), with_view(preds, **view)
    prov = {
        "config_hash": recipe.recipe_hash(),
        "data_hash": c.data_hash,
        "shots_hash": shot["draw_hash"],
        "embedding_key_hash": settings_hash,
        "embedding_compute_dtype": str(encoder.compute_dtype),
    }
    unknown = {
        "n_unknown_tokens_train": pd.array([tok_train.unknown[1]] * len(scores), dtype="Int64"),
        "n_unknown_tokens_test": pd.array([tok_test.unknown[1]] * len(scores), dtype="Int64"),
    }
    scores, preds = stamp_rows(
        scores,
        preds,
        protocol=FINETUNE_PROTOCOL,
        model=model,
        task=task,
        category=c.category,
        provenance=prov,
        unknown=unknown,
    )
    scores.attrs[PROBE_THREADS_ATTR] = thread_record()
    scores.attrs[_FINETUNE_ATTR] = {
        "recipe": recipe.settings(),
        "recipe_hash": recipe.recipe_hash(),
        "key_hash": stable_hash(base_key),
        "cells": records,
        "failed": failed,
    }
    for path, table in ((scores_out, scores), (predictions_out, preds)):
        integrity.write_parquet(table, path)
    shutil.rmtree(scratch, ignore_errors=True)
    mcc = scores[scores["metric"] == "MCC"]
    _log.info(
        "%s / %s / %s: mean MCC per regime %s; failed cells %d",
        FINETUNE_PROTOCOL,
        model,
        task,
        mcc.groupby("regime", sort=False)["value"].mean().round(4).to_dict(),
        len(failed),
    )
    return scores


def _tables(
    fits: list[Fit],
    classes: np.ndarray,
    te: pd.DataFrame,
    task: str,
    proto: Protocol,
    card: Any,
    audit: _PathLike | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score the fits exactly as the probes are scored (`geneb.probe.fit.score_fits`: MCC with its bootstrap CI,
    the other metrics, the seed summary; the dedup rows and the clean-subset columns of `geneb.probe.job`)."""
    empty = np.zeros((len(te), 0))
    data = TaskArrays(
        task,
        empty,
        te["label"].to_numpy(),
        te["row"].to_numpy(),
        empty,
        te["label"].to_numpy(),
        te["row"].to_numpy(),
    )
    scores, preds = score_fits(data, proto, fits, classes)
    if proto.dedup_test:
        dedup = dedup_scores(preds, scores, card, task, proto.bootstrap.confidence, proto.f1_labels)
        scores = pd.concat([scores, dedup], ignore_index=True)
    leaked = read_audit(audit, task=task, data_hash=card.data_hash)["leaked_test_rows"] if audit is not None else None
    scores = clean_columns(scores, preds, leaked or [], np.asarray(card.classes), proto)
    if leaked is None:
        scores = scores.assign(value_clean=np.nan, ci_low_clean=np.nan, ci_high_clean=np.nan, n_test_clean=-1)
    return scores, preds
