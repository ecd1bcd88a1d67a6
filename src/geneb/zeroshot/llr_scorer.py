"""The `llr` entry of the scorer table (geneb.zeroshot.scorers.SCORERS): a `ZeroShotModel` -> its language model,
loaded once from the same checkpoint as its encoder (`geneb.zeroshot.llr_load.load_language_model`, with the
registry's `lm_head`) and kept on the model for its next task -> `geneb.zeroshot.llr.score_llr`.

Torch-free at import.
"""

from __future__ import annotations

import pandas as pd

from geneb.zeroshot.llr import score_llr
from geneb.zeroshot.llr_load import NoLanguageHead, load_language_model
from geneb.zeroshot.model import ZeroShotModel
from geneb.zeroshot.reference_lms import pretraining_task_of
from geneb.zeroshot.scores import LLR, NotApplicable
from geneb.zeroshot.task import ZeroShotTask


def llr_scores(model: ZeroShotModel, task: ZeroShotTask) -> pd.DataFrame | NotApplicable:
    """The `llr` RowScores of `task` under `model`'s language-model head, or NotApplicable with the reason (no
    head declared, the checkpoint lacks the head's tensors, an encoder handed over without settings)."""
    if model.settings is None:
        return NotApplicable(
            model.name, task.name, LLR, "an encoder handed over directly has no checkpoint to load a head from"
        )
    trained_on = _pretraining_task(model)
    if trained_on is not None and trained_on in {task.name, *task.source_tasks}:
        reason = f"a GENEB-made reference model pretrained on {trained_on}, a source of this task's rows"
        return NotApplicable(model.name, task.name, LLR, reason)
    if LLR not in model.loaded:
        device = str(getattr(model.encoder, "device", "cpu"))
        model.loaded[LLR] = (
            NoLanguageHead(model.name, f"the registry declares lm_head {model.lm_head!r}: no language-model head")
            if model.lm_head == "none"
            else load_language_model(model.settings, head=model.lm_head, device=device)
        )
    lm = model.loaded[LLR]
    if isinstance(lm, NoLanguageHead):
        return NotApplicable(model.name, task.name, LLR, lm.reason)
    return score_llr(lm, task)


def _pretraining_task(model: ZeroShotModel) -> str | None:
    """The task a GENEB-made reference model (a local folder with geneb_pretraining.json) was pretrained on."""
    source = model.settings.source if model.settings is not None else None
    path = getattr(source, "path", None) if source is not None else None
    return pretraining_task_of(path) if path else None
