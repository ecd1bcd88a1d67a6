"""The typed contract between a family adapter and the token-model engine.

A family's `_load()` returns one frozen `LoadedNetwork`: the network, its tokenizer and the facts the engine needs
about them (special tokens, pad and unknown ids, maximum length and where it came from, widths, attention mask).
The engine derives everything else from it in one place, `derive_layout`, into a frozen `EngineLayout` (the
strand token, the body cap, the padding side, equal-length batching, the causal-mask elision, the layer), and
`LoadedView` shows both as read-only attributes of the encoder. Nothing is set on the encoder as a side effect
of loading.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from geneb.encoders.engine import token_checks
from geneb.registry.settings import Extraction

log = logging.getLogger(__name__)

#: where a maximum length may come from: the registry entry (never tried at load), or the model's own files
MAX_TOKENS_SOURCES = ("registry", "tokenizer/config", "config")


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
        if self.max_tokens_from not in MAX_TOKENS_SOURCES:
            raise ValueError(f"max_tokens_from {self.max_tokens_from!r}: expected one of {MAX_TOKENS_SOURCES}")
        # lists from a tokenizer become tuples, so the object cannot change after loading
        object.__setattr__(self, "prefix", tuple(int(t) for t in self.prefix))
        object.__setattr__(self, "suffix", tuple(int(t) for t in self.suffix))


@dataclass(frozen=True)
class EngineLayout:
    """What the engine derives once from a `LoadedNetwork` and the extraction settings (`derive_layout`).

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


def derive_layout(loaded: LoadedNetwork, extraction: Extraction, *, strand: list[int], model: str) -> EngineLayout:
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
        log.warning(
            "model %s: pad id %d is outside the embedding table (%d rows); padding with id 0",
            model,
            pad_id,
            loaded.num_embeddings,
        )
        pad_id = 0
    side, equal_lengths = token_checks.batching_policy(
        extraction, model=model, uses_attention_mask=loaded.uses_attention_mask, pad_sensitive=loaded.pad_sensitive
    )
    # A causal model padded on the right never lets a real position see a pad, so its mask changes no real
    # position's state: the batch runs without it, which lets attention take its causal fast path (1.6-6.7%
    # less CPU on Mistral-DNA, identical vectors). The load-time padding-invariance probe runs this same path,
    # so a model mislabelled causal fails at load instead.
    elide = bool(extraction.causal) and side == "right" and loaded.uses_attention_mask
    token_checks.check_cls_pooling(extraction, model=model, prefix=list(loaded.prefix))
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
