"""The shared engine behind every token-level model adapter (transformers, remote code, Evo).

An adapter only loads its model and says how to tokenize and how to call it; everything that decides what
the embedding *is* lives here, once (the BEND lesson: per-model chunking and special-token code is where
bugs live). Policy (docs/footguns.md):

* Input: the model-input form (uppercase); an optional nucleotide-level `length_multiple` rule trims the
  trailing `len % m` bases (counted per row in `trimmed_bases`; case B13); an optional `input_transform`
  (overlapping k-mers for DNABERT-1, lowercase for gLM2).
* Tokens: the tokenizer never pads or truncates; GENEB adds the special tokens itself, so a sequence longer
  than the model's true maximum (`resolve_max_tokens`, case B14) is split at token level into chunks that
  each carry the special tokens; `long_policy` chunk_mean (pool across chunks: the mean over every pooled
  token), truncate (first chunk; counted per row), or error.
* Batches: chunks sorted by length, padded to the batch's longest on `padding_side` (right by default) with
  the attention mask passed; a model without an attention mask gets equal-length batches only, unless it is
  causal and padded on the right (pads then sit where no real position can see them; case B02). Whatever the
  family, every encoder proves this at load: a probe sequence embedded alone and beside a longer one must give
  the same vector, else PaddingVarianceError (left padding of learned absolute positions, a mask the model
  ignores; cases B02, B04, B07). A pad id outside the embedding table is replaced by id 0 (pads are masked).
* Pooling: over the real tokens, minus the special tokens when `exclude_special_tokens` (case B06), in
  float32 (case B25); layer by index (-1 = last_hidden_state) or by module name (a forward hook).
* Guards: token ids inside the embedding table (B22), pooled width = hidden size and not vocabulary size
  (B23), finite values (B27: error, or retry the batch in float32 under `nonfinite: retry_fp32`), and the
  out-of-memory step-down that keeps row order; letters the tokenizer drops without a token (no UNK in its
  vocabulary) are an error naming the row (B11); a maximum length taken from the model's files is tried once
  at load (B14); any other error of the model's forward pass is re-raised naming the model and rows (B13).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from geneb.embeddings.batching import StepDownRunner, is_out_of_memory, plan_batches
from geneb.embeddings.errors import (
    DroppedInputError,
    EmptyPoolError,
    ExtractionError,
    LayerNotExposedError,
    LongSequenceError,
    MaxLengthError,
    ModelForwardError,
    NonFiniteEmbeddingError,
    PaddingVarianceError,
)
from geneb.embeddings.pooling import pool
from geneb.models.base import EmbedResult, sequence_batch
from geneb.models.guards import check_pooled_width, check_token_ids, get_layer

log = logging.getLogger(__name__)

#: tokenizers report this (or larger, e.g. 1e30) when no maximum is set: not a real limit (case B14)
SENTINEL_MAX_LENGTH = 10**9
REDUCED_DTYPES = ("bfloat16", "float16")
#: a maximum worked out from the model's files (not set in the registry) is tried once at load, up to this length
MAX_LENGTH_CHECK_TOKENS = 8192
#: relative difference of a pooled vector alone vs batched with a longer one that counts as padding-dependent
#: (fp32 differences are ~1e-6; a padding bug moves vectors by 1e-1 and more), per compute dtype
#: (fp32 noise is ~1e-7; a bf16/fp16 forward pass moves vectors by ~1e-3 with the batch shape alone, so a pad
#: leak below the dtypes' batch-invariance tolerance of geneb.embeddings.checks cannot be told from rounding)
PADDING_CHECK_TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}
#: the padding check's longer probe, in tokens (up to the model's chunk size): effects that grow with the padded
#: width (dynamic RoPE scaling past max_position_embeddings) only show with a long batch mate
PADDING_CHECK_LONG_TOKENS = 1024


def resolve_max_tokens(
    tokenizer_max: int | None, config_max: int | None, registry_max: int | None, *, model: str
) -> int:
    """The model's usable maximum input length in tokens (special tokens included).

    A registry value wins (a warning is logged where it disagrees with tokenizer or config); otherwise the
    smaller of the tokenizer's `model_max_length` and the config's maximum positions, ignoring the
    tokenizer's "not set" sentinel (>= 1e9; transformers uses int(1e30)). Raises ValueError "no usable max
    length for model X" when nothing usable is known. Source of the pitfall: NT's config said 1024 positions
    while the models were trained on 1000 tokens (case B14).
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


