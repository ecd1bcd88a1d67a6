"""Checks of a token model's output and tokenizer: guards before the embedding cache, letters a tokenizer
drops, and the load-time checks.

Checks that stand between a model's raw output and the embedding cache.

Each guard turns a known silent failure into an error that names the model (docs/footguns.md):

* `get_layer`: one way to take a layer out of any model output (ModelOutput, dict, tuple).
* `check_token_ids`: every token id must index the embedding table (a padded table is normal).
* `check_pooled_width`: the pooled width must be the hidden size, never the vocabulary size (logits).
* `forward_error`: an error of the model's own forward pass, re-raised naming the model, the batch shape and
  the rows.
* `hidden_modules`: modules a remote code would misuse (triton on CPU) are made unimportable while it
  loads (the installed-package checks are `geneb.registry.families`).

torch is imported inside the functions that need it, so the registry can use the version guard without it.

Letters a tokenizer loses: dropped without a token or read as UNK.

A vocabulary without UNK deletes letters it cannot spell (N, IUPAC codes), so the embedding would be of
another sequence: an error naming the row. A vocabulary with UNK keeps their place: the UNK tokens are
counted (a warning, and `n_unknown_tokens` in the file), and a row that is nothing but UNK is an error.

Load-time checks of a token-level model: its maximum length, batching and pooling settings, and the probes
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

import contextlib
import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from geneb.core.errors import (
    DroppedInputError,
    LayerNotExposedError,
    LooksLikeLogitsError,
    MaxLengthError,
    ModelForwardError,
    PaddingVarianceError,
    TokenIdRangeError,
    UnknownTokenError,
)
from geneb.encoders.engine.chunking import transform_input
from geneb.registry.spec import Extraction


def forward_error(
    err: BaseException, *, model: str, shape: tuple[int, ...], rows: list[int] | None
) -> ModelForwardError:
    """The ModelForwardError to raise (from `err`) when a forward pass on a (B, T) batch of `shape` failed:
    it names the model, the batch shape and the rows (at most 5; a row's chunks share its id), or says that
    the batch was the load-time check's probe sequences (rows all negative)."""
    named = list(dict.fromkeys(r for r in rows or [] if r >= 0))
    shown = (
        "the load-time check's probe sequences"
        if rows and not named  # see token_checks.check_padding_invariance
        else "rows " + (", ".join(map(str, named[:5])) or "?") + (" ..." if len(named) > 5 else "")
    )
    return ModelForwardError(
        f"model {model}: the forward pass failed on a batch of {shape[0]} x {shape[1]} tokens "
        f"({shown}): {type(err).__name__}: {err}",
        rows=named,
    )


def _is_states(x: Any) -> bool:
    """A tuple/list of 3-D tensors: the per-layer hidden-state convention of transformers."""
    return isinstance(x, (tuple, list)) and len(x) > 0 and all(getattr(t, "dim", lambda: 0)() == 3 for t in x)


def get_layer(out: Any, layer: int, *, model: str, n_layers: int | None = None) -> Any:
    """The hidden states (B, T, d) of `layer` from a model output of any common shape.

    out: a transformers ModelOutput, a dict (keys `last_hidden_state`, `hidden_states`), a tuple/list whose
    first element is the last hidden state (remote code that ignores `return_dict`; an element that is a
    tuple of 3-D tensors is taken as the per-layer states), or a bare (B, T, d) tensor.
    layer: -1 = the model's final output (`last_hidden_state`; the paper's "last hidden state"); any other
    index selects from the per-layer states (0 = embeddings, as in transformers).
    n_layers: the model's number of blocks (config), when known: an index other than -1 then needs exactly
    n_layers + 1 per-layer states (the embeddings, then each block), else the index would name another layer
    than the docs say (remote code that leaves out the embedding output) and LayerNotExposedError is raised;
    n_layers + 2 states whose last is the final output itself (HyenaDNA appends its final norm's output) count
    as n_layers + 1, the last block's pre-norm output left out.
    Raises LayerNotExposedError "model X does not expose intermediate layers" when an index other than -1 is
    asked of an output without per-layer states (never silently the last layer), and ValueError when no
    (B, T, d) tensor is found.
    """
    last, states = None, None
    if isinstance(out, Mapping) or hasattr(out, "keys"):
        last = out.get("last_hidden_state") if hasattr(out, "get") else None
        states = out.get("hidden_states") if hasattr(out, "get") else None
        if last is None and states is None:
            raise ValueError(
                f"model {model}: output has neither last_hidden_state nor hidden_states ({list(out.keys())})"
            )
    elif isinstance(out, (tuple, list)):
        if not out or getattr(out[0], "dim", lambda: 0)() != 3:
            raise ValueError(f"model {model}: the first element of the output tuple is not a (B, T, d) tensor")
        last = out[0]
        states = next((x for x in out[1:] if _is_states(x)), None)
    elif getattr(out, "dim", lambda: 0)() == 3:
        last = out
    else:
        raise ValueError(f"model {model}: cannot find hidden states in an output of type {type(out).__name__}")
    if layer == -1 and last is not None:
        return last
    if states is None:  # never for layer -1: an output without a last state has per-layer states (above)
        raise LayerNotExposedError(
            f"model {model} does not expose intermediate layers (its output has no per-layer hidden states); "
            f"layer {layer} cannot be extracted, use layer: -1 or a module name"
        )
    if layer == -1:
        return states[-1]
    if n_layers is not None and len(states) == n_layers + 2 and last is not None and states[-1] is last:
        # remote code that appends the final norm's output after the last block's (HyenaDNA): index n is the
        # normed final state, as in transformers, and the last block's pre-norm output is left out
        states = [*states[:-2], states[-1]]
    if n_layers is not None and len(states) != n_layers + 1:
        raise LayerNotExposedError(
            f"model {model}: {len(states)} per-layer hidden states for {n_layers} layers (expected {n_layers + 1}: the "
            f"embeddings, then each layer), so index {layer} is ambiguous; use layer: -1 or a module name"
        )
    if not -len(states) <= layer < len(states):
        raise LayerNotExposedError(f"model {model}: layer {layer} out of range ({len(states)} hidden states)")
    return states[layer]


def check_token_ids(ids: Any, num_embeddings: int | None, *, model: str, rows: list[int] | None = None) -> None:
    """Raise TokenIdRangeError when any id in `ids` (B, T) is negative or >= `num_embeddings` (the rows of the
    input embedding table). A table larger than the tokenizer's vocabulary (padded to a multiple of 8) is
    normal and passes. num_embeddings None (no embedding table exposed) skips the check."""
    if num_embeddings is None:
        return
    hi, lo = int(ids.max()), int(ids.min())
    if hi >= num_embeddings or lo < 0:
        bad = hi if hi >= num_embeddings else lo
        raise TokenIdRangeError(
            f"model {model}: token id {bad} is outside the embedding table (0..{num_embeddings - 1}); "
            "the tokenizer does not match the checkpoint",
            rows=rows,
        )


def check_pooled_width(
    width: int,
    *,
    model: str,
    hidden_size: int | None,
    vocab_size: int | None,
    expected: int | None = None,
    num_embeddings: int | None = None,
) -> None:
    """Check the pooled width `width` (d) of a model's embedding.

    expected: the registry's `embedding_dim` (wins when set; e.g. Caduceus-PS is 2 x d_model). hidden_size /
    vocab_size: from the model config; num_embeddings: rows of the input embedding table (a vocabulary padded
    to a multiple of 8, so logits are that wide, not vocab_size). Raises LooksLikeLogitsError when width is
    either vocabulary size and not the expected/hidden size, or is one of them while no hidden size is known
    (a generation head was pooled, e.g. Evo's unembedding left in place), and ValueError when width differs
    from the expected or hidden size.
    """
    vocab = {v for v in (vocab_size, num_embeddings) if v is not None}
    if width in vocab and width != (expected or hidden_size):
        raise LooksLikeLogitsError(
            f"model {model}: pooled width {width} equals the vocabulary size; this looks like logits, not hidden "
            "states (remove the output head, or pick a hidden layer)"
        )
    want = expected if expected is not None else hidden_size
    if want is not None and width != want:
        raise ValueError(
            f"model {model}: pooled width {width} differs from the expected width {want} "
            f"({'registry embedding_dim' if expected is not None else 'config hidden size'})"
        )


@contextlib.contextmanager
def hidden_modules(names: list[str] | tuple[str, ...]) -> Iterator[None]:
    """Make the top-level modules `names` unimportable inside the block (ImportError on import), then restore
    sys.modules. Used while remote code loads so it takes its pure-PyTorch path (e.g. DNABERT-2's code picks
    a Triton kernel whenever `import triton` works)."""
    saved: dict[str, Any] = {}
    for name in names:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            saved[key] = sys.modules.pop(key)
        sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def import_modules(names: list[str] | tuple[str, ...]) -> None:
    """Import `names` for their side effects (e.g. `gpn.model` registers GPN's classes with AutoModel)."""
    for name in names:
        importlib.import_module(name)


def nonfinite_rows(hidden: Any, attn: Any) -> list[int]:
    """Indices of the batch rows with a NaN/inf hidden state (B, T, d) at a real position of `attn` (B, T)
    (fp16 overflow); pads are not looked at."""
    real = attn.to(hidden.device).bool()
    finite = hidden.isfinite().all(dim=-1) | ~real
    return [int(b) for b in (~finite.all(dim=1)).nonzero().flatten()]


_log = logging.getLogger(__name__)


def check_dropped(
    texts: list[str],
    rows: list[int],
    *,
    model: str,
    offsets: list[list[tuple[int, int]]] | None,
    unk_id: int | None,
    encoded: list[list[int]] | None,
    token_texts: Callable[[list[int]], list[str] | None],
) -> None:
    """Raise DroppedInputError for the first row with a non-whitespace character that no token stands for
    (a vocabulary without UNK deletes letters it cannot spell, e.g. N or IUPAC codes).

    Needs the character spans of the tokenizer call (`offsets`, set by fast tokenizers); without them the
    tokens' text is counted instead (`_check_dropped_by_token_text`). With an UNK token in the vocabulary the
    spans are exact, and a run of one repeated letter whose neighbour (the same letter) has a token is a run
    the tokenizer's normalizer collapsed on purpose (GENA-LM maps an N run to one token), not a
    drop. Without one, a model that drops letters reports the spans as if they had never been there (the gap
    shows at the end of the row), so any uncovered letter is an error and no position is claimed."""
    if offsets is None:
        _check_dropped_by_token_text(texts, rows, model=model, unk_id=unk_id, encoded=encoded, token_texts=token_texts)
        return
    exact_spans = unk_id is not None
    for i, (text, spans) in enumerate(zip(texts, offsets)):
        covered = bytearray(len(text))
        for a, b in spans:
            covered[a:b] = b"\x01" * (b - a)
        gaps = []
        j = covered.find(0)
        while j != -1:
            end = covered.find(1, j)
            end = len(text) if end == -1 else end
            if text[j:end].strip() and not (exact_spans and _collapsed_run(text, covered, j, end)):
                gaps.append((j, end))
            j = covered.find(0, end)
        if gaps:
            n = sum(len(text[a:b].strip()) for a, b in gaps)
            k = gaps[0][0] + next(m for m, ch in enumerate(text[gaps[0][0] : gaps[0][1]]) if not ch.isspace())
            where = (
                f"the first: {text[k]!r} at position {k}"
                if exact_spans
                else "its vocabulary has no UNK token, so its character spans cannot place them"
            )
            raise DroppedInputError(
                f"model {model}, row {rows[i]}: {n} letters have no token ({where}; a tokenizer drops "
                "what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                "use a task without such letters or a model whose vocabulary spells them",
                rows=[rows[i]],
            )


def _check_dropped_by_token_text(
    texts: list[str],
    rows: list[int],
    *,
    model: str,
    unk_id: int | None,
    encoded: list[list[int]] | None,
    token_texts: Callable[[list[int]], list[str] | None],
) -> None:
    """The dropped-letter check for tokenizers without character spans (slow, Python tokenizers): in a row
    with no UNK token, the tokens' letters (word-piece markers `##`, `▁`, `Ġ` removed) must add up to the
    row's letters; fewer means letters were skipped. Rows with an UNK token cannot be counted (one UNK may
    stand for several letters) and rely on the UNK count instead. `token_texts(ids)` gives each token's text,
    or None when the tokenizer cannot say (then nothing is checked)."""
    if encoded is None:
        return
    for i, (text, ids) in enumerate(zip(texts, encoded)):
        if unk_id is not None and unk_id in ids:
            continue
        pieces = token_texts(list(ids))
        if pieces is None:
            return
        have = sum(len(t.replace("##", "").replace("\u2581", "").replace("\u0120", "").strip()) for t in pieces)
        want = sum(1 for ch in text if not ch.isspace())
        if have < want:
            raise DroppedInputError(
                f"model {model}, row {rows[i]}: its tokens spell {have} of its {want} letters (the tokenizer "
                "skips what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                "use a task without such letters or a model whose vocabulary spells them",
                rows=[rows[i]],
            )


#: what the messages call letters they cannot name
_OUTSIDE = "letters outside the model's vocabulary"
#: the IUPAC ambiguity codes besides N (docs/alphabet.md)
_IUPAC_CODES = frozenset("RYSWKMBDHV")


def _unknown_letters(texts: Sequence[str] | None) -> str:
    """What the letters of `texts` (the rows with an UNK token) are, beyond A/C/G/T, in words: "N" (plain N is no
    IUPAC code of interest: an unknown base), "IUPAC codes R, Y" (the ambiguity codes), both, or, when the rows hold
    neither, "letters or k-mers outside the model's vocabulary" (a partial k-mer, a letter case the vocabulary lacks)."""
    letters = {ch for text in texts or () for ch in text.upper()} - set("ACGT")
    parts = (["N"] if "N" in letters else []) + (
        [f"IUPAC codes {', '.join(sorted(letters & _IUPAC_CODES))}"] if letters & _IUPAC_CODES else []
    )
    return " and ".join(parts) if parts else "letters or k-mers outside the model's vocabulary"


def count_unknown(
    encoded: Sequence[Sequence[int]],
    rows: list[int],
    *,
    model: str,
    unk_id: int | None,
    policy: str = "count",
    texts: Sequence[str] | None = None,
) -> tuple[int, int]:
    """(rows with an unknown token, unknown tokens) of one tokenizer call; (0, 0) without an UNK id. Logs a
    warning when there are any (`policy` count), or raises UnknownTokenError naming the count and the first
    rows (`policy` error); raises DroppedInputError naming every row of the call whose every token is UNK
    (nothing of the sequence would reach the model), all at once, with the row ids in its `rows`. texts: the rows'
    model-input texts, to name the letters that became UNK (N, IUPAC codes: `_unknown_letters`)."""
    if unk_id is None:
        return 0, 0
    unk = [sum(1 for t in ids if t == unk_id) for ids in encoded]
    counts = (sum(1 for u in unk if u), sum(unk))
    blind = [i for i, (u, ids) in enumerate(zip(unk, encoded)) if ids and u == len(ids)]
    if blind:  # every such row of the call at once, so one run names them all (e.g. all-N rows for a BPE vocabulary)
        named = [rows[i] for i in blind]
        shown = ", ".join(map(str, named[:50])) + (f" ... ({len(named) - 50} more)" if len(named) > 50 else "")
        raise DroppedInputError(
            f"model {model}, {len(named)} row(s) ({shown}): every token of each is UNK, so nothing of the "
            "sequence reaches the model (an all-N row for a vocabulary without N, a vocabulary that cannot spell "
            "it, a lowercasing normalizer, a word longer than the tokenizer's limit?)",
            rows=named,
        )
    seen = _unknown_letters([t for t, u in zip(texts, unk) if u]) if texts is not None else None
    if counts[0] and policy == "error":
        refuse_unknown(unk, rows, model=model, letters=seen)
    if counts[0]:
        first = next(i for i, u in enumerate(unk) if u)
        _log.warning(
            "model %s: %d unknown-token ids in %d rows (first: row %s); %s reach it as UNK",
            model,
            counts[1],
            counts[0],
            rows[first],
            seen or _OUTSIDE,
        )
    return counts


def refuse_unknown(
    per_row: Sequence[int],
    rows: list[int],
    *,
    model: str,
    what: str = "unknown-token ids",
    letters: str | None = None,
) -> None:
    """Raise UnknownTokenError (`unk_policy: error`) for the rows with a nonzero count in `per_row`, naming the
    model, the total, the first rows and the letters (`_unknown_letters`; default: letters outside the model's
    vocabulary); return when there are none."""
    named = [rows[i] for i, u in enumerate(per_row) if u]
    if not named:
        return
    raise UnknownTokenError(
        f"model {model}: {sum(per_row)} {what} in {len(named)} rows (rows "
        + ", ".join(map(str, named[:5]))
        + (" ..." if len(named) > 5 else "")
        + f"); {letters or _OUTSIDE} would reach it as UNK, refused under "
        "unk_policy: error (use a task without them, or unk_policy: count)",
        rows=named,
    )


def _collapsed_run(text: str, covered: bytearray, start: int, end: int) -> bool:
    """Whether the uncovered span text[start:end] is one repeated letter next to a covered copy of it."""
    letters = set(text[start:end])
    if len(letters) != 1:
        return False
    letter = letters.pop()
    after = end < len(text) and covered[end] and text[end] == letter
    before = start > 0 and covered[start - 1] and text[start - 1] == letter
    return bool(after or before)


_log = logging.getLogger(__name__)

#: tokenizers report this (or larger, e.g. 1e30) when no maximum is set: not a real limit
SENTINEL_MAX_LENGTH = 10**9
#: a maximum worked out from the model's files (not set in the registry) is tried once at load, up to this length
_MAX_LENGTH_CHECK_TOKENS = 8192
#: relative difference of a pooled vector alone vs batched with a longer one that counts as padding-dependent
#: (fp32 differences are ~1e-6; a padding bug moves vectors by 1e-1 and more), per compute dtype
#: (fp32 noise is ~1e-7; a bf16/fp16 forward pass moves vectors by ~1e-3 with the batch shape alone, so a pad
#: leak below the dtypes' batch-invariance tolerance of geneb.encoders.engine.invariance cannot be told from rounding)
_PADDING_CHECK_TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}
#: the padding check's longer probe, in tokens (up to the model's chunk size): effects that grow with the padded
#: width (dynamic RoPE scaling past max_position_embeddings) only show with a long batch mate
_PADDING_CHECK_LONG_TOKENS = 1024


