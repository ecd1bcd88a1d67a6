"""GENEB's reference language models for the `llr` scorer: a tiny masked and a tiny causal DNA transformer,
pretrained here, seeded, for a few CPU minutes (docs/zeroshot.md, "Reference language models").

None of the local checkpoints in ../shared/models keeps its language-model head (they are fine-tuned classifiers),
so without these the `llr` path would never run on trained transformer weights. They are GENEB-made, never
committed as weights, and named so everywhere they appear (registry ids `geneb-tiny-mlm`, `geneb-tiny-clm`; their
display names and `pretraining_data` say "GENEB-made"). They are pretrained on the training split of
`PRETRAINING_TASK`, a task no built zero-shot task is made from (`check_pretraining_task` refuses otherwise, and the
llr scorer declines a task built from it).

Torch-free at import (the pretraining, geneb.testing.tiny_lm, imports torch).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from geneb.core.provenance import file_sha256
from geneb.zeroshot.catalogue import CatalogueEntry

#: the real task whose training split the reference models learn from: mouse mRNAs and lncRNAs (median 1.2 kb, so
#: every 520-base window is real sequence), not a source of any built zero-shot task
PRETRAINING_TASK = "prelnc_mouse_lncrna_vs_mrna__resplit"
#: bases per training window: the longest built zero-shot window (512 bases) fits with room to spare
WINDOW = 520
#: optimiser steps and windows per step: the causal model's loss is flat (about 1.34 nats per base) from about
#: step 50 of 32 windows on; 150 steps of 8 windows keep both models to a few CPU minutes
STEPS = 150
BATCH = 8
SEED = 0
#: the registry id of each reference model -> its head kind
REFERENCE_LMS: dict[str, str] = {"geneb-tiny-mlm": "masked", "geneb-tiny-clm": "causal"}
DEFAULT_OUT = Path("resources/reference_lms")
#: the provenance file the pretraining writes into each model folder (geneb.testing.tiny_lm.PROVENANCE_FILE)
PROVENANCE_FILE = "geneb_pretraining.json"


def check_pretraining_task(catalogue: Iterable[CatalogueEntry], task: str = PRETRAINING_TASK) -> None:
    """Raise ValueError when a catalogued zero-shot task is built from `task`: its rows would be scored by models
    that learned from their own source sequences."""
    built_from = sorted(e.task for e in catalogue if task in e.source_tasks)
    if built_from:
        raise ValueError(f"the reference models' pretraining task {task} is a source of zero-shot task(s) {built_from}")


def pretraining_task_of(folder: str | Path) -> str | None:
    """The task a GENEB-made model folder was pretrained on (its geneb_pretraining.json), None for any other model."""
    record = Path(folder) / PROVENANCE_FILE
    if not record.is_file():
        return None
    task = json.loads(record.read_text()).get("data", {}).get("task")
    return str(task) if task else None


def _wanted(kind: str, train: Path) -> dict[str, Any]:
    from geneb.testing.tiny_lm import TinyLMSettings

    return {
        "settings": asdict(TinyLMSettings(kind=kind, window=WINDOW, steps=STEPS, batch=BATCH, seed=SEED)),
        "data": {"task": PRETRAINING_TASK, "train_sha256": file_sha256(train, 64)},
    }


def build_reference_lms(task_source: str | Path, out: str | Path = DEFAULT_OUT) -> list[tuple[str, Path, str]]:
    """Pretrain each reference model into `out`/<registry id>/ from the mirror folder `task_source`, unless the
    folder already holds one made with the same settings from the same training file. Each model is written to a
    temporary folder and renamed into place, so a killed run leaves no half-written model. Returns (id, folder,
    "built" | "kept") per model. Raises FileNotFoundError naming the training split when the mirror lacks it."""
    import pandas as pd

    from geneb.testing.tiny_lm import TinyLMSettings, pretrain_tiny_lm

    train = Path(task_source) / PRETRAINING_TASK / "train.csv.gz"
    if not train.is_file():
        raise FileNotFoundError(f"reference language models: no training split {train} (task {PRETRAINING_TASK})")
    done: list[tuple[str, Path, str]] = []
    sequences: list[str] | None = None  # read once, and only when a model is built
    for name, kind in REFERENCE_LMS.items():
        folder = Path(out) / name
        wanted = _wanted(kind, train)
        record = folder / PROVENANCE_FILE
        if record.is_file():
            found = json.loads(record.read_text())
            if {k: found.get(k) for k in wanted} == wanted:
                done.append((name, folder, "kept"))
                continue
        if sequences is None:
            sequences = pd.read_csv(train)["sequence"].astype(str).tolist()
        staging = folder.with_name(f".{name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        pretrain_tiny_lm(staging, sequences, TinyLMSettings(**wanted["settings"]), data=wanted["data"])
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        done.append((name, folder, "built"))
    return done
