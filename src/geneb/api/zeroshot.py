"""`geneb.evaluate_zeroshot`: score one model on zero-shot tasks in process, with metrics and what did not apply.

The scorers are the table of `geneb.zeroshot.scorers` (`SCORERS`: `llr`, `embedding`; or pass a mapping name ->
callable `(ZeroShotModel, ZeroShotTask) -> RowScores frame | NotApplicable | a list of them`). The k-mer Markov baselines (`markov_orders`) need no model:
their chains are fitted once on the declared `background` and score every task that background does not overlap.

The model is resolved as `geneb.evaluate` resolves it (`geneb.api.evaluate.resolve_config` and its model settings),
and loaded once (`geneb.extract.step.load_model`, load-time checks included). Torch is imported only for a torch
family, and only when a scorer needs the model.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.zeroshot.scorers import (
    EMBEDDING,
    PSEUDOCOUNT,
    Background,
    Scorer,
    fit_markov,
    markov_scores,
    score_with,
    scorer_table,
)
from geneb.zeroshot.tables import METRIC_COLUMNS, N_BOOT, score_metrics
from geneb.zeroshot.task import ROW_SCORE_COLUMNS, NotApplicable, ZeroShotModel, ZeroShotTask, check_row_scores

_log = logging.getLogger(__name__)

#: the placeholder task list `resolve_config` validates (the config schema needs one; no supervised task is run)
_CONFIG_TASKS = ["zero-shot"]


@dataclass
class ZeroShotResult:
    """scores: one row per (task, scorer, row): `model, task` + `RowScores` columns (row, scorer, score).
    metrics: `model` + `geneb.zeroshot.tables.METRIC_COLUMNS`, per (task, scorer, metric, group).
    not_applicable: the (model, task, scorer) pairs a scorer declined, with the reason.
    provenance: seed, n_boot, the background's tasks and pseudocount, the model's settings hash."""

    scores: pd.DataFrame
    metrics: pd.DataFrame
    not_applicable: list[NotApplicable]
    provenance: dict[str, Any] = field(default_factory=dict)


def load_zeroshot_model(
    model: Any,
    *,
    name: str | None = None,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> tuple[ZeroShotModel, str]:
    """(the loaded model, its settings hash) of `model`: a `ZeroShotModel` (used as it is; hash ""), a registry
    id of the config's model sheet, a resolved settings mapping (`geneb.registry.load.extraction_settings`),
    (a mapping or `ExtractionSettings`), or a callable / object with `embed` (the `python` family, as `geneb.evaluate` takes). config: whose model
    sheet, alphabet and execution settings apply (None: the schema's defaults). workdir: where the load-time
    checks record goes (default: a new temporary folder). Raises what `geneb.evaluate` raises for the model."""
    from geneb.api.evaluate import _model_settings, resolve_config
    from geneb.extract.step import load_model
    from geneb.registry.load import extraction_hash
    from geneb.registry.spec import ExtractionSettings

    if isinstance(model, ZeroShotModel):
        return model, ""
    if isinstance(model, ExtractionSettings):
        model = model.as_dict()
    is_settings = isinstance(model, Mapping) and "family" in model and "extraction" in model
    model_id = str(model["model"]) if is_settings else (model if isinstance(model, str) else None)
    cfg = resolve_config(config, _CONFIG_TASKS, [model_id or name or "my-model"], {})
    if is_settings:
        settings, encoder = dict(model), None
    else:
        settings, encoder = _model_settings(model, name, cfg)
    settings_hash = extraction_hash(settings)
    typed = ExtractionSettings.of(settings)
    if encoder is None:
        root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="geneb-zeroshot-"))
        execution = cfg["execution"]
        loaded = load_model(
            settings,
            checks_dir=root / "checks" / typed.model / settings_hash,
            device=execution["device"],
            batch_size=execution["batch_size"],
            batch_tokens=execution["batch_tokens"],
            threads=execution["threads"],
            progress=False,
        )
        encoder = loaded.encoder
    return ZeroShotModel(typed.model, encoder, rc=typed.extraction.rc, settings=typed), settings_hash


def evaluate_zeroshot(
    model: Any,
    tasks: Sequence[ZeroShotTask],
    *,
    scorers: Sequence[str] | Mapping[str, Scorer] = (EMBEDDING,),
    markov_orders: Sequence[int] = (),
    background: Background | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    name: str | None = None,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> ZeroShotResult:
    """Score `model` on zero-shot `tasks` with `scorers` and the Markov baselines of `markov_orders`, and their
    metrics (`geneb.zeroshot.tables.score_metrics`, `n_boot` resamples seeded by `seed`).

    model: what `load_zeroshot_model` takes (a registry id, resolved settings, a callable or object with
    `embed`, or a `ZeroShotModel`); it is loaded only when `scorers` is not empty. scorers: names of `SCORERS`, or
    a mapping name -> scorer callable. markov_orders: orders of the k-mer Markov baselines, fitted once on
    `background` (required with them); their rows carry the model's name but do not depend on the model.
    Raises ValueError for an unknown scorer name, Markov orders without a background, or an empty task list;
    BackgroundLeakError when the background includes a scored task or one of its source tasks; and what the
    scorers raise (bad rows named by task and row, encoder errors).
    """
    if not tasks:
        raise ValueError("evaluate_zeroshot: no zero-shot tasks given")
    table = scorer_table(scorers)
    if markov_orders and background is None:
        raise ValueError(
            f"Markov baselines {list(markov_orders)} need a declared background (geneb.zeroshot.scorers.Background)"
        )
    t0 = time.perf_counter()
    loaded, settings_hash = (
        (None, "") if not table else load_zeroshot_model(model, name=name, config=config, workdir=workdir)
    )
    model_name = loaded.name if loaded is not None else str(name or model)
    chains = [fit_markov(background, order) for order in markov_orders] if background is not None else []
    score_frames: list[pd.DataFrame] = []
    metric_frames: list[pd.DataFrame] = []
    declined: list[NotApplicable] = []

    def keep(task: ZeroShotTask, frame: pd.DataFrame) -> None:
        check_row_scores(task, frame)
        score_frames.append(frame[list(ROW_SCORE_COLUMNS)].assign(model=model_name, task=task.name))
        metric_frames.append(score_metrics(task, frame, n_boot=n_boot, seed=seed).assign(model=model_name))

    for task in tasks:
        t_task = time.perf_counter()
        if table:
            assert loaded is not None  # a non-empty table loaded the model
            frames, na = score_with(loaded, task, table)
            declined += na
            for frame in frames:
                keep(task, frame)
        for chain in chains:
            assert background is not None
            keep(task, markov_scores(task, chain, background))
        _log.info("zero-shot task %s: scored in %.1f s", task.name, time.perf_counter() - t_task)
    scores = (
        pd.concat(score_frames, ignore_index=True)
        if score_frames
        else pd.DataFrame(columns=["row", "scorer", "score", "model", "task"])
    )
    metrics = (
        pd.concat(metric_frames, ignore_index=True) if metric_frames else pd.DataFrame(columns=list(METRIC_COLUMNS))
    )
    provenance = {
        "model": model_name,
        "settings_hash": settings_hash,
        "seed": seed,
        "n_boot": n_boot,
        "markov_orders": list(markov_orders),
        "background_tasks": list(background.tasks) if background is not None else [],
        "markov_pseudocount": PSEUDOCOUNT,
        "seconds": round(time.perf_counter() - t0, 3),
        "host": socket.gethostname(),
        "run_id": uuid.uuid4().hex[:12],
    }
    return ZeroShotResult(
        scores=scores[["model", "task", *ROW_SCORE_COLUMNS]],
        metrics=metrics.reindex(columns=["model", *METRIC_COLUMNS]),
        not_applicable=declined,
        provenance=provenance,
    )
