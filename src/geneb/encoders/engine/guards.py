"""Checks that stand between a model's raw output and the embedding cache.

Each guard turns a known silent failure into an error that names the model (docs/footguns.md):

* `get_layer`: one way to take a layer out of any model output (ModelOutput, dict, tuple).
* `check_token_ids`: every token id must index the embedding table (a padded table is normal).
* `check_pooled_width`: the pooled width must be the hidden size, never the vocabulary size (logits).
* `forward_error`: an error of the model's own forward pass, re-raised naming the model, the batch shape and
  the rows.
* `hidden_modules`: modules a remote code would misuse (triton on CPU) are made unimportable while it
  loads (the installed-package checks are `geneb.registry.requirements`).

torch is imported inside the functions that need it, so the registry can use the version guard without it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from geneb.core.errors import (
    LayerNotExposedError,
    LooksLikeLogitsError,
    ModelForwardError,
    TokenIdRangeError,
)


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
