"""Load-time checks of a token-level model: its maximum length, batching and pooling settings, and the probes
every encoder passes before it embeds a row (docs/footguns.md).

* Maximum length: a registry value wins; otherwise the smaller of the tokenizer's and the config's, ignoring
  "not set" sentinels; a maximum taken from the model's files is tried once at load.
* Batching: a model without an attention mask gets equal-length batches only, unless it is causal and padded
  on the right (pads then sit where no real position can see them). Whatever the family, a probe
  sequence embedded alone and beside a longer one must give the same vector, else PaddingVarianceError (left
  padding of learned absolute positions, a mask the model ignores, padding baked into the tokenizer).
* Vocabulary: a plain ACGT probe must not read as UNK.

The checks take the encoder (a `geneb.encoders.engine.tokenmodel.TokenModelEncoder` after `_load`) and use its
tokenizer and forward pass.
"""

from __future__ import annotations

import logging
from typing import Any

from geneb.core.errors import DroppedInputError, MaxLengthError, ModelForwardError, PaddingVarianceError
from geneb.encoders.engine.chunking import transform_input
from geneb.registry.settings import Extraction

log = logging.getLogger(__name__)

#: tokenizers report this (or larger, e.g. 1e30) when no maximum is set: not a real limit
SENTINEL_MAX_LENGTH = 10**9
#: a maximum worked out from the model's files (not set in the registry) is tried once at load, up to this length
MAX_LENGTH_CHECK_TOKENS = 8192
#: relative difference of a pooled vector alone vs batched with a longer one that counts as padding-dependent
#: (fp32 differences are ~1e-6; a padding bug moves vectors by 1e-1 and more), per compute dtype
#: (fp32 noise is ~1e-7; a bf16/fp16 forward pass moves vectors by ~1e-3 with the batch shape alone, so a pad
#: leak below the dtypes' batch-invariance tolerance of geneb.encoders.engine.invariance cannot be told from rounding)
PADDING_CHECK_TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}
#: the padding check's longer probe, in tokens (up to the model's chunk size): effects that grow with the padded
#: width (dynamic RoPE scaling past max_position_embeddings) only show with a long batch mate
PADDING_CHECK_LONG_TOKENS = 1024


def log_load_policy(enc: Any) -> None:
    """Log, once at load, how a token-level encoder will run: lengths, padding, layer, pooling, dtypes."""
    ext = enc.extraction
    log.info(
        "model %s: max_tokens %d (body %d + special %d/%d), padding %s%s, layer %s, pooling %s, "
        "special tokens %s, long_policy %s, compute %s (weights %s%s)",
        enc.model_id,
        enc.max_tokens,
        enc.body_cap,
        len(enc.prefix),
        len(enc.suffix),
        enc.padding_side,
        ("" if enc.uses_attention_mask else " without attention mask")
        + (" (mask not passed: causal, padded on the right)" if enc.elide_causal_mask else "")
        + (", equal-length batches" if enc.bucket_equal_lengths else ""),
        enc.layer_resolved,
        ext.pooling,
        "excluded" if ext.exclude_special_tokens else "included",
        ext.long_policy,
        enc.compute_dtype,
        enc.weights_dtype,
        ", autocast" if enc.autocast else "",
    )


def resolve_max_tokens(
    tokenizer_max: int | None, config_max: int | None, registry_max: int | None, *, model: str
) -> int:
    """The model's usable maximum input length in tokens (special tokens included).

    A registry value wins (a warning is logged where it disagrees with tokenizer or config); otherwise the
    smaller of the tokenizer's `model_max_length` and the config's maximum positions, ignoring the
    tokenizer's "not set" sentinel (>= 1e9; transformers uses int(1e30)). Raises ValueError "no usable max
    length for model X" when nothing usable is known. Source of the pitfall: NT's config said 1024 positions
    while the models were trained on 1000 tokens.
    """
    usable_tok = tokenizer_max if tokenizer_max is not None and tokenizer_max < SENTINEL_MAX_LENGTH else None
    if registry_max is not None:
        for name, value in (("tokenizer", usable_tok), ("config", config_max)):
            if value is not None and value != registry_max:
                log.warning(
                    "model %s: registry max_tokens %d differs from the %s's %d; using the registry",
                    model,
                    registry_max,
                    name,
                    value,
                )
        return int(registry_max)
    candidates = [v for v in (usable_tok, config_max) if v is not None]
    if not candidates:
        raise ValueError(f"no usable max length for model {model}: set extraction.max_tokens in the registry")
    return int(min(candidates))


