"""The `llr` zero-shot scorer in one place: which tokens a variant changes, a language model as the scorer
sees it, loading a registry model's language-model head, the batched log-likelihood ratio and its scorer-table entry.

Which tokens a single-base variant changes, for any tokenizer: the token span the LLR scorer masks or sums over.

A tokenizer is seen here only as `_Tokenize`: window text -> `AlleleTokens` (token ids without special tokens and
each token's character span in the window). Built-in views: one token per base, non-overlapping k-mers
(Nucleotide Transformer: left to right, a short tail and any `N` one base per token), overlapping k-mers (DNABERT-1:
one k-mer starting at every base), and a transformers fast tokenizer with offsets (BPE: DNABERT-2, GENA-LM).

The rule (docs/zeroshot.md, "LLR scorer"): tokenise the window with the reference and with the alternative base;
the changed span is what lies between the longest common prefix and the longest common suffix of the two token
lists (same id and same character span), widened to every token whose characters cover the variant. Then

* one base per token: the one token at the variant;
* non-overlapping k-mers: the one k-mer holding the variant (the two k-mers differ only at that base);
* overlapping k-mers: the k tokens covering the variant (every one of them holds the base);
* BPE: usually the one token holding the variant, but the alternative base can merge differently, so the two
  spans may differ in length or boundaries (`VariantTokens.aligned` is False); the scorer then scores each
  allele's span in its own tokenisation.

Torch-free.

A language model as the LLR scorer sees it: a network that returns next-token (causal) or masked-token (masked)
logits, its tokenizer view, its special tokens, and one call that reads log-probabilities at chosen positions.

`LanguageModel` wraps any torch module whose forward takes token ids (B, T) and returns logits (B, T, V) or an
output with `.logits` (a transformers `*ForMaskedLM` / `*ForCausalLM`, a test's closed-form head). Loading a
registry model's head is `geneb.zeroshot.llr`. torch is imported inside the functions that need it, so this
module imports without torch.

Loading a registry model's language-model head for the `llr` scorer, through the embedding adapter's own
loading path (`geneb.encoders.families.hf`, a subclass of the transformers adapter: same remote-code, weights
and config rules), and wrapping it as a `LanguageModel`.

torch and transformers are imported inside the functions (this package stays torch-free at import).

The `llr` zero-shot scorer: a language model's log-likelihood ratio, batched (docs/zeroshot.md, "LLR scorer").

Rules (TraitGym / BEND conventions), each strand scored and the two averaged (the reverse strand is the reverse
complement window with the variant complemented):

* variant, masked LM (masked marginal): mask the changed token span (`geneb.zeroshot.llr`: the token at the
  variant; the k-mer holding it; every overlapping k-mer covering it; for BPE the tokens that differ) and read
  log p(alt tokens) - log p(ref tokens) at the masked positions, summed. When the two alleles' spans do not align
  (BPE merging differently), each allele's span is masked in its own tokenisation and its own tokens' summed
  log-probabilities are compared (two forward passes).
* variant, causal LM: the window's summed next-token log-likelihood with alt minus with ref; tokens before the
  first changed token are identical and predicted from identical context, so only tokens from it on are summed.
  A window's first token has no prediction without a BOS-like prefix token and is not counted.
* score direction (scores.py): larger = stronger effect, so the variant score is
  -(log p(alt) - log p(ref)) = log p(ref) - log p(alt) (`LLR_ref_minus_alt`, nats).
* paired: per-base log-likelihood of a minus that of b (larger = prefers a). Causal: summed next-token
  log-probability of the predicted tokens over the bases they cover; masked: pseudo-log-likelihood (each token
  masked once, every PLL_STRIDE-th token together in one pass, its log-probability summed) over the window's bases.

Every (row, strand, allele) becomes a `Query` (an input and the log-probabilities it adds to its row, with a
weight); identical inputs run once, the rest in length-sorted batches, right-padded where the model allows it
(always for causal models; masked ones with an attention mask), else of equal length only. `score_llr_naive` is the reference: one
forward pass per query and, for causal models, every token of the window summed. Torch-free (the forward pass
is `LanguageModel.log_probs_at`).

The `llr` entry of the scorer table (geneb.zeroshot.scorers.SCORERS): a `ZeroShotModel` -> its language model,
loaded once from the same checkpoint as its encoder (`geneb.zeroshot.llr.load_language_model`, with the
registry's `lm_head`) and kept on the model for its next task -> `geneb.zeroshot.llr.score_llr`.

Torch-free at import.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from geneb.registry.families import FAMILIES, resolved_lm_head, resolved_scoring
from geneb.registry.load import extraction_settings
from geneb.registry.registry import Registry, model_spec
from geneb.registry.spec import ExtractionSettings, SettingsLike
from geneb.zeroshot.reference_lms import pretraining_task_of
from geneb.zeroshot.task import LLR, REQUIRED_COLUMNS, NotApplicable, ZeroShotModel, ZeroShotTask, row_scores

_COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


@dataclass(frozen=True)
class AlleleTokens:
    """One window tokenised: `ids` (n,) without special tokens, `spans` (n,) [start, end) characters per token."""

    ids: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.spans):
            raise ValueError(f"{len(self.ids)} token ids but {len(self.spans)} character spans")

    def covering(self, pos: int) -> list[int]:
        """Indices of the tokens whose characters include window position `pos`."""
        return [i for i, (start, end) in enumerate(self.spans) if start <= pos < end]

    def bases(self, first: int = 0) -> int:
        """Window characters covered by the tokens from index `first` on (the per-base denominator)."""
        return sum(end - start for start, end in self.spans[first:])


_Tokenize = Callable[[str], AlleleTokens]


@dataclass(frozen=True)
class VariantTokens:
    """A variant's two tokenisations and the token spans that change: `ref_span` / `alt_span` are [start, end)
    token indices into `ref.ids` / `alt.ids`. Tokens before `first` are identical in both."""

    ref: AlleleTokens
    alt: AlleleTokens
    ref_span: tuple[int, int]
    alt_span: tuple[int, int]

    @property
    def aligned(self) -> bool:
        """Whether both alleles have the same token count and changed span: masking that span gives one and the
        same input for both, so one forward pass scores both."""
        return self.ref_span == self.alt_span and len(self.ref.ids) == len(self.alt.ids)

    @property
    def first(self) -> int:
        return min(self.ref_span[0], self.alt_span[0])


def _variant_tokens(tokenize: _Tokenize, sequence: str, pos: int, ref: str, alt: str) -> VariantTokens:
    """The changed token spans of the single-base variant `ref`>`alt` at 0-based `pos` of `sequence`.

    Raises ValueError when `sequence[pos]` is not `ref`, when ref equals alt, or when no token covers `pos` in
    either tokenisation (the tokenizer dropped the base: nothing could score it)."""
    if not 0 <= pos < len(sequence) or sequence[pos].upper() != ref.upper():
        got = sequence[pos] if 0 <= pos < len(sequence) else "outside the window"
        raise ValueError(f"variant at {pos}: reference base {ref!r} but the window has {got!r}")
    if ref.upper() == alt.upper() or len(alt) != 1:
        raise ValueError(f"variant at {pos}: alt {alt!r} must be one base different from ref {ref!r}")
    ref_tokens = tokenize(sequence)
    alt_tokens = tokenize(sequence[:pos] + alt + sequence[pos + 1 :])
    ref_cover, alt_cover = ref_tokens.covering(pos), alt_tokens.covering(pos)
    if not ref_cover or not alt_cover:
        raise ValueError(f"variant at {pos}: no token covers the variant's base (the tokenizer dropped it)")
    a = list(zip(ref_tokens.ids, ref_tokens.spans))
    b = list(zip(alt_tokens.ids, alt_tokens.spans))
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    ref_span = (min(prefix, ref_cover[0]), max(len(a) - suffix, ref_cover[-1] + 1))
    alt_span = (min(prefix, alt_cover[0]), max(len(b) - suffix, alt_cover[-1] + 1))
    return VariantTokens(ref_tokens, alt_tokens, ref_span, alt_span)


def _reverse_complement(sequence: str) -> str:
    return sequence.translate(_COMPLEMENT)[::-1]


def _reverse_variant(sequence: str, pos: int, ref: str, alt: str) -> tuple[str, int, str, str]:
    """The same variant on the reverse strand: (reverse-complemented window, its position, ref, alt complemented)."""
    return (
        _reverse_complement(sequence),
        len(sequence) - 1 - pos,
        ref.translate(_COMPLEMENT),
        alt.translate(_COMPLEMENT),
    )


# ---- tokenizer views ----------------------------------------------------------------------------------------


def _overlapping_kmer_tokenize(vocab: Mapping[str, int], k: int) -> _Tokenize:
    """Overlapping k-mers (DNABERT-1): one token per start 0..len-k, token i covers characters [i, i + k)."""

    def tokenize(text: str) -> AlleleTokens:
        upper = text.upper()
        starts = range(len(upper) - k + 1)
        return AlleleTokens(tuple(vocab[upper[i : i + k]] for i in starts), tuple((i, i + k) for i in starts))

    return tokenize


def _hf_tokenize(tokenizer: Any) -> _Tokenize:
    """A transformers fast tokenizer (BPE, WordPiece, ...), no special tokens, spans from its offset mapping.
    Raises ValueError for a slow tokenizer (no offsets: the changed span could not be located)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"tokenizer {type(tokenizer).__name__} gives no character offsets (not a fast tokenizer)")

    def tokenize(text: str) -> AlleleTokens:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return AlleleTokens(tuple(int(i) for i in enc["input_ids"]), tuple(tuple(s) for s in enc["offset_mapping"]))

    return tokenize


