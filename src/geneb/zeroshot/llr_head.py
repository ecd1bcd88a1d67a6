"""A language model as the LLR scorer sees it: a network that returns next-token (causal) or masked-token (masked)
logits, its tokenizer view, its special tokens, and one call that reads log-probabilities at chosen positions.

`LanguageModel` wraps any torch module whose forward takes token ids (B, T) and returns logits (B, T, V) or an
output with `.logits` (a transformers `*ForMaskedLM` / `*ForCausalLM`, a test's closed-form head). Loading a
registry model's head is `geneb.zeroshot.llr_load`. torch is imported inside the functions that need it, so this
module imports without torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from geneb.zeroshot.llr_tokens import Tokenize

HeadKind = Literal["masked", "causal"]
HEAD_KINDS: tuple[HeadKind, ...] = ("masked", "causal")


@dataclass(frozen=True)
class LanguageModel:
    """A network with a language-model head, ready to score.

    kind: "masked" (logits at position t score the token at t, given the input with t masked) or "causal"
    (logits at t score the token at t + 1). tokenize: the window -> token ids and spans, no special tokens.
    prefix / suffix: special token ids put around every window (CLS/SEP, BOS); a causal model gets only the
    prefix. mask_id: the mask token (masked models; None for causal). max_tokens: the longest input, specials
    included. pad_id / takes_attention_mask: inputs of different lengths share a forward pass padded on the
    right with `pad_id`: always for a causal model (a real position never sees a later pad), for a masked
    model only with an attention mask (`takes_attention_mask`; without one, only equal lengths share a pass).
    identity: what defines the scores beyond the registry entry (class, weights hash), recorded.
    """

    name: str
    kind: HeadKind
    network: Any
    tokenize: Tokenize
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    mask_id: int | None = None
    max_tokens: int = 1 << 20
    device: str = "cpu"
    pad_id: int = 0
    takes_attention_mask: bool = False
    identity: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in HEAD_KINDS:
            raise ValueError(f"model {self.name}: head kind {self.kind!r}, expected one of {HEAD_KINDS}")
        if self.kind == "masked" and self.mask_id is None:
            raise ValueError(f"model {self.name}: a masked language model needs its mask token id")

    @property
    def pads(self) -> bool:
        """Whether inputs of different lengths may share a forward pass (right padding)."""
        return self.kind == "causal" or self.takes_attention_mask

    def log_probs_at(
        self,
        ids: np.ndarray,
        rows: np.ndarray,
        cols: np.ndarray,
        targets: np.ndarray,
        lengths: np.ndarray | None = None,
        *,
        full_logits: bool = False,
    ) -> np.ndarray:
        """One forward pass over `ids` (B, T) int64, right-padded when `lengths` (B,) real lengths are given
        (a masked model then gets the attention mask); returns (m,) float64 log-softmax values: entry j is
        log p(targets[j]) from the logits at (rows[j], cols[j]), a real position. The log-softmax runs in the
        logits' dtype (half precision promoted to float32), returned as float64. Raises ValueError for non-finite log-probs.

        For a transformers class whose head is a plain function of the backbone's last hidden state
        (`HEAD_SPLITS`), the head runs only at the m picked positions (the logits elsewhere are never read: a
        vocabulary of 4096 makes the head most of a small model's work); full_logits: the whole network's forward
        at every position instead (the naive reference)."""
        import torch

        with torch.inference_mode():
            tensor = torch.as_tensor(ids, dtype=torch.long, device=self.device)
            kwargs: dict[str, Any] = {}
            if lengths is not None and self.kind == "masked":
                width = torch.arange(tensor.shape[1], device=self.device)
                kwargs["attention_mask"] = (
                    width[None, :] < torch.as_tensor(lengths, device=self.device)[:, None]
                ).long()
            # a position read for several targets (a causal ref window that several variants share, a masked
            # input read for both alleles) gets its logits and log-softmax once
            flat = np.asarray(rows, dtype=np.int64) * ids.shape[1] + np.asarray(cols, dtype=np.int64)
            positions, inverse = np.unique(flat, return_inverse=True) if not full_logits else (flat, None)
            at = (
                torch.as_tensor(positions // ids.shape[1], device=self.device),
                torch.as_tensor(positions % ids.shape[1], device=self.device),
            )
            split = None if full_logits else head_split(self.network)
            if split is not None:
                body, head = split
                picked = head(body(input_ids=tensor, **kwargs)[0][at])
            else:
                out = self.network(input_ids=tensor, **kwargs) if kwargs else self.network(tensor)
                picked = (out.logits if hasattr(out, "logits") else out)[at]
            if picked.dtype in (torch.float16, torch.bfloat16):
                picked = picked.float()
            logp = torch.log_softmax(picked, dim=-1)
            which = torch.as_tensor(inverse.reshape(-1) if inverse is not None else np.arange(len(flat)))
            values = logp[which.to(self.device), torch.as_tensor(targets, device=self.device)].double()
        result: np.ndarray = values.cpu().numpy()
        if not np.isfinite(result).all():
            raise ValueError(f"model {self.name}: non-finite log-probabilities from its head")
        return result


#: transformers LM classes whose logits are `head(backbone(...)[0])` with no other step (no logit scaling or
#: soft-capping), so the head may run at the picked positions only: class name -> (backbone, head) attributes
HEAD_SPLITS: dict[str, tuple[str, str]] = {
    "BertForMaskedLM": ("bert", "cls"),
    "EsmForMaskedLM": ("esm", "lm_head"),
    "MixtralForCausalLM": ("model", "lm_head"),
    "MistralForCausalLM": ("model", "lm_head"),
    "LlamaForCausalLM": ("model", "lm_head"),
}


def head_split(network: Any) -> tuple[Any, Any] | None:
    """(backbone, head) modules of a `HEAD_SPLITS` class from transformers itself (remote code of the same
    name may differ, e.g. DNABERT-2's BertForMaskedLM: None), else None."""
    attrs = HEAD_SPLITS.get(type(network).__name__)
    if attrs is None or not type(network).__module__.startswith("transformers.models."):
        return None
    body, head = (getattr(network, a, None) for a in attrs)
    return (body, head) if body is not None and head is not None else None
