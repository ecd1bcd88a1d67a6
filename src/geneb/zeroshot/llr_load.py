"""Loading a registry model's language-model head for the `llr` scorer, through the embedding adapter's own
loading path (`geneb.encoders.families.hf`, a subclass of the transformers adapter: same remote-code, weights
and config rules), and wrapping it as a `LanguageModel`.

torch and transformers are imported inside the functions (this package stays torch-free at import).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from geneb.registry.families import FAMILIES, resolved_lm_head, resolved_scoring
from geneb.registry.load import extraction_settings
from geneb.registry.registry import Registry, model_spec
from geneb.registry.spec import ExtractionSettings, SettingsLike
from geneb.zeroshot.llr_head import HEAD_KINDS, HeadKind, LanguageModel
from geneb.zeroshot.llr_tokens import AlleleTokens, Tokenize, hf_tokenize, overlapping_kmer_tokenize

#: the adapter entry whose families can load a head (the transformers families: hf-encoder, hf-decoder, ...)
HF_ENTRY = "geneb.encoders.families.hf:from_settings"


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
    if head not in HEAD_KINDS:
        return NoLanguageHead(model, f"the registry declares lm_head {head!r}: no language-model head")
    fam = FAMILIES.get(settings.family)
    if fam is None or fam.entry != HF_ENTRY:
        return NoLanguageHead(model, f"family {settings.family!r} has no language-model head loader in GENEB")
    from geneb.encoders.families.hf import HFLanguageModelEncoder, NoLanguageHeadError
    from geneb.encoders.protocol import deferred_load_checks

    try:
        with deferred_load_checks():  # the embedding probes (padding, pooling) do not concern the head
            encoder = HFLanguageModelEncoder(settings, head=head, device=device, where=where, progress=False)
    except NoLanguageHeadError as err:
        return NoLanguageHead(model, str(err))
    return language_model_from_encoder(encoder, head)


def language_model_from_encoder(encoder: Any, head: HeadKind) -> LanguageModel | NoLanguageHead:
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


def _tokenize_view(tokenizer: Any, transform: Any = None) -> Tokenize:
    """How the model's tokenizer places its tokens on the window. An `overlapping-kmers` input transform
    (DNABERT-1: the tokenizer reads space-separated k-mers): one k-mer per start, ids from the tokenizer's
    vocabulary. A fast tokenizer: its character offsets. A slow one (NT's EsmTokenizer, HyenaDNA's character
    tokenizer): spans from its token texts, which must spell the window exactly (checked on every call).
    Other input transforms (lowercase, codons) have no LLR rule yet. Raises ValueError when tokens cannot be
    placed."""
    kind = getattr(transform, "kind", None)
    if kind == "overlapping-kmers":
        return overlapping_kmer_tokenize(_upper_vocab(tokenizer.get_vocab()), int(transform.k))
    if kind is not None:
        raise ValueError(f"input_transform {kind!r}: the llr scorer has no token rule for it")
    if getattr(tokenizer, "is_fast", False):
        return hf_tokenize(tokenizer)

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