_HeadKind = Literal["masked", "causal"]
_HEAD_KINDS: tuple[_HeadKind, ...] = ("masked", "causal")


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
    kind: _HeadKind
    network: Any
    tokenize: _Tokenize
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    mask_id: int | None = None
    max_tokens: int = 1 << 20
    device: str = "cpu"
    pad_id: int = 0
    takes_attention_mask: bool = False
    identity: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in _HEAD_KINDS:
            raise ValueError(f"model {self.name}: head kind {self.kind!r}, expected one of {_HEAD_KINDS}")
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
        (`_HEAD_SPLITS`), the head runs only at the m picked positions (the logits elsewhere are never read: a
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
_HEAD_SPLITS: dict[str, tuple[str, str]] = {
    "BertForMaskedLM": ("bert", "cls"),
    "EsmForMaskedLM": ("esm", "lm_head"),
    "MixtralForCausalLM": ("model", "lm_head"),
    "MistralForCausalLM": ("model", "lm_head"),
    "LlamaForCausalLM": ("model", "lm_head"),
}


def head_split(network: Any) -> tuple[Any, Any] | None:
    """(backbone, head) modules of a `_HEAD_SPLITS` class from transformers itself (remote code of the same
    name may differ, e.g. DNABERT-2's BertForMaskedLM: None), else None."""
    attrs = _HEAD_SPLITS.get(type(network).__name__)
    if attrs is None or not type(network).__module__.startswith("transformers.models."):
        return None
    body, head = (getattr(network, a, None) for a in attrs)
    return (body, head) if body is not None and head is not None else None


#: the adapter entry whose families can load a head (the transformers families: hf-encoder, hf-decoder, ...)
_HF_ENTRY = "geneb.encoders.families.hf:from_settings"


@dataclass(frozen=True)
class NoLanguageHead:
    """A model the `llr` scorer cannot score, and why (`score_llr` turns it into NotApplicable)."""

    model: str
    reason: str


def registry_language_model(
    registry: Registry | Mapping[str, Any],
    model: str,
    *,
    alphabet: Mapping[str, Any] | None = None,
    device: str = "cpu",
) -> LanguageModel | NoLanguageHead:
    """The `llr` scorer's model for registry entry `model`: NoLanguageHead when its `scoring` leaves out llr
    (the reason names its lm_head and where that fact comes from), else `load_language_model` on its extraction
    settings with its `lm_head` (geneb.registry.spec). alphabet: the run's alphabet policy (as for
    extraction). Raises what `extraction_settings` raises (an unknown or unrunnable model)."""
    spec = model_spec(registry, model)
    entry = {"family": spec.family, "lm_head": spec.lm_head, "scoring": spec.scoring}
    head = resolved_lm_head(entry)
    if "llr" not in resolved_scoring(entry):
        source = f" ({spec.lm_head_source})" if spec.lm_head_source else f" (default of family {spec.family!r})"
        return NoLanguageHead(model, f"scoring {list(resolved_scoring(entry))} leaves out llr; lm_head {head}{source}")
    settings = extraction_settings(registry, model, dict(alphabet or {}), device=device)
    return load_language_model(settings, head=head, device=device)


def load_language_model(
    settings: SettingsLike, *, head: str, device: str = "cpu", where: str | None = None
) -> LanguageModel | NoLanguageHead:
    """The registry model's masked or causal language model, ready for `score_llr`.

    settings: the model's resolved extraction settings (`geneb.registry.load.extraction_settings`).
    head: "masked" | "causal" (the registry's `lm_head`). where: load from this folder instead of the source
    (tests). Returns NoLanguageHead (with the reason) for head "none", a family without a transformers head
    loader, a checkpoint whose head tensors are missing (never a randomly initialised head), a masked head
    without a mask token, or a tokenizer whose tokens cannot be placed on the window. Other load errors
    (remote code not allowed, a missing backbone tensor) are raised as the embedding adapter raises them."""
    settings = ExtractionSettings.of(settings)
    model = settings.model
    if head not in _HEAD_KINDS:
        return NoLanguageHead(model, f"the registry declares lm_head {head!r}: no language-model head")
    fam = FAMILIES.get(settings.family)
    if fam is None or fam.entry != _HF_ENTRY:
        return NoLanguageHead(model, f"family {settings.family!r} has no language-model head loader in GENEB")
    from geneb.encoders.families.hf import HFLanguageModelEncoder, NoLanguageHeadError
    from geneb.encoders.protocol import deferred_load_checks

    try:
        with deferred_load_checks():  # the embedding probes (padding, pooling) do not concern the head
            encoder = HFLanguageModelEncoder(settings, head=head, device=device, where=where, progress=False)
    except NoLanguageHeadError as err:
        return NoLanguageHead(model, str(err))
    return _language_model_from_encoder(encoder, head)


def _language_model_from_encoder(encoder: Any, head: _HeadKind) -> LanguageModel | NoLanguageHead:
    """Wrap a loaded head adapter (its network returns `.logits`) as a `LanguageModel`: its tokenizer's view,
    the special tokens the adapter found (`prefix`, `suffix`), the mask token and the usable maximum length."""
    model = str(encoder.model_id)
    tokenizer = encoder.tokenizer
    mask_id = getattr(tokenizer, "mask_token_id", None)
    if head == "masked" and mask_id is None:
        return NoLanguageHead(model, "a masked language model whose tokenizer has no mask token")
    try:
        tokenize = _tokenize_view(tokenizer, encoder.extraction.input_transform)
    except ValueError as err:
        return NoLanguageHead(model, str(err))
    return LanguageModel(
        name=model,
        kind=head,
        network=encoder.model,
        tokenize=tokenize,
        prefix=tuple(encoder.prefix),
        suffix=tuple(encoder.suffix) if head == "masked" else (),
        mask_id=int(mask_id) if mask_id is not None else None,
        max_tokens=int(encoder.max_tokens),
        device=str(encoder.device),
        pad_id=int(encoder.pad_id),
        takes_attention_mask=bool(encoder.uses_attention_mask),
        identity={"model_class": type(encoder.model).__name__, "weights_sha256": encoder.weights_sha256},
    )


def _tokenize_view(tokenizer: Any, transform: Any = None) -> _Tokenize:
    """How the model's tokenizer places its tokens on the window. An `overlapping-kmers` input transform
    (DNABERT-1: the tokenizer reads space-separated k-mers): one k-mer per start, ids from the tokenizer's
    vocabulary. A fast tokenizer: its character offsets. A slow one (NT's EsmTokenizer, HyenaDNA's character
    tokenizer): spans from its token texts, which must spell the window exactly (checked on every call).
    Other input transforms (lowercase, codons) have no LLR rule yet. Raises ValueError when tokens cannot be
    placed."""
    kind = getattr(transform, "kind", None)
    if kind == "overlapping-kmers":
        return _overlapping_kmer_tokenize(_upper_vocab(tokenizer.get_vocab()), int(transform.k))
    if kind is not None:
        raise ValueError(f"input_transform {kind!r}: the llr scorer has no token rule for it")
    if getattr(tokenizer, "is_fast", False):
        return _hf_tokenize(tokenizer)

    def tokenize(text: str) -> AlleleTokens:
        ids = [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
        words = [str(w) for w in tokenizer.convert_ids_to_tokens(ids)]
        if "".join(words).upper() != text.upper():
            raise ValueError(
                f"tokenizer {type(tokenizer).__name__} has no character offsets and its tokens do not spell the "
                f"window ({''.join(words)[:40]!r} for {text[:40]!r}): the variant's token cannot be located"
            )
        spans, start = [], 0
        for word in words:
            spans.append((start, start + len(word)))
            start += len(word)
        return AlleleTokens(tuple(ids), tuple(spans))

    return tokenize


def _upper_vocab(vocab: dict[str, int]) -> dict[str, int]:
    """A k-mer vocabulary keyed by upper-case k-mers (special tokens kept as they are)."""
    return {**vocab, **{w.upper(): i for w, i in vocab.items() if w.isalpha()}}


_DEFAULT_BATCH_SIZE = 32
#: the masked pseudo-log-likelihood of a paired task masks every PLL_STRIDE-th token together, PLL_STRIDE passes per
#: window (each token masked once, 12.5 % of the window hidden per pass, near the 15 % a BERT-style model is
#: pretrained with) instead of one pass per token (Salazar et al. 2020, "Masked Language Model Scoring"), which costs
#: a forward pass per base; a window of at most PLL_STRIDE tokens gets the exact one-token-at-a-time PLL
_PLL_STRIDE = 8


@dataclass(frozen=True)
class Query:
    """One model input and what it adds to its row: score[row] += weight * sum_j log p(targets[j] at cols[j])."""

    row: int
    ids: tuple[int, ...]
    cols: tuple[int, ...]
    targets: tuple[int, ...]
    weight: float


def score_llr(
    model: object, task: ZeroShotTask, *, batch_size: int = _DEFAULT_BATCH_SIZE, strands: int = 2
) -> pd.DataFrame | NotApplicable:
    """The `llr` RowScores of `task` under `model` (batched: `batch_size` inputs per forward pass, `_run_batched`).

    model: a `LanguageModel` (geneb.zeroshot.llr.load_language_model); anything else (an embedding-only
    encoder, a `NoLanguageHead`) gives NotApplicable with its reason. strands: 2 averages both strands, 1 scores
    the given strand only. Returns the RowScores frame (scores in nats; direction of geneb.zeroshot.task).
    Raises ValueError naming the task and every row concerned (the first five shown) for an input longer than
    the model's `max_tokens`, a variant whose base the tokenizer drops or whose ref is not the window's base."""
    if not isinstance(model, LanguageModel):
        name = str(getattr(model, "model", getattr(model, "name", type(model).__name__)))
        reason = str(getattr(model, "reason", f"{type(model).__name__} has no language-model head"))
        return NotApplicable(model=name, task=task.name, scorer=LLR, reason=reason)
    queries = _build_queries(model, task, strands=strands, full_causal=False)
    return row_scores(task, LLR, _run_batched(model, queries, task.n, batch_size=batch_size))


def score_llr_naive(model: LanguageModel, task: ZeroShotTask, *, strands: int = 2) -> pd.DataFrame:
    """The reference for `score_llr`: one forward pass per (row, strand, allele) input, causal windows summed
    over every token (no shortcut). Same scores to float rounding; for the speed comparison and the tests."""
    queries = _build_queries(model, task, strands=strands, full_causal=True)
    scores = np.zeros(task.n)
    for q in queries:
        values = model.log_probs_at(
            np.asarray([q.ids], dtype=np.int64),
            np.zeros(len(q.cols), dtype=np.int64),
            np.asarray(q.cols),
            np.asarray(q.targets),
            full_logits=True,
        )
        scores[q.row] += q.weight * float(values.sum())
    return row_scores(task, LLR, scores)


def _run_batched(model: LanguageModel, queries: list[Query], n_rows: int, *, batch_size: int) -> np.ndarray:
    """Sum every query's weighted log-probabilities into (n_rows,) scores: identical inputs run once, sorted by
    length, `batch_size` per forward pass, padded on the right to the batch's longest where the model allows it
    (`LanguageModel.pads`), else only inputs of one length together (no padding)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    by_input: dict[tuple[int, ...], list[Query]] = defaultdict(list)
    for q in queries:
        by_input[q.ids].append(q)
    inputs = sorted(by_input, key=len, reverse=True)
    if model.pads:
        batches = [inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size)]
    else:
        by_length: dict[int, list[tuple[int, ...]]] = defaultdict(list)
        for ids in inputs:
            by_length[len(ids)].append(ids)
        batches = [group[i : i + batch_size] for group in by_length.values() for i in range(0, len(group), batch_size)]
    scores = np.zeros(n_rows)
    for batch in batches:
        rows: list[int] = []
        cols: list[int] = []
        targets: list[int] = []
        owner: list[int] = []
        weights: list[float] = []
        for b, ids in enumerate(batch):
            for q in by_input[ids]:
                rows += [b] * len(q.cols)
                cols += q.cols
                targets += q.targets
                owner += [q.row] * len(q.cols)
                weights += [q.weight] * len(q.cols)
        lengths = np.asarray([len(ids) for ids in batch])
        padded = np.full((len(batch), int(lengths.max())), model.pad_id, dtype=np.int64)
        for b, ids in enumerate(batch):
            padded[b, : len(ids)] = ids
        values = model.log_probs_at(
            padded,
            np.asarray(rows),
            np.asarray(cols),
            np.asarray(targets),
            lengths=lengths if (lengths != lengths[0]).any() else None,
        )
        np.add.at(scores, np.asarray(owner, dtype=np.int64), np.asarray(weights) * values)
    return scores


def _build_queries(model: LanguageModel, task: ZeroShotTask, *, strands: int, full_causal: bool) -> list[Query]:
    """Every query of `task` (see the module docstring). full_causal: sum a causal window over all its tokens
    (the naive reference) instead of from the first changed token on."""
    if strands not in (1, 2):
        raise ValueError(f"strands must be 1 or 2, got {strands}")
    queries: list[Query] = []
    columns = {c: [str(v) for v in task.rows[c]] for c in REQUIRED_COLUMNS[task.kind]}
    bad: list[str] = []
    # a window shared by several variants (and its reverse strand) is tokenised once: the same text always
    # gives the same tokens
    tokenize = _memo(model.tokenize)
    for row in range(task.n):
        try:
            if task.kind == "variant":
                seq, pos = columns["sequence"][row], int(columns["pos"][row])
                ref, alt = columns["ref"][row], columns["alt"][row]
                views = [(seq, pos, ref, alt), _reverse_variant(seq, pos, ref, alt)][:strands]
                for view in views:
                    queries += _variant_queries(model, tokenize, row, *view, weight=1.0 / strands, full=full_causal)
            else:
                for column, sign in (("sequence_a", 1.0), ("sequence_b", -1.0)):
                    seq = columns[column][row]
                    for text in [seq, _reverse_complement(seq)][:strands]:
                        queries += _likelihood_queries(model, row, tokenize(text), sign / strands)
        except ValueError as err:  # every bad row is reported at once
            bad.append(f"row {row}: {err}")
    if bad:
        raise ValueError(
            f"zero-shot task {task.name}, model {model.name}: {len(bad)} rows cannot be scored: " + "; ".join(bad[:5])
        )
    too_long = sorted({q.row: len(q.ids) for q in queries if len(q.ids) > model.max_tokens}.items())
    if too_long:
        shown = ", ".join(f"row {row}: {tokens} tokens" for row, tokens in too_long[:5])
        raise ValueError(
            f"zero-shot task {task.name}: {len(too_long)} rows need more than model {model.name}'s "
            f"{model.max_tokens} tokens (special tokens included): {shown}; use shorter windows"
        )
    return queries


def _memo(tokenize: _Tokenize) -> _Tokenize:
    cache: dict[str, AlleleTokens] = {}

    def cached(text: str) -> AlleleTokens:
        if text not in cache:
            cache[text] = tokenize(text)
        return cache[text]

    return cached


def _variant_queries(
    model: LanguageModel,
    tokenize: _Tokenize,
    row: int,
    seq: str,
    pos: int,
    ref: str,
    alt: str,
    *,
    weight: float,
    full: bool,
) -> list[Query]:
    """The queries of one strand of a variant: score += weight * (log p(ref) - log p(alt))."""
    vt = _variant_tokens(tokenize, seq, pos, ref, alt)
    if model.kind == "causal":
        first = 0 if full else vt.first
        return [
            *_causal_queries(model, row, vt.ref, first, weight),
            *_causal_queries(model, row, vt.alt, first, -weight),
        ]
    if vt.aligned:
        ids = _masked_input(model, vt.ref, *vt.ref_span)
        cols = tuple(len(model.prefix) + i for i in range(*vt.ref_span))
        ref_ids = vt.ref.ids[slice(*vt.ref_span)]
        alt_ids = vt.alt.ids[slice(*vt.alt_span)]
        return [Query(row, ids, cols, ref_ids, weight), Query(row, ids, cols, alt_ids, -weight)]
    return [
        _masked_span_query(model, row, vt.ref, vt.ref_span, weight),
        _masked_span_query(model, row, vt.alt, vt.alt_span, -weight),
    ]


def _masked_input(model: LanguageModel, tokens: AlleleTokens, start: int, end: int) -> tuple[int, ...]:
    assert model.mask_id is not None  # LanguageModel checks it for a masked head
    body = tokens.ids[:start] + (model.mask_id,) * (end - start) + tokens.ids[end:]
    return model.prefix + body + model.suffix


def _masked_span_query(
    model: LanguageModel, row: int, tokens: AlleleTokens, span: tuple[int, int], weight: float
) -> Query:
    cols = tuple(len(model.prefix) + i for i in range(*span))
    return Query(row, _masked_input(model, tokens, *span), cols, tokens.ids[slice(*span)], weight)


def _causal_queries(model: LanguageModel, row: int, tokens: AlleleTokens, first: int, weight: float) -> list[Query]:
    """score += weight * sum of log p(token t | tokens before t) for t >= first that have a prediction."""
    ids = model.prefix + tokens.ids
    lead = len(model.prefix)
    predicted = list(range(max(first, 1 - lead), len(tokens.ids)))
    if not predicted:
        return []
    cols = tuple(lead + t - 1 for t in predicted)
    return [Query(row, ids, cols, tuple(tokens.ids[t] for t in predicted), weight)]


def _likelihood_queries(model: LanguageModel, row: int, tokens: AlleleTokens, weight: float) -> list[Query]:
    """score += weight * per-base log-likelihood of one window (causal: predicted tokens over their bases;
    masked: strided pseudo-log-likelihood, PLL_STRIDE queries, over all bases)."""
    if model.kind == "causal":
        first = max(0, 1 - len(model.prefix))
        bases = tokens.bases(first)
        if bases == 0:
            raise ValueError("a window needs at least two tokens for a causal likelihood")
        return _causal_queries(model, row, tokens, first, weight / bases)
    bases = tokens.bases()
    if bases == 0:
        raise ValueError("empty window")
    return [
        _strided_mask_query(model, row, tokens, r, weight / bases) for r in range(min(_PLL_STRIDE, len(tokens.ids)))
    ]


def _strided_mask_query(model: LanguageModel, row: int, tokens: AlleleTokens, offset: int, weight: float) -> Query:
    """One pass of the strided pseudo-log-likelihood: every token at offset, offset + PLL_STRIDE, ... masked together
    and each read at its own position."""
    assert model.mask_id is not None  # LanguageModel checks it for a masked head
    picked = range(offset, len(tokens.ids), _PLL_STRIDE)
    body = list(tokens.ids)
    for i in picked:
        body[i] = model.mask_id
    cols = tuple(len(model.prefix) + i for i in picked)
    return Query(row, model.prefix + tuple(body) + model.suffix, cols, tuple(tokens.ids[i] for i in picked), weight)


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