def log_load_policy(enc: Any) -> None:
    """Log, once at load, how a token-level encoder will run: lengths, padding, layer, pooling, dtypes."""
    ext = enc.extraction
    _log.info(
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
                _log.warning(
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


def _probe_ids(enc: Any, n_tokens: int) -> list[int]:
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
    ids = _probe_ids(enc, min(enc.body_cap, 256))
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
    if enc.max_tokens_from == "registry" or enc.max_tokens > _MAX_LENGTH_CHECK_TOKENS:
        return
    body = _probe_ids(enc, enc.body_cap)
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
    long_ids = _probe_ids(enc, min(enc.body_cap, _PADDING_CHECK_LONG_TOKENS))
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
    tol = _PADDING_CHECK_TOLERANCE["float32" if exact else enc.compute_dtype]
    if not diff <= tol:
        raise PaddingVarianceError(
            f"model {enc.model_id}: a {n_short}-token probe's embedding changes by {diff:.3g} (relative; limit "
            f"{tol:g}) when batched with a {len(long_ids)}-token one under padding_side {enc.padding_side}"
            f"{'' if enc.uses_attention_mask else ' without an attention mask'}: results would depend on batch "
            f"mates. {_padding_fix(enc.padding_side, enc.uses_attention_mask, enc.extraction.causal)}"
        )


def _padding_fix(padding_side: str, uses_mask: bool, causal: bool) -> str:
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
