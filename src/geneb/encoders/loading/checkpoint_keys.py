"""Which checkpoint tensors may be left out of a loaded model, and which may be left unused.

`from_pretrained(..., output_loading_info=True)` reports the tensors the model class expects but the files
lack (`missing_keys`) and the tensors in the files the class has no place for (`unexpected_keys`). Both can
mean the embeddings are not the checkpoint's (docs/footguns.md, "Checkpoint tensors"):

* missing: those weights would be random. Only the pooler head may be missing (never used for hidden states).
* unused: a config that declares fewer layers than the checkpoint holds (trained blocks silently dropped), or
  another model class than the one trained. Only the heads on top of the backbone, which hidden-state
  embeddings never use, may be left unused: `UNUSED_HEAD_PREFIXES` (the masked-LM head `lm_head.` of ESM/NT,
  Caduceus and causal LMs, BERT's pretraining heads `cls.` (`cls.predictions.`, `cls.seq_relationship.`), the
  `pooler.`, the sequence-classification heads `classifier.` and `score.` (Mistral-DNA's fine-tuned
  checkpoints), and the question-answering head `qa_outputs.`), plus buffers older checkpoints saved that are
  recomputed, never trained (`UNUSED_BUFFER_NAMES`: position ids, rotary `inv_freq`, GPT-2's `masked_bias`).
"""

from __future__ import annotations

from collections.abc import Iterable

from geneb.core.errors import WeightsNotLoadedError

#: missing checkpoint tensors under these prefixes are harmless: the pooler head is never used here
IGNORABLE_MISSING_PREFIXES = ("pooler.",)
#: unused checkpoint tensors under these prefixes are heads on top of the backbone (never used for embeddings)
UNUSED_HEAD_PREFIXES = ("lm_head.", "cls.", "pooler.", "classifier.", "score.", "qa_outputs.")
#: unused tensors with one of these last name components are recomputed buffers, not trained weights
UNUSED_BUFFER_NAMES = ("position_ids", "inv_freq", "masked_bias")


def _is_allowed_unused(key: str) -> bool:
    return key.startswith(UNUSED_HEAD_PREFIXES) or key.rsplit(".", 1)[-1] in UNUSED_BUFFER_NAMES


def check_loading_info(
    missing_keys: Iterable[str], unexpected_keys: Iterable[str], *, model: str, model_class: str
) -> list[str]:
    """Raise WeightsNotLoadedError for tensors the class expects that the checkpoint lacks (outside
    IGNORABLE_MISSING_PREFIXES), or for checkpoint tensors the class does not use outside the allow-list
    (UNUSED_HEAD_PREFIXES, UNUSED_BUFFER_NAMES), naming the model, the class, the count and the first tensors.
    Returns the allowed unused tensors (sorted), for the log."""
    missing = sorted(k for k in missing_keys if not k.startswith(IGNORABLE_MISSING_PREFIXES))
    if missing:
        raise WeightsNotLoadedError(
            f"model {model}: {len(missing)} tensors the {model_class} class expects are not in the "
            f"checkpoint (e.g. {missing[:3]}); they would be random. Wrong model class or missing remote code?"
        )
    unexpected = sorted(unexpected_keys)
    unused = [k for k in unexpected if not _is_allowed_unused(k)]
    if unused:
        raise WeightsNotLoadedError(
            f"model {model}: {len(unused)} checkpoint tensors are not used by the {model_class} class "
            f"(e.g. {unused[:5]}); the model would run without them (a config declaring fewer layers than the "
            f"checkpoint holds, or the wrong model class?). Only heads under {list(UNUSED_HEAD_PREFIXES)} may be "
            "left unused (geneb.encoders.loading.checkpoint_keys)"
        )
    return unexpected
