"""The shared engine behind every token-level model adapter (transformers, remote code, Evo): batches and the
forward pass.

An adapter only loads its model and says how to tokenize and how to call it; everything that decides what
the embedding *is* lives in the engine, once (the BEND lesson: per-model chunking and special-token code is
where bugs live). Policy (docs/footguns.md), by module:

* `geneb.encoders.engine.chunking`: the model-input text (`length_multiple` trim, `input_transform`), token-level
  chunks that each carry the special tokens (GENEB adds them itself; `long_policy` chunk_mean, truncate or
  error beyond the model's true maximum), and the padded batch tensors.
* `geneb.encoders.engine.dropped_letters`: letters dropped without a token are an error naming the row; UNK
  tokens are counted.
* `geneb.encoders.engine.token_checks`: the maximum length (tried once at load), the batching settings, and the
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
from typing import Any

import numpy as np
import torch

from geneb.core.errors import (
    ExtractionError,
    LayerNotExposedError,
    NonFiniteEmbeddingError,
)
from geneb.encoders.engine import token_checks
from geneb.encoders.engine.accumulate import RowAccumulator
from geneb.encoders.engine.batching import StepDownRunner, is_out_of_memory, largest_first, plan_chunks
from geneb.encoders.engine.chunking import Chunk, make_chunk, model_texts, pad_chunks, split_tokens
from geneb.encoders.engine.dropped_letters import check_dropped, count_unknown
from geneb.encoders.engine.execution import ExecutionKnobs, dtype_policy, init_execution, to_device
from geneb.encoders.engine.guards import check_pooled_width, check_token_ids, forward_error, get_layer, nonfinite_rows
from geneb.encoders.engine.loaded import LoadedNetwork, LoadedView, derive_layout
from geneb.encoders.engine.pooling import pool
from geneb.encoders.engine.progress import split_progress
from geneb.encoders.protocol import LOAD_CHECKS, EmbedCounters, EmbedResult, checks_deferred, sequence_batch
from geneb.registry.settings import SettingsLike

log = logging.getLogger(__name__)


class TokenModelEncoder(LoadedView, ExecutionKnobs):
    """Base class of token-level adapters. See the module docstring for the policy.

    settings: resolved extraction settings (registry.extraction_settings). device: "cpu", "cuda" or "auto".
    batch_size: chunks per forward pass; batch_tokens: when set, padded tokens per forward pass instead
    (length-sorted batches sized to the budget; batch_size is then not used). Both are execution knobs:
    results do not depend on them to 1e-5 in fp32. progress: log rows done, rate and time left of a long call (geneb.encoders.engine.progress).

    Subclasses implement `_load() -> LoadedNetwork` (the network, its tokenizer and the facts the engine reads;
    `geneb.encoders.engine.loaded`), `_tokenize(texts) -> list[list[int]]` (no special tokens) and
    `_call(inputs, want_states) -> output` (anything `get_layer` understands). The engine derives the rest once
    (`derive_layout`); `loaded` and `layout` are read-only afterwards.
    """

    #: the load-time probes `run_load_checks` runs, in order (recorded by geneb.extract.load_checks)
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
        self.layout = derive_layout(self.loaded, self.extraction, strand=self._strand_ids(), model=self.model_id)
        if isinstance(self.extraction.layer, str):
            self.model.get_submodule(self.extraction.layer).register_forward_hook(self._hook)
        token_checks.log_load_policy(self)
        if not checks_deferred():
            self.run_load_checks()

    def run_load_checks(self) -> tuple[str, ...]:
        """Run the load-time probes (vocabulary, maximum length, padding invariance; `token_checks`) and return
        their names. Raises what they raise (DroppedInputError, MaxLengthError, PaddingVarianceError)."""
        token_checks.check_vocabulary(self)
        token_checks.check_max_length(self)
        token_checks.check_padding_invariance(self)
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
        UNK only) and UnknownTokenError (any UNK under unk_policy error; geneb.encoders.engine.dropped_letters)."""
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
        hidden-state indices, 0 = embeddings; `geneb.registry.views`), a list of the (B, T, d) states of each, all
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
            log.warning(
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