def batching_policy(ext: Extraction, *, model: str, uses_attention_mask: bool, pad_sensitive: bool) -> tuple[str, bool]:
    """(padding side, equal-length batches?) from the extraction settings and what the model takes. Raises
    ValueError for an unknown padding side or bucket_by_length, and for settings that would pad real
    positions of a model without an attention mask."""
    side = ext.padding_side
    if side not in ("right", "left"):
        raise ValueError(f"model {model}: padding_side must be right or left, got {side!r}")
    causal = bool(ext.causal)
    if not uses_attention_mask and side == "left":
        raise ValueError(
            f"model {model}: left padding without an attention mask would feed pads into "
            "every real position; use padding_side: right"
        )
    # without a mask, only a causal model padded on the right is safe; everything else gets equal lengths.
    # Some masked models are not padding-invariant either (BigBird's block-sparse attention: its blocks
    # depend on the padded length); `bucket_by_length` true, or auto with `pad_sensitive`, covers them.
    bucket = ext.bucket_by_length
    if bucket not in ("auto", True, False):
        raise ValueError(f"model {model}: bucket_by_length must be auto, true or false, got {bucket!r}")
    unsafe = (not uses_attention_mask and not (causal and side == "right")) or pad_sensitive
    if bucket is False and not uses_attention_mask and not (causal and side == "right"):
        raise ValueError(
            f"model {model}: bucket_by_length false for a model without an attention mask "
            "that is not causal would pad real positions"
        )
    return side, (unsafe if bucket == "auto" else bool(bucket))


def check_cls_pooling(ext: Extraction, *, model: str, prefix: list[int]) -> None:
    """cls pooling reads the tokenizer's CLS token: it must be pooled (exclude_special_tokens false) and exist
    (a token before the sequence; a strand token is no CLS). Raises ValueError."""
    if ext.pooling == "cls" and ext.exclude_special_tokens:
        raise ValueError(f"model {model}: pooling cls reads the CLS token; set exclude_special_tokens: false")
    if ext.pooling == "cls" and not prefix:
        raise ValueError(
            f"model {model}: pooling cls, but the tokenizer puts no token before the sequence "
            "(no CLS): the first nucleotide token would be pooled; use mean or last pooling"
        )