def resolve_device(device: str, *, model: str) -> str:
    """ "cpu", "cuda[:i]" or "auto" (cuda when available) -> a torch device string. device=cuda without CUDA
    raises RuntimeError: GENEB never falls back to CPU silently."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"model {model}: device={device} was configured but CUDA is not available; not falling back to CPU"
        )
    return device


def transform_input(seq: str, transform: dict[str, Any] | None, *, model: str, row: int) -> str:
    """Apply the registry's `input_transform` to one model-input sequence.

    None: unchanged. {"kind": "overlapping-kmers", "k": k}: space-separated overlapping k-mers, stride 1
    ("ACGTAG", k=3 -> "ACG CGT GTA TAG"; DNABERT-1's input format, Ji et al. 2021). {"kind": "lowercase",
    "prefix": p}: the lowercase sequence (gLM2 reads nucleotides in lowercase after a strand token p; the
    encoder puts p's tokens on every chunk as special tokens, see `TokenModelEncoder._after_load`).
    Raises ValueError for an unknown kind or a sequence shorter than k (naming model and row).
    """
    if not transform:
        return seq
    kind = transform.get("kind")
    if kind == "overlapping-kmers":
        k = int(transform["k"])
        if len(seq) < k:
            raise EmptyPoolError(f"model {model}, row {row}: sequence of {len(seq)} nt is shorter than k={k}")
        return " ".join(seq[i : i + k] for i in range(len(seq) - k + 1))
    if kind == "lowercase":
        return seq.lower()
    raise ValueError(f"model {model}: unknown input_transform kind {kind!r}")


def init_execution(encoder: Any, settings: dict[str, Any], *, device: str, batch_size: int, progress: bool) -> None:
    """Set the attributes every adapter shares: settings, model_id, extraction, device (resolved; never a
    silent CPU fallback), batch_size and progress."""
    encoder.settings = settings
    encoder.model_id = str(settings["model"])
    encoder.extraction = settings["extraction"]
    encoder.device = resolve_device(device, model=encoder.model_id)
    encoder.batch_size = int(batch_size)
    encoder.progress = progress


@dataclass
class Chunk:
    """One forward-pass item: token ids with the special tokens, and which positions are pooled (1)."""

    seq_index: int
    ids: list[int]
    pool_mask: list[int]


class TokenModelEncoder:
    """Base class of token-level adapters. See the module docstring for the policy.

    settings: resolved extraction settings (registry.extraction_settings). device: "cpu", "cuda" or "auto".
    batch_size: chunks per forward pass (an execution knob; results do not depend on it to 1e-5 in fp32).
    progress: show a tqdm bar on stderr (the job log).

    Subclasses implement `_load()` (setting model, prefix, suffix, max_tokens, pad_id, hidden_size,
    vocab_size, num_embeddings, uses_attention_mask), `_tokenize(texts) -> list[list[int]]` (no special
    tokens) and `_call(inputs, want_states) -> output` (anything `get_layer` understands).
    """

    def __init__(
        self, settings: dict[str, Any], *, device: str = "cpu", batch_size: int = 64, progress: bool = True
    ) -> None:
        init_execution(self, settings, device=device, batch_size=batch_size, progress=progress)
        self.prefix: list[int] = []
        self.suffix: list[int] = []
        self.pad_id = 0
        self.hidden_size: int | None = None
        self.vocab_size: int | None = None
        self.num_embeddings: int | None = None
        self.uses_attention_mask = True
        self.pad_sensitive = False  # set by an adapter whose model changes with the padded length despite the mask
        self.unk_id: int | None = None  # the tokenizer's unknown-token id, counted per embed call
        self.last_unk = (0, 0)  # (rows with an unknown token, unknown tokens) of the last make_chunks call
        self.pad_to_length: int | None = None  # pad every batch to this width (checks and the naive benchmark only)
        self.strand: list[int] = []  # a strand token an input_transform puts before the sequence (gLM2)
        self.n_layers: int | None = None  # transformer blocks, when the config says (checks per-layer state counts)
        self.max_tokens_from = "registry"  # where max_tokens came from: registry, or the model's files (then tried)
        self._offsets: list[list[tuple[int, int]]] | None = None  # character spans of the last _tokenize call
        self.step_downs = 0
        self.fp32_retries = 0
        self._captured: list[torch.Tensor] = []
        self.compute_dtype, self.weights_dtype, self.autocast = self._dtypes()
        self._load()
        self._after_load()

    # ---- dtype policy -----------------------------------------------------------------------------------

    def _dtypes(self) -> tuple[str, str, bool]:
        """(compute dtype, weights dtype, autocast?) from `dtype` and `nonfinite`.

        dtype auto: float32 on CPU, bfloat16 on CUDA. A reduced compute dtype loads reduced weights, except
        under `nonfinite: retry_fp32`, which keeps float32 weights and runs under autocast so a batch with
        NaN/inf can be rerun in float32.
        """
        want = self.extraction.get("dtype", "auto")
        compute = ("bfloat16" if self.device.startswith("cuda") else "float32") if want == "auto" else want
        if compute not in ("float32", *REDUCED_DTYPES):
            raise ValueError(f"model {self.model_id}: unknown dtype {want!r}")
        if compute == "float32":
            return compute, "float32", False
        if self.extraction.get("nonfinite", "error") == "retry_fp32":
            return compute, "float32", True
        return compute, compute, False

    # ---- subclass interface -----------------------------------------------------------------------------

    def _load(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _tokenize(self, texts: list[str]) -> list[list[int]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- after loading ----------------------------------------------------------------------------------

    def _after_load(self) -> None:
        ext = self.extraction
        strand = (ext.get("input_transform") or {}).get("prefix")
        # gLM2's strand token: on every chunk, after the tokenizer's own prefix, never pooled (see `chunk`)
        self.strand = list(self._tokenize([str(strand)])[0]) if strand else []
        self.body_cap = self.max_tokens - len(self.prefix) - len(self.strand) - len(self.suffix)
        multiple = ext.get("length_multiple")
        if multiple:  # every chunk, not only the whole row, must obey the length rule (case B13)
            self.body_cap -= self.body_cap % int(multiple)
        if self.body_cap < 1:
            raise ValueError(
                f"model {self.model_id}: max_tokens {self.max_tokens} leaves no room for sequence tokens"
                + (f" in multiples of {multiple}" if multiple else "")
            )
        if self.num_embeddings is not None and not 0 <= self.pad_id < self.num_embeddings:
            # pads are masked (or sit after every real token of a causal model): any id in the table will do
            log.warning(
                "model %s: pad id %d is outside the embedding table (%d rows); padding with id 0",
                self.model_id,
                self.pad_id,
                self.num_embeddings,
            )
            self.pad_id = 0
        side = ext.get("padding_side", "right")
        if side not in ("right", "left"):
            raise ValueError(f"model {self.model_id}: padding_side must be right or left, got {side!r}")
        self.padding_side = side
        causal = bool(ext.get("causal", False))
        if not self.uses_attention_mask and side == "left":
            raise ValueError(
                f"model {self.model_id}: left padding without an attention mask would feed pads into "
                "every real position (case B02); use padding_side: right"
            )
        # without a mask, only a causal model padded on the right is safe; everything else gets equal lengths.
        # Some masked models are not padding-invariant either (BigBird's block-sparse attention: its blocks
        # depend on the padded length); `bucket_by_length` true, or auto with `self.pad_sensitive`, covers them.
        bucket = ext.get("bucket_by_length", "auto")
        if bucket not in ("auto", True, False):
            raise ValueError(f"model {self.model_id}: bucket_by_length must be auto, true or false, got {bucket!r}")
        unsafe = (not self.uses_attention_mask and not (causal and side == "right")) or self.pad_sensitive
        if bucket is False and not self.uses_attention_mask and not (causal and side == "right"):
            raise ValueError(
                f"model {self.model_id}: bucket_by_length false for a model without an attention mask "
                "that is not causal would pad real positions (case B02)"
            )
        self.bucket_equal_lengths = unsafe if bucket == "auto" else bool(bucket)
        if ext.get("pooling", "mean") == "cls" and ext.get("exclude_special_tokens", True):
            raise ValueError(
                f"model {self.model_id}: pooling cls reads the CLS token; set exclude_special_tokens: false"
            )
        if (
            ext.get("pooling", "mean") == "cls" and not self.prefix
        ):  # the tokenizer's own prefix (a strand token is no CLS)
            raise ValueError(
                f"model {self.model_id}: pooling cls, but the tokenizer puts no token before the sequence "
                "(no CLS): the first nucleotide token would be pooled; use mean or last pooling"
            )
        layer = ext.get("layer", -1)
        if isinstance(layer, str):
            try:
                module = self.model.get_submodule(layer)
            except AttributeError as err:
                raise ValueError(f"model {self.model_id}: no module named {layer!r} for layer extraction") from err
            module.register_forward_hook(self._hook)
            self.layer_resolved = f"module:{layer}"
        else:
            self.layer_resolved = "last_hidden_state" if layer == -1 else f"hidden_states[{layer}]"
        log.info(
            "model %s: max_tokens %d (body %d + special %d/%d), padding %s%s, layer %s, pooling %s, "
            "special tokens %s, long_policy %s, compute %s (weights %s%s)",
            self.model_id,
            self.max_tokens,
            self.body_cap,
            len(self.prefix),
            len(self.suffix),
            self.padding_side,
            ("" if self.uses_attention_mask else " without attention mask")
            + (", equal-length batches" if self.bucket_equal_lengths else ""),
            self.layer_resolved,
            ext.get("pooling", "mean"),
            "excluded" if ext.get("exclude_special_tokens", True) else "included",
            ext.get("long_policy", "chunk_mean"),
            self.compute_dtype,
            self.weights_dtype,
            ", autocast" if self.autocast else "",
        )
        self._check_vocabulary()
        self._check_max_length()
        self._check_padding_invariance()
        self.fp32_retries = self.step_downs = 0  # count the task's rows only, not the load-time probes

    def _probe_ids(self, n_tokens: int) -> list[int]:
        """Up to `n_tokens` body token ids of a fixed probe sequence (for the load-time checks)."""
        ext = self.extraction
        seq = ("ACGTTGCAGGATCCATTGCAAGCTTACG" * (n_tokens // 4 + 8))[: max(24, n_tokens * 8)]
        ids = self._tokenize([transform_input(seq, ext.get("input_transform"), model=self.model_id, row=-1)])[0]
        return list(ids[:n_tokens])

    def _check_vocabulary(self) -> None:
        """A plain ACGT probe sequence must tokenize to mostly known tokens: a vocabulary or normalizer that does
        not match the input form (a lowercasing normalizer over an uppercase vocabulary, a word-piece limit
        shorter than a sequence) would otherwise turn every row into the same UNK tokens (case B11). Raises
        DroppedInputError when over half the probe's tokens are UNK or there are none."""
        ids = self._probe_ids(min(self.body_cap, 256))
        if not ids:
            raise DroppedInputError(f"model {self.model_id}: the tokenizer turns a plain ACGT sequence into no tokens")
        if self.unk_id is not None:
            unk = sum(1 for t in ids if t == self.unk_id)
            if unk * 2 > len(ids):
                raise DroppedInputError(
                    f"model {self.model_id}: the tokenizer reads a plain ACGT probe sequence as UNK ({unk} of {len(ids)} "
                    "tokens): its vocabulary or normalizer does not match the model-input form (lowercasing? a word "
                    "longer than its limit? a missing input_transform?)"
                )

    def _check_max_length(self) -> None:
        """One forward pass at the resolved maximum when it came from the model's files, not the registry: a
        position table shifted by a padding offset (RoBERTa/ESM: 514 positions, 512 usable) or a stale config
        value then fails here, naming the model, instead of on some row mid-run (case B14). Skipped above
        MAX_LENGTH_CHECK_TOKENS tokens (cost). Raises MaxLengthError."""
        if self.max_tokens_from == "registry" or self.max_tokens > MAX_LENGTH_CHECK_TOKENS:
            return
        body = self._probe_ids(self.body_cap)
        if len(body) < self.body_cap:
            return  # the probe sequence is too short for this tokenizer: nothing to learn
        chunk = self.chunk(0, body)
        try:
            self._forward_batch([chunk], [-1])
        except ModelForwardError as err:
            raise MaxLengthError(
                f"model {self.model_id}: an input of its maximum length {self.max_tokens} tokens (from the "
                f"{self.max_tokens_from}) fails in the forward pass ({err.__cause__!r}); its true limit is lower: "
                "set extraction.max_tokens in the registry entry"
            ) from err

    def _check_padding_invariance(self) -> None:
        """Embed a short probe alone and in a batch with a longer one; the short one's pooled vector must not
        change beyond PADDING_CHECK_TOLERANCE (relative to its largest value). Catches padding the model does
        not honour, whatever the family: left pads shifting learned absolute positions, a mask it ignores
        (cases B02, B04, B07). Skipped under equal-length batching (no pads ever). Raises PaddingVarianceError."""
        if self.bucket_equal_lengths:
            return
        multiple = int(self.extraction.get("length_multiple") or 1)
        long_ids = self._probe_ids(min(self.body_cap, PADDING_CHECK_LONG_TOKENS))
        n_short = max(multiple, min(len(long_ids) // 3, 64) // multiple * multiple)
        if len(long_ids) <= n_short:
            return  # the model takes too few tokens for two lengths
        chunks = [self.chunk(i, ids) for i, ids in enumerate((long_ids[:n_short], long_ids))]
        # float32 weights under autocast: check in float32, where a pad leak is not hidden by rounding
        exact = self.autocast or self.compute_dtype == "float32"
        alone, _ = self._forward_batch(chunks[:1], [-1], force_fp32=self.autocast)
        batched, _ = self._forward_batch(chunks, [-1, -2], force_fp32=self.autocast)
        scale = float(alone.abs().max().clamp_min(1e-6))
        diff = float((alone[0] - batched[0]).abs().max()) / scale
        tol = PADDING_CHECK_TOLERANCE["float32" if exact else self.compute_dtype]
        if not diff <= tol:
            raise PaddingVarianceError(
                f"model {self.model_id}: a {n_short}-token probe's embedding changes by {diff:.3g} (relative; limit "
                f"{tol:g}) when batched with a {len(long_ids)}-token one under padding_side {self.padding_side}"
                f"{'' if self.uses_attention_mask else ' without an attention mask'}: results would depend on batch "
                "mates. Use padding_side: right, or bucket_by_length: true (equal-length batches)"
            )

    def _hook(self, _module: Any, _inputs: Any, output: Any) -> None:
        if isinstance(output, (tuple, list)):
            output = output[0]
        elif not isinstance(output, torch.Tensor):  # a ModelOutput / dict from a whole sub-model
            output = output["last_hidden_state"] if "last_hidden_state" in output else next(iter(output.values()))
        self._captured.append(output)

    def identity(self) -> dict[str, Any]:
        """What defines these embeddings beyond the registry settings (stored in the extraction key)."""
        return {
            "adapter": type(self).__name__,
            "special_prefix": self.prefix,
            "strand_prefix": self.strand,
            "special_suffix": self.suffix,
            "max_tokens": self.max_tokens,
            "pad_id": self.pad_id,
            "padding": (
                "none: equal-length batches"
                if self.bucket_equal_lengths
                else f"{self.padding_side}, dynamic (longest in a length-sorted batch)"
            )
            + (
                ""
                if self.uses_attention_mask
                else "; no attention mask"
                + ("" if self.bucket_equal_lengths else " (causal model: pads sit after every real token)")
            ),
            "attention_mask": self.uses_attention_mask,
            "layer_resolved": self.layer_resolved,
            "compute_dtype": self.compute_dtype,
            "weights_dtype": self.weights_dtype,
            "autocast": self.autocast,
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "num_embeddings": self.num_embeddings,
        }

    # ---- chunks -----------------------------------------------------------------------------------------

    def make_chunks(
        self, sequences: list[str], rows: list[int]
    ) -> tuple[list[Chunk], np.ndarray, np.ndarray, np.ndarray]:
        """Turn sequences into forward-pass chunks; returns (chunks, n_chunks (n,), truncated (n,), trimmed
        bases (n,)). Raises LongSequenceError under long_policy error, EmptyPoolError for a row with no
        token or no pooled position, ValueError for cls/last pooling of a multi-chunk row."""
        ext = self.extraction
        policy = ext.get("long_policy", "chunk_mean")
        method = ext.get("pooling", "mean")
        multiple = ext.get("length_multiple")
        n = len(sequences)
        trimmed = np.zeros(n, np.int32)
        texts = []
        for i, seq in enumerate(sequences):
            if multiple:
                keep = len(seq) - len(seq) % int(multiple)
                if keep == 0:
                    raise EmptyPoolError(
                        f"model {self.model_id}, row {rows[i]}: {len(seq)} nt is shorter than the "
                        f"model's length multiple {multiple}"
                    )
                trimmed[i] = len(seq) - keep
                seq = seq[:keep]
            texts.append(transform_input(seq, ext.get("input_transform"), model=self.model_id, row=rows[i]))
        if multiple and trimmed.any():
            log.info(
                "model %s: length_multiple %d: trimmed trailing bases of %d rows (max %d nt)",
                self.model_id,
                multiple,
                int((trimmed > 0).sum()),
                int(trimmed.max()),
            )
        encoded = self._tokenize(texts)
        self._last_encoded = encoded
        self._check_dropped(texts, rows)
        if self.unk_id is not None:
            unk = [sum(1 for t in ids if t == self.unk_id) for ids in encoded]
            self.last_unk = (sum(1 for u in unk if u), sum(unk))
            blind = next((i for i, (u, ids) in enumerate(zip(unk, encoded)) if ids and u == len(ids)), None)
            if blind is not None:
                raise DroppedInputError(
                    f"model {self.model_id}, row {rows[blind]}: every one of its {unk[blind]} tokens is UNK, so nothing "
                    "of the sequence reaches the model (a vocabulary that cannot spell it, a lowercasing normalizer, "
                    "a word longer than the tokenizer's limit?)",
                    rows=[rows[blind]],
                )
            if self.last_unk[0]:
                first = next(i for i, u in enumerate(unk) if u)
                log.warning(
                    "model %s: %d unknown-token ids in %d rows (first: row %s); letters outside the model's "
                    "vocabulary (IUPAC codes?) reach it as UNK",
                    self.model_id,
                    self.last_unk[1],
                    self.last_unk[0],
                    rows[first],
                )
        chunks: list[Chunk] = []
        n_chunks = np.zeros(n, np.int32)
        truncated = np.zeros(n, bool)
        cap = self.body_cap
        for i, ids in enumerate(encoded):
            if not ids:
                raise EmptyPoolError(f"model {self.model_id}, row {rows[i]}: the tokenizer produced no tokens")
            pieces = [ids[s : s + cap] for s in range(0, len(ids), cap)]
            if len(pieces) > 1:
                if policy == "error":
                    raise LongSequenceError(
                        f"model {self.model_id}, row {rows[i]}: {len(ids)} tokens > {cap} (long_policy: error)"
                    )
                if policy == "truncate":
                    pieces, truncated[i] = pieces[:1], True
                elif method in ("cls", "last"):
                    raise ValueError(
                        f"model {self.model_id}, row {rows[i]}: pooling {method!r} is undefined across "
                        f"{len(pieces)} chunks; use long_policy truncate"
                    )
            for piece in pieces:
                chunks.append(self.chunk(i, list(piece)))
            n_chunks[i] = len(pieces)
        return chunks, n_chunks, truncated, trimmed

    def chunk(self, seq_index: int, body: list[int]) -> Chunk:
        """One forward-pass item: the tokenizer's prefix, the strand token (if any), `body`, the suffix; pooled
        positions are the body's, plus the tokenizer's special tokens unless `exclude_special_tokens` (a strand
        token is never pooled: it is the same in every row)."""
        special = 0 if self.extraction.get("exclude_special_tokens", True) else 1
        mask = [special] * len(self.prefix) + [0] * len(self.strand) + [1] * len(body) + [special] * len(self.suffix)
        return Chunk(seq_index, self.prefix + self.strand + list(body) + self.suffix, mask)

    def _check_dropped(self, texts: list[str], rows: list[int]) -> None:
        """Raise DroppedInputError for the first row with a non-whitespace character that no token stands for
        (a vocabulary without UNK deletes letters it cannot spell, e.g. N or IUPAC codes; case B11).

        Needs the character spans of the last `_tokenize` call (`self._offsets`, set by fast tokenizers);
        without them the check is not possible and is skipped. With an UNK token in the vocabulary the spans
        are exact, and a run of one repeated letter whose neighbour (the same letter) has a token is a run the
        tokenizer's normalizer collapsed on purpose (GENA-LM maps an N run to one token; case B16), not a drop.
        Without one, a model that drops letters reports the spans as if they had never been there (the gap
        shows at the end of the row), so any uncovered letter is an error and no position is claimed."""
        if self._offsets is None:
            self._check_dropped_by_token_text(texts, rows)
            return
        exact_spans = self.unk_id is not None
        for i, (text, spans) in enumerate(zip(texts, self._offsets)):
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
                    f"model {self.model_id}, row {rows[i]}: {n} letters have no token ({where}; a tokenizer drops "
                    "what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                    "use a task without such letters or a model whose vocabulary spells them",
                    rows=[rows[i]],
                )

    def _token_texts(self, ids: list[int]) -> list[str] | None:
        """The text of each token id (subclass hook; None when the tokenizer cannot say)."""
        return None

    def _check_dropped_by_token_text(self, texts: list[str], rows: list[int]) -> None:
        """The dropped-letter check for tokenizers without character spans (slow, Python tokenizers): in a row
        with no UNK token, the tokens' letters (word-piece markers `##`, `▁`, `Ġ` removed) must add up to the
        row's letters; fewer means letters were skipped. Rows with an UNK token cannot be counted (one UNK may
        stand for several letters) and rely on the UNK count instead."""
        encoded = getattr(self, "_last_encoded", None)
        if encoded is None:
            return
        for i, (text, ids) in enumerate(zip(texts, encoded)):
            if self.unk_id is not None and self.unk_id in ids:
                continue
            pieces = self._token_texts(list(ids))
            if pieces is None:
                return
            have = sum(len(t.replace("##", "").replace("\u2581", "").replace("\u0120", "").strip()) for t in pieces)
            want = sum(1 for ch in text if not ch.isspace())
            if have < want:
                raise DroppedInputError(
                    f"model {self.model_id}, row {rows[i]}: its tokens spell {have} of its {want} letters (the tokenizer "
                    "skips what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                    "use a task without such letters or a model whose vocabulary spells them",
                    rows=[rows[i]],
                )

    def batch_tensors(self, batch: list[Chunk]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rectangular (B, T) tensors for a batch: input ids (pad id outside the sequence), attention mask
        (1 = real token) and pool mask (1 = pooled position), padded on `padding_side` to the batch's
        longest chunk (case B11: batched tokenization is always rectangular, with a mask), or to
        `pad_to_length` when set (used to show padding invariance, case B04, and by the naive benchmark loop).
        Equal-length batching (models that must never see a pad) ignores `pad_to_length`."""
        width = max(len(c.ids) for c in batch)
        if self.pad_to_length is not None and not self.bucket_equal_lengths:
            width = max(width, int(self.pad_to_length))
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(batch), width), dtype=torch.long)
        pmask = torch.zeros((len(batch), width), dtype=torch.long)
        for b, c in enumerate(batch):
            n = len(c.ids)
            sl = slice(0, n) if self.padding_side == "right" else slice(width - n, width)
            ids[b, sl] = torch.tensor(c.ids, dtype=torch.long)
            attn[b, sl] = 1
            pmask[b, sl] = torch.tensor(c.pool_mask, dtype=torch.long)
        return ids, attn, pmask

    # ---- forward ----------------------------------------------------------------------------------------

    def hidden_states(
        self, ids: torch.Tensor, attn: torch.Tensor, *, force_fp32: bool = False, rows: list[int] | None = None
    ) -> torch.Tensor:
        """Hidden states (B, T, d) of the configured layer for one rectangular batch. An error of the model's
        own forward pass (not out-of-memory, which the batch step-down handles) is re-raised as
        ModelForwardError naming the model, the batch shape and `rows`."""
        inputs = {"input_ids": ids.to(self.device)}
        if self.uses_attention_mask:
            inputs["attention_mask"] = attn.to(self.device)
        layer = self.extraction.get("layer", -1)
        want_states = isinstance(layer, int) and layer != -1
        use_autocast = self.autocast and not force_fp32
        ctx = (
            torch.autocast(device_type=self.device.split(":")[0], dtype=getattr(torch, self.compute_dtype))
            if use_autocast
            else contextlib.nullcontext()
        )
        self._captured.clear()
        try:
            with torch.inference_mode(), ctx:
                out = self._call(inputs, want_states)
        except Exception as err:  # noqa: BLE001 - re-raised with the model and rows named
            if is_out_of_memory(err) or isinstance(err, ExtractionError):
                raise
            named = list(dict.fromkeys(r for r in rows or [] if r >= 0))  # a row's chunks share its id
            shown = (
                "the load-time check's probe sequences"
                if rows and not named  # see _check_padding_invariance
                else "rows " + (", ".join(map(str, named[:5])) or "?") + (" ..." if len(named) > 5 else "")
            )
            raise ModelForwardError(
                f"model {self.model_id}: the forward pass failed on a batch of {ids.shape[0]} x {ids.shape[1]} tokens "
                f"({shown}): {type(err).__name__}: {err}",
                rows=named,
            ) from err
        if isinstance(layer, str):
            if len(self._captured) != 1:
                what = "did not run" if not self._captured else f"ran {len(self._captured)} times (a shared block?)"
                raise LayerNotExposedError(
                    f"model {self.model_id}: module {layer!r} {what} in one forward pass; its output "
                    "is not one layer's hidden states: name a module that runs once"
                )
            return self._captured[0]
        return get_layer(out, layer, model=self.model_id, n_layers=self.n_layers)

    def _forward_batch(
        self, chunks: list[Chunk], rows: list[int], *, force_fp32: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        ids, attn, pmask = self.batch_tensors(chunks)
        check_token_ids(ids[attn.bool()], self.num_embeddings, model=self.model_id, rows=rows)
        hidden = self.hidden_states(ids, attn, force_fp32=force_fp32, rows=rows)
        bad = self._nonfinite_rows(hidden, attn)
        if bad and self.autocast:
            self.fp32_retries += 1
            log.warning(
                "model %s: non-finite %s states for rows %s; retrying the batch in float32 (nonfinite: retry_fp32)",
                self.model_id,
                self.compute_dtype,
                [rows[b] for b in bad],
            )
            hidden = self.hidden_states(ids, attn, force_fp32=True, rows=rows)
            bad = self._nonfinite_rows(hidden, attn)
        if bad:
            named = [rows[b] for b in bad if rows[b] >= 0]
            which = (
                (f"row {named[0]}" + (f" and {len(named) - 1} more" if len(named) > 1 else ""))
                if named
                else "the load-time check's probe sequences"
            )
            raise NonFiniteEmbeddingError(
                f"model {self.model_id}: non-finite hidden states (NaN/inf, compute dtype {self.compute_dtype}) for {which}",
                rows=named,
            )
        if hidden.shape[:2] != ids.shape:
            raise ValueError(
                f"model {self.model_id}: hidden states {tuple(hidden.shape)} do not align with the input "
                f"tokens {tuple(ids.shape)}; this layer cannot be pooled per token"
            )
        method = self.extraction.get("pooling", "mean")
        pooled = pool(hidden, pmask.to(hidden.device), method, rows=rows)
        # positions that went into each vector: all pooled ones for mean/max, the one token for cls/last
        used = pmask.sum(dim=1) if method in ("mean", "max") else torch.ones(len(chunks), dtype=torch.long)
        return pooled.cpu(), used

    @staticmethod
    def _nonfinite_rows(hidden: torch.Tensor, attn: torch.Tensor) -> list[int]:
        real = attn.to(hidden.device).bool()
        finite = torch.isfinite(hidden).all(dim=-1) | ~real
        return [int(b) for b in torch.nonzero(~finite.all(dim=1)).flatten()]

    # ---- embed ------------------------------------------------------------------------------------------

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Pooled embeddings float32 (n, d) in input order, with per-row n_tokens (pooled positions, all chunks),
        n_chunks, truncated and trimmed_bases. Raises TypeError for a bare string (case B12)."""
        sequences, rows = sequence_batch(sequences, rows, model=self.model_id)
        chunks, n_chunks, truncated, trimmed = self.make_chunks(sequences, rows)
        method = self.extraction.get("pooling", "mean")
        plan = plan_batches([len(c.ids) for c in chunks], self.batch_size, equal_length=self.bucket_equal_lengths)
        state: dict[str, Any] = {"acc": None, "counts": np.zeros(len(sequences), np.int64)}
        bar = _progress(len(chunks), desc or self.model_id, enabled=self.progress)

        def run(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
            batch = [chunks[j] for j in idx]
            return self._forward_batch(batch, [rows[c.seq_index] for c in batch])

        def done(idx: list[int], result: tuple[torch.Tensor, torch.Tensor]) -> None:
            pooled, ntok = result
            if state["acc"] is None:
                check_pooled_width(
                    int(pooled.shape[1]),
                    model=self.model_id,
                    hidden_size=self.hidden_size,
                    vocab_size=self.vocab_size,
                    expected=self.extraction.get("embedding_dim"),
                    num_embeddings=self.num_embeddings,
                )
                state["acc"] = np.zeros((len(sequences), pooled.shape[1]), np.float64)
                if method == "max":
                    state["acc"][:] = -np.inf
            acc, counts = state["acc"], state["counts"]
            for j, v, n in zip(idx, pooled.numpy().astype(np.float64), ntok.numpy()):
                i = chunks[j].seq_index
                if method == "mean":
                    acc[i] += v * n
                elif method == "max":
                    acc[i] = np.maximum(acc[i], v)
                else:  # cls / last: one chunk per sequence (make_chunks refuses more)
                    acc[i] = v
                counts[i] += int(n)
            bar.update(len(idx))

        free = torch.cuda.empty_cache if self.device.startswith("cuda") else None
        runner = StepDownRunner(
            run, what=f"model {self.model_id}", free=free, row_of=lambda j: rows[chunks[j].seq_index]
        )
        try:
            runner.run(plan, done)
        finally:
            bar.close()
        self.step_downs += runner.step_downs
        acc, counts = state["acc"], state["counts"]
        if method == "mean":
            acc = acc / counts[:, None]
        return EmbedResult(acc.astype(np.float32), counts.astype(np.int32), n_chunks, truncated, trimmed)


def _collapsed_run(text: str, covered: bytearray, start: int, end: int) -> bool:
    """Whether the uncovered span text[start:end] is one repeated letter next to a covered copy of it."""
    letters = set(text[start:end])
    if len(letters) != 1:
        return False
    letter = letters.pop()
    after = end < len(text) and covered[end] and text[end] == letter
    before = start > 0 and covered[start - 1] and text[start - 1] == letter
    return bool(after or before)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, *, enabled: bool) -> Any:
    """A tqdm progress bar on stderr (the job's log file), updated at most every 10 s; a no-op when disabled."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="chunk", file=sys.stderr, mininterval=10.0, leave=True)
