"""The token-model engine: the typed contract between a family adapter and the engine, and the engine
that batches, runs and pools every token-level model.

The typed contract between a family adapter and the token-model engine.

A family's `_load()` returns one frozen `LoadedNetwork`: the network, its tokenizer and the facts the engine needs
about them (special tokens, pad and unknown ids, maximum length and where it came from, widths, attention mask).
The engine derives everything else from it in one place, `_derive_layout`, into a frozen `EngineLayout` (the
strand token, the body cap, the padding side, equal-length batching, the causal-mask elision, the layer), and
`LoadedView` shows both as read-only attributes of the encoder. Nothing is set on the encoder as a side effect
of loading.

The shared engine behind every token-level model adapter (transformers, remote code, Evo): batches and the
forward pass.

An adapter only loads its model and says how to tokenize and how to call it; everything that decides what
the embedding *is* lives in the engine, once (the BEND lesson: per-model chunking and special-token code is
where bugs live). Policy (docs/footguns.md), by module:

* `geneb.encoders.engine.chunking`: the model-input text (`length_multiple` trim, `input_transform`), token-level
  chunks that each carry the special tokens (GENEB adds them itself; `long_policy` chunk_mean, truncate or
  error beyond the model's true maximum), and the padded batch tensors.
* `geneb.encoders.engine.checks`: letters dropped without a token are an error naming the row; UNK
  tokens are counted.
* `geneb.encoders.engine.checks`: the maximum length (tried once at load), the batching settings, and the
  load-time probes (padding invariance; the vocabulary).
* Here: chunks sorted by length, batches run largest first (an out-of-memory comes at once), padded to the
  batch's longest on `padding_side` with the attention mask passed (equal-length batches for a model without a
  mask unless it is causal and padded on the right);
  a pad id outside the embedding table becomes id 0. Pooling over the real tokens, minus the special tokens
  when `exclude_special_tokens`, in float32 (even under bf16/fp16); layer by index (-1 = last_hidden_state) or by module
  name (a forward hook). Guards: token ids inside the embedding table, pooled width = hidden size, not
  vocabulary size (logits), finite values (fp16 overflow: error, or retry the batch in float32 under `nonfinite:
  retry_fp32`), the out-of-memory step-down that keeps row order; any other error of the forward pass is
  re-raised naming the model and rows.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geneb.core.errors import ExtractionError, LayerNotExposedError, NonFiniteEmbeddingError
from geneb.encoders.engine import checks
from geneb.encoders.engine.batching import (
    ExecutionKnobs,
    StepDownRunner,
    dtype_policy,
    init_execution,
    is_out_of_memory,
    largest_first,
    plan_chunks,
    split_progress,
    to_device,
)
from geneb.encoders.engine.checks import (
    check_dropped,
    check_pooled_width,
    check_token_ids,
    count_unknown,
    forward_error,
    get_layer,
    nonfinite_rows,
)
from geneb.encoders.engine.chunking import (
    Chunk,
    RowAccumulator,
    make_chunk,
    model_texts,
    pad_chunks,
    pool,
    split_tokens,
)
from geneb.encoders.protocol import LOAD_CHECKS, EmbedCounters, EmbedResult, checks_deferred, sequence_batch
from geneb.registry.spec import Extraction, SettingsLike

_log = logging.getLogger(__name__)

#: where a maximum length may come from: the registry entry (never tried at load), or the model's own files
_MAX_TOKENS_SOURCES = ("registry", "tokenizer/config", "config")


@dataclass(frozen=True)
class LoadedNetwork:
    """What a family adapter's `_load()` returns: a loaded network and what the engine must know about it.

    model: the network (a torch.nn.Module, on the device, in the weights dtype) that the adapter's `_call` runs.
    tokenizer: what the adapter's `_tokenize` calls (any object; the engine never calls it directly).
    max_tokens: the usable maximum input length in tokens, special tokens included (`resolve_max_tokens`).
    max_tokens_from: "registry" (the entry's value), or the model file it came from ("tokenizer/config",
    "config"), in which case the load-time check tries it once.
    prefix / suffix: token ids GENEB puts before and after every chunk (CLS, SEP, a species token).
    pad_id: the tokenizer's pad id (the engine replaces one outside the embedding table by 0).
    unk_id: the unknown-token id counted per embed call; None when the tokenizer has none.
    hidden_size / vocab_size / num_embeddings (rows of the input embedding table) / n_layers (blocks): from the
    config or the network, None when unknown (they bound the guards: pooled width, token ids, layer counts).
    uses_attention_mask: whether the forward pass takes the attention mask. pad_sensitive: whether the network
    changes with the padded length despite the mask (BigBird's block-sparse attention; equal-length batches).
    weights_format / weights_sha256: how the weights were read and their content hash (None: not applicable).
    details: further facts of this load that only the adapter's `identity()` reads (architecture, folder).
    Raises ValueError for a `max_tokens_from` outside MAX_TOKENS_SOURCES.
    """

    model: Any
    tokenizer: Any
    max_tokens: int
    max_tokens_from: str = "registry"
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    pad_id: int = 0
    unk_id: int | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    num_embeddings: int | None = None
    n_layers: int | None = None
    uses_attention_mask: bool = True
    pad_sensitive: bool = False
    weights_format: str | None = None
    weights_sha256: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_tokens_from not in _MAX_TOKENS_SOURCES:
            raise ValueError(f"max_tokens_from {self.max_tokens_from!r}: expected one of {_MAX_TOKENS_SOURCES}")
        # lists from a tokenizer become tuples, so the object cannot change after loading
        object.__setattr__(self, "prefix", tuple(int(t) for t in self.prefix))
        object.__setattr__(self, "suffix", tuple(int(t) for t in self.suffix))


@dataclass(frozen=True)
class EngineLayout:
    """What the engine derives once from a `LoadedNetwork` and the extraction settings (`_derive_layout`).

    strand: the strand token an `input_transform` puts after the prefix of every chunk (gLM2), never pooled.
    body_cap: sequence tokens per chunk (max_tokens minus every special token, cut to `length_multiple`).
    pad_id: the pad id used (the loaded one, or 0 when that is outside the embedding table).
    padding_side / bucket_equal_lengths: `token_checks.batching_policy`. elide_causal_mask: a causal model
    padded on the right runs without its mask. layer_resolved: the layer as recorded ("last_hidden_state",
    "hidden_states[i]" or "module:<name>").
    """

    strand: tuple[int, ...]
    body_cap: int
    pad_id: int
    padding_side: str
    bucket_equal_lengths: bool
    elide_causal_mask: bool
    layer_resolved: str


def _derive_layout(loaded: LoadedNetwork, extraction: Extraction, *, strand: list[int], model: str) -> EngineLayout:
    """The engine's layout for `loaded` under `extraction`; `strand` is the tokenized strand prefix ([] if none).

    Raises ValueError when max_tokens leaves no room for sequence tokens, for a batching setting that would pad
    real positions (`batching_policy`), for cls pooling without a CLS token (`check_cls_pooling`) and for a
    layer named by a module the network does not have."""
    body_cap = loaded.max_tokens - len(loaded.prefix) - len(strand) - len(loaded.suffix)
    multiple = extraction.length_multiple
    if multiple:  # every chunk, not only the whole row, must obey the length rule
        body_cap -= body_cap % int(multiple)
    if body_cap < 1:
        raise ValueError(
            f"model {model}: max_tokens {loaded.max_tokens} leaves no room for sequence tokens"
            + (f" in multiples of {multiple}" if multiple else "")
        )
    pad_id = loaded.pad_id
    if loaded.num_embeddings is not None and not 0 <= pad_id < loaded.num_embeddings:
        # pads are masked (or sit after every real token of a causal model): any id in the table will do
        _log.warning(
            "model %s: pad id %d is outside the embedding table (%d rows); padding with id 0",
            model,
            pad_id,
            loaded.num_embeddings,
        )
        pad_id = 0
    side, equal_lengths = checks.batching_policy(
        extraction, model=model, uses_attention_mask=loaded.uses_attention_mask, pad_sensitive=loaded.pad_sensitive
    )
    # A causal model padded on the right never lets a real position see a pad, so its mask changes no real
    # position's state: the batch runs without it, which lets attention take its causal fast path (1.6-6.7%
    # less CPU on Mistral-DNA, identical vectors). The load-time padding-invariance probe runs this same path,
    # so a model mislabelled causal fails at load instead.
    elide = bool(extraction.causal) and side == "right" and loaded.uses_attention_mask
    checks.check_cls_pooling(extraction, model=model, prefix=list(loaded.prefix))
    layer = extraction.layer
    if isinstance(layer, str):
        try:
            loaded.model.get_submodule(layer)
        except AttributeError as err:
            raise ValueError(f"model {model}: no module named {layer!r} for layer extraction") from err
        resolved = f"module:{layer}"
    else:
        resolved = "last_hidden_state" if layer == -1 else f"hidden_states[{layer}]"
    return EngineLayout(tuple(strand), body_cap, pad_id, side, equal_lengths, elide, resolved)


class LoadedView:
    """Read-only attributes of a token-model encoder over its `loaded` network and derived `layout`."""

    loaded: LoadedNetwork
    layout: EngineLayout

    @property
    def model(self) -> Any:
        return self.loaded.model

    @property
    def tokenizer(self) -> Any:
        return self.loaded.tokenizer

    @property
    def max_tokens(self) -> int:
        return self.loaded.max_tokens

    @property
    def max_tokens_from(self) -> str:
        return self.loaded.max_tokens_from

    @property
    def prefix(self) -> list[int]:
        return list(self.loaded.prefix)

    @property
    def suffix(self) -> list[int]:
        return list(self.loaded.suffix)

    @property
    def unk_id(self) -> int | None:
        return self.loaded.unk_id

    @property
    def hidden_size(self) -> int | None:
        return self.loaded.hidden_size

    @property
    def vocab_size(self) -> int | None:
        return self.loaded.vocab_size

    @property
    def num_embeddings(self) -> int | None:
        return self.loaded.num_embeddings

    @property
    def n_layers(self) -> int | None:
        return self.loaded.n_layers

    @property
    def uses_attention_mask(self) -> bool:
        return self.loaded.uses_attention_mask

    @property
    def pad_sensitive(self) -> bool:
        return self.loaded.pad_sensitive

    @property
    def weights_format(self) -> str | None:
        return self.loaded.weights_format

    @property
    def weights_sha256(self) -> str | None:
        return self.loaded.weights_sha256

    @property
    def strand(self) -> list[int]:
        return list(self.layout.strand)

    @property
    def body_cap(self) -> int:
        return self.layout.body_cap

    @property
    def pad_id(self) -> int:
        return self.layout.pad_id

    @property
    def padding_side(self) -> str:
        return self.layout.padding_side

    @property
    def bucket_equal_lengths(self) -> bool:
        return self.layout.bucket_equal_lengths

    @property
    def elide_causal_mask(self) -> bool:
        return self.layout.elide_causal_mask

    @property
    def layer_resolved(self) -> str:
        return self.layout.layer_resolved


_log = logging.getLogger(__name__)


class TokenModelEncoder(LoadedView, ExecutionKnobs):
    """Base class of token-level adapters. See the module docstring for the policy.

    settings: resolved extraction settings (registry.extraction_settings). device: "cpu", "cuda" or "auto".
    batch_size: chunks per forward pass; batch_tokens: when set, padded tokens per forward pass instead
    (length-sorted batches sized to the budget; batch_size is then not used). Both are execution knobs:
    results do not depend on them to 1e-5 in fp32. progress: log rows done, rate and time left of a long call (geneb.encoders.engine.batching).

    Subclasses implement `_load() -> LoadedNetwork` (the network, its tokenizer and the facts the engine reads;
    `geneb.encoders.engine.tokenmodel`), `_tokenize(texts) -> list[list[int]]` (no special tokens) and
    `_call(inputs, want_states) -> output` (anything `get_layer` understands). The engine derives the rest once
    (`_derive_layout`); `loaded` and `layout` are read-only afterwards.
    """

    #: the load-time probes `run_load_checks` runs, in order (recorded by geneb.extract.batch_plan)
    load_check_names: tuple[str, ...] = LOAD_CHECKS

    def __init__(
        self,
        settings: SettingsLike,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        batch_tokens: int | None = None,
        progress: bool = True,
    ) -> None:
        init_execution(
            self, settings, device=device, batch_size=batch_size, batch_tokens=batch_tokens, progress=progress
        )
        self.pad_to_length: int | None = None  # pad every batch to this width (checks and the naive benchmark only)
        self._offsets: list[list[tuple[int, int]]] | None = None  # character spans of the last _tokenize call
        self._fp32_retries = 0  # batches rerun in float32 so far (each embed call reports its own)
        self._captured: list[torch.Tensor] = []
        self.compute_dtype, self.weights_dtype, self.autocast = dtype_policy(
            self.extraction, device=self.device, model=self.model_id
        )
        self.loaded = self._load()
        self.layout = _derive_layout(self.loaded, self.extraction, strand=self._strand_ids(), model=self.model_id)
        if isinstance(self.extraction.layer, str):
            self.model.get_submodule(self.extraction.layer).register_forward_hook(self._hook)
        checks.log_load_policy(self)
        if not checks_deferred():
            self.run_load_checks()

    def run_load_checks(self) -> tuple[str, ...]:
        """Run the load-time probes (vocabulary, maximum length, padding invariance; `token_checks`) and return
        their names. Raises what they raise (DroppedInputError, MaxLengthError, PaddingVarianceError)."""
        checks.check_vocabulary(self)
        checks.check_max_length(self)
        checks.check_padding_invariance(self)
        return self.load_check_names

    # ---- subclass interface -----------------------------------------------------------------------------

    def _load(self) -> LoadedNetwork:  # pragma: no cover - abstract
        """Load the network and its tokenizer (on `device`, in `weights_dtype`) and say what the engine needs."""
        raise NotImplementedError

    def _tokenize(self, texts: list[str]) -> list[list[int]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _strand_ids(self) -> list[int]:
        """Token ids of gLM2's strand token (`input_transform.prefix`): on every chunk, after the tokenizer's own
        prefix, never pooled (see `chunk`); [] without one."""
        transform = self.extraction.input_transform
        strand = transform.prefix if transform is not None else None
        return list(self._tokenize([str(strand)])[0]) if strand else []

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
            "chunking": self.extraction.chunking,  # chunking.chunk_bounds; also in the settings hash
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
        """(chunks, n_chunks, truncated, trimmed bases) of `sequences`: see `chunks_and_unknowns`."""
        return self.chunks_and_unknowns(sequences, rows)[:4]

    def chunks_and_unknowns(
        self, sequences: list[str], rows: list[int]
    ) -> tuple[list[Chunk], np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
        """Sequences -> (chunks, n_chunks (n,), truncated (n,), trimmed bases (n,), (rows with an UNK token, UNK
        tokens)) via geneb.encoders.engine.chunking. Raises LongSequenceError (long_policy error), EmptyPoolError (a row with
        no token), ValueError (cls/last pooling of a multi-chunk row), DroppedInputError (letters dropped, a row of
        UNK only) and UnknownTokenError (any UNK under unk_policy error; geneb.encoders.engine.checks)."""
        ext = self.extraction
        texts, trimmed = model_texts(sequences, rows, ext, model=self.model_id)
        encoded = self._tokenize(texts)
        check_dropped(
            texts,
            rows,
            model=self.model_id,
            offsets=self._offsets,
            unk_id=self.unk_id,
            encoded=encoded,
            token_texts=self._token_texts,
        )
        unknown = count_unknown(
            encoded, rows, model=self.model_id, unk_id=self.unk_id, policy=ext.unk_policy, texts=texts
        )
        chunks, n_chunks, truncated = split_tokens(
            encoded, rows, cap=self.body_cap, extraction=self.extraction, model=self.model_id, chunk=self.chunk
        )
        return chunks, n_chunks, truncated, trimmed, unknown

    def chunk(self, seq_index: int, body: list[int]) -> Chunk:
        """One forward-pass item with this model's special tokens (`geneb.encoders.engine.chunking.make_chunk`)."""
        return make_chunk(
            seq_index,
            body,
            prefix=self.prefix,
            strand=self.strand,
            suffix=self.suffix,
            pool_special=not self.extraction.exclude_special_tokens,
        )

    def _token_texts(self, ids: list[int]) -> list[str] | None:
        """The text of each token id (subclass hook; None when the tokenizer cannot say)."""
        return None

    def batch_tensors(self, batch: list[Chunk]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rectangular (B, T) tensors (ids, attention mask, pool mask) for a batch (`chunking.pad_chunks`),
        padded on `padding_side` to the batch's longest chunk, or to `pad_to_length` when set (used to show
        padding invariance, and by the naive benchmark loop) except under equal-length batching."""
        width = None if self.bucket_equal_lengths else self.pad_to_length
        return pad_chunks(batch, pad_id=self.pad_id, side=self.padding_side, min_width=width)

    # ---- forward ----------------------------------------------------------------------------------------

    def hidden_states(
        self,
        ids: torch.Tensor,
        attn: torch.Tensor,
        *,
        force_fp32: bool = False,
        rows: list[int] | None = None,
        layers: list[int] | None = None,
    ) -> Any:
        """Hidden states (B, T, d) of the configured layer for one rectangular batch; with `layers` (absolute
        hidden-state indices, 0 = embeddings; `geneb.registry.spec`), a list of the (B, T, d) states of each, all
        from this one forward pass. An error of the model's own forward pass (not out-of-memory, which the batch
        step-down handles) is re-raised as ModelForwardError naming the model, the batch shape and `rows`."""
        inputs = {"input_ids": to_device(ids, self.device)}
        if self.uses_attention_mask and not self.elide_causal_mask:
            inputs["attention_mask"] = to_device(attn, self.device)
        layer = self.extraction.layer
        want_states = (isinstance(layer, int) and layer != -1) or layers is not None
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
            raise forward_error(err, model=self.model_id, shape=tuple(ids.shape), rows=rows) from err
        if layers is not None:
            return [get_layer(out, i, model=self.model_id, n_layers=self.n_layers) for i in layers]
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
        bad = nonfinite_rows(hidden, attn)
        if bad and self.autocast:
            self._fp32_retries += 1
            _log.warning(
                "model %s: non-finite %s states for rows %s; retrying the batch in float32 (nonfinite: retry_fp32)",
                self.model_id,
                self.compute_dtype,
                [rows[b] for b in bad],
            )
            hidden = self.hidden_states(ids, attn, force_fp32=True, rows=rows)
            bad = nonfinite_rows(hidden, attn)
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
        method = self.extraction.pooling
        pooled = pool(hidden, pmask.to(hidden.device), method, rows=rows)
        # positions that went into each vector: all pooled ones for mean/max, the one token for cls/last
        used = pmask.sum(dim=1) if method in ("mean", "max") else torch.ones(len(chunks), dtype=torch.long)
        return pooled.cpu(), used

    # ---- embed ------------------------------------------------------------------------------------------

    def check_width(self, width: int) -> None:
        """Refuse a pooled width (of the first batch, every view) that is not the model's hidden size
        (`guards.check_pooled_width`: the vocabulary size means logits were pooled)."""
        check_pooled_width(
            width,
            model=self.model_id,
            hidden_size=self.hidden_size,
            vocab_size=self.vocab_size,
            expected=self.extraction.embedding_dim,
            num_embeddings=self.num_embeddings,
        )

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Pooled embeddings float32 (n, d) in input order, with per-row n_tokens (pooled positions, all chunks),
        n_chunks, truncated and trimmed_bases, and the call's counters (UNK tokens, step-downs, fp32 retries).
        Raises TypeError for a bare string."""
        sequences, rows = sequence_batch(sequences, rows, model=self.model_id)
        chunks, n_chunks, truncated, trimmed, unknown = self.chunks_and_unknowns(sequences, rows)
        retries_before = self._fp32_retries
        lengths = [len(c.ids) for c in chunks]
        plan = largest_first(
            plan_chunks(
                lengths,
                batch_size=self.batch_size,
                batch_tokens=self.batch_tokens,
                equal_length=self.bucket_equal_lengths,
            ),
            lengths,
        )
        rows_of_chunks = np.array([c.seq_index for c in chunks], dtype=np.int64)
        acc = RowAccumulator(len(sequences), self.extraction.pooling)
        bar = split_progress(desc or f"model {self.model_id}", rows_of_chunks, lengths, enabled=self.progress)

        def run(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
            batch = [chunks[j] for j in idx]
            return self._forward_batch(batch, [rows[c.seq_index] for c in batch])

        def done(idx: list[int], result: tuple[torch.Tensor, torch.Tensor]) -> None:
            pooled, ntok = result
            if not acc.started:
                self.check_width(int(pooled.shape[1]))
            acc.add(rows_of_chunks[idx], pooled.numpy(), ntok.numpy())
            bar.done(idx)

        free = torch.cuda.empty_cache if self.device.startswith("cuda") else None
        runner = StepDownRunner(
            run, what=f"model {self.model_id}", free=free, row_of=lambda j: rows[chunks[j].seq_index]
        )
        try:
            runner.run(plan, done)
        finally:
            bar.close()
        vectors, counts = acc.result()
        counters = EmbedCounters(*unknown, runner.step_downs, self._fp32_retries - retries_before)
        return EmbedResult(vectors, counts, n_chunks, truncated, trimmed, counters)