def probe_ids(enc: Any, n_tokens: int) -> list[int]:
    """Up to `n_tokens` body token ids of a fixed probe sequence (for the load-time checks), trimmed to the
    entry's `length_multiple` and transformed like a row (`input_transform`)."""
    ext = enc.extraction
    seq = ("ACGTTGCAGGATCCATTGCAAGCTTACG" * (n_tokens // 4 + 8))[: max(24, n_tokens * 8)]
    multiple = int(ext.length_multiple or 1)  # the rows' own length rule (codons: whole codons)
    seq = seq[: len(seq) - len(seq) % multiple]
    ids = enc._tokenize([transform_input(seq, ext.input_transform, model=enc.model_id, row=-1)])[0]
    return list(ids[:n_tokens])


def check_vocabulary(enc: Any) -> None:
    """A plain ACGT probe sequence must tokenize to mostly known tokens: a vocabulary or normalizer that does
    not match the input form (a lowercasing normalizer over an uppercase vocabulary, a word-piece limit
    shorter than a sequence) would otherwise turn every row into the same UNK tokens. Raises
    DroppedInputError when over half the probe's tokens are UNK or there are none."""
    ids = probe_ids(enc, min(enc.body_cap, 256))
    if not ids:
        raise DroppedInputError(f"model {enc.model_id}: the tokenizer turns a plain ACGT sequence into no tokens")
    if enc.unk_id is not None:
        unk = sum(1 for t in ids if t == enc.unk_id)
        if unk * 2 > len(ids):
            raise DroppedInputError(
                f"model {enc.model_id}: the tokenizer reads a plain ACGT probe sequence as UNK ({unk} of {len(ids)} "
                "tokens): its vocabulary or normalizer does not match the model-input form (lowercasing? a word "
                "longer than its limit? a missing input_transform?)"
            )


def check_max_length(enc: Any) -> None:
    """One forward pass at the resolved maximum when it came from the model's files, not the registry: a
    position table shifted by a padding offset (RoBERTa/ESM: 514 positions, 512 usable) or a stale config
    value then fails here, naming the model, instead of on some row mid-run. Skipped above
    MAX_LENGTH_CHECK_TOKENS tokens (cost). Raises MaxLengthError."""
    if enc.max_tokens_from == "registry" or enc.max_tokens > MAX_LENGTH_CHECK_TOKENS:
        return
    body = probe_ids(enc, enc.body_cap)
    if len(body) < enc.body_cap:
        return  # the probe sequence is too short for this tokenizer: nothing to learn
    chunk = enc.chunk(0, body)
    try:
        enc._forward_batch([chunk], [-1])
    except ModelForwardError as err:
        raise MaxLengthError(
            f"model {enc.model_id}: an input of its maximum length {enc.max_tokens} tokens (from the "
            f"{enc.max_tokens_from}) fails in the forward pass ({err.__cause__!r}); its true limit is lower: "
            "set extraction.max_tokens in the registry entry"
        ) from err


def check_padding_invariance(enc: Any) -> None:
    """Embed a short probe alone and in a batch with a longer one; the short one's pooled vector must not
    change beyond PADDING_CHECK_TOLERANCE (relative to its largest value). Catches padding the model does
    not honour, whatever the family: left pads shifting learned absolute positions, a mask it ignores
    or tokenizer padding. Skipped under equal-length batching (no pads ever). Raises PaddingVarianceError."""
    if enc.bucket_equal_lengths:
        return
    multiple = int(enc.extraction.length_multiple or 1)
    long_ids = probe_ids(enc, min(enc.body_cap, PADDING_CHECK_LONG_TOKENS))
    n_short = max(multiple, min(len(long_ids) // 3, 64) // multiple * multiple)
    if len(long_ids) <= n_short:
        return  # the model takes too few tokens for two lengths
    chunks = [enc.chunk(i, ids) for i, ids in enumerate((long_ids[:n_short], long_ids))]
    # float32 weights under autocast: check in float32, where a pad leak is not hidden by rounding
    exact = enc.autocast or enc.compute_dtype == "float32"
    alone, _ = enc._forward_batch(chunks[:1], [-1], force_fp32=enc.autocast)
    batched, _ = enc._forward_batch(chunks, [-1, -2], force_fp32=enc.autocast)
    scale = float(alone.abs().max().clamp_min(1e-6))
    diff = float((alone[0] - batched[0]).abs().max()) / scale
    tol = PADDING_CHECK_TOLERANCE["float32" if exact else enc.compute_dtype]
    if not diff <= tol:
        raise PaddingVarianceError(
            f"model {enc.model_id}: a {n_short}-token probe's embedding changes by {diff:.3g} (relative; limit "
            f"{tol:g}) when batched with a {len(long_ids)}-token one under padding_side {enc.padding_side}"
            f"{'' if enc.uses_attention_mask else ' without an attention mask'}: results would depend on batch "
            f"mates. {padding_fix(enc.padding_side, enc.uses_attention_mask, enc.extraction.causal)}"
        )


def padding_fix(padding_side: str, uses_mask: bool, causal: bool) -> str:
    """The registry setting that fixes a padding variance in the case at hand: left padding -> `padding_side:
    right`; right padding with a mask the model does not honour (a non-transformer wrapped as a transformers model,
    remote code that drops the mask) -> `attention_mask: false` (a bidirectional maskless model then gets only
    equal-length batches) or `bucket_by_length: true`; right padding without a mask on a model declared causal
    that is not -> `causal: false` (equal-length batches)."""
    if padding_side == "left":
        return "Set extraction.padding_side: right (the pads then come after every real position)."
    if uses_mask:
        return (
            "padding_side is already right, so the model does not honour its attention mask (a convolution or other "
            "non-transformer network, or remote code that ignores the mask): set extraction.attention_mask: false "
            "(GENEB then batches only equal-length rows of a non-causal model), or bucket_by_length: true."
        )
    if causal:
        return (
            "padding_side is already right and no mask is passed, so later pads reach earlier positions: the model is "
            "not causal; set extraction.causal: false (equal-length batches), or bucket_by_length: true."
        )
    return "Set extraction.bucket_by_length: true (equal-length batches: no pads at all)."
