"""A transformers checkpoint loaded WITH its language-model head, for the zero-shot LLR scorer: the same loading
path as the embedding adapter (`HFEncoder`: remote-code rules, weights-only unpickling, config overrides, the
load report's checks), with `AutoModelForMaskedLM` or `AutoModelForCausalLM` as the class.

A head whose tensors the checkpoint lacks (a fine-tuned classifier, a backbone-only export) would be randomly
initialised by transformers and score noise: the load report's missing tensors outside the backbone
(`base_model_prefix`) raise `NoLanguageHeadError`, never a silent random head. A head tied to the input
embeddings (`tie_word_embeddings`) is not reported missing by transformers and is the model's own design.
"""

from __future__ import annotations

from typing import Any

from geneb.core.errors import WeightsNotLoadedError
from geneb.encoders.families.hf import HFEncoder
from geneb.registry.settings import SettingsLike

#: the transformers auto class of each head kind
AUTO_CLASSES = {"masked": "AutoModelForMaskedLM", "causal": "AutoModelForCausalLM"}


class NoLanguageHeadError(WeightsNotLoadedError):
    """The checkpoint has no trained language-model head for the class asked (its tensors are missing)."""


def head_missing_keys(missing: list[str], base_model_prefix: str) -> list[str]:
    """The missing tensors that belong to the head: those outside the backbone's `base_model_prefix.`."""
    prefix = f"{base_model_prefix}." if base_model_prefix else ""
    return sorted(k for k in missing if not (prefix and k.startswith(prefix)))


class HFLanguageModelEncoder(HFEncoder):
    """`HFEncoder` whose network is the checkpoint's masked or causal language model (logits over the
    vocabulary). head: "masked" | "causal". Raises NoLanguageHeadError when the head's tensors are missing,
    and everything `HFEncoder` raises."""

    def __init__(self, settings: SettingsLike, *, head: str, **kwargs: Any) -> None:
        if head not in AUTO_CLASSES:
            raise ValueError(f"language-model head {head!r}: expected one of {sorted(AUTO_CLASSES)}")
        self.head = head
        self.auto_model_class = AUTO_CLASSES[head]
        super().__init__(settings, **kwargs)

    def _check_loading_info(self, model: Any, info: dict[str, Any]) -> list[str]:
        missing = list(info.get("missing_keys", ()))
        head = head_missing_keys(missing, getattr(model, "base_model_prefix", ""))
        if head:
            raise NoLanguageHeadError(
                f"model {self.model_id}: the checkpoint has no trained {self.head} language-model head for "
                f"{type(model).__name__} ({len(head)} head tensors missing, e.g. {head[:3]}); transformers would "
                "initialise them randomly, so the llr scorer does not apply (a fine-tuned classifier or a "
                "backbone-only export)"
            )
        return super()._check_loading_info(model, info)
