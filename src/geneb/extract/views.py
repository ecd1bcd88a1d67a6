"""The views of one split (`geneb.registry.views`): every requested layer and pooling of a token model from one
forward pass per chunk and strand (`geneb.encoders.engine.multiview`), the reverse-complement views as the mean of
the two strands' vectors (a second pass, over the reverse strand, only when a view asks for it), and the k-mer
counts' one view per rc value. What the extraction step (`geneb.extract.step`) writes into the views groups of the
(model, task) file (`geneb.extract.cache`, `ViewArrays`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import numpy as np

from geneb.encoders.protocol import EmbedResult, Encoder
from geneb.extract.cache import ViewArrays
from geneb.registry.views import View, ViewSet, layer_depth
from geneb.tasks.hygiene import reverse_complement

__all__ = ["embed_split_views", "view_attrs"]

#: a view's (layer, pooling): the layer None for an encoder without layers (k-mer counts)
LayerPooling = tuple[int | None, str]


def _reverse_inputs(encoder: Encoder, sequences: list[str]) -> list[str]:
    # the reverse strand of the bases the forward pass keeps (a length_multiple rule trims the forward 3' end)
    multiple = int((encoder.extraction.length_multiple if encoder.extraction is not None else None) or 1)
    return [reverse_complement(s[: len(s) - len(s) % multiple]) for s in sequences]


def _one_strand(
    encoder: Encoder, sequences: list[str], rows: list[int], views: ViewSet, desc: str | None
) -> tuple[EmbedResult, dict[LayerPooling, np.ndarray]]:
    """(EmbedResult with an empty (n, 0) embeddings, {(layer, pooling): float32 (n, d)}) of one strand."""
    if not views.layers:  # no token states (k-mer counts): the encoder's one vector
        res = encoder.embed(sequences, rows, desc=desc)
        return replace(res, embeddings=np.zeros((len(sequences), 0), np.float32)), {(None, "mean"): res.embeddings}
    from geneb.encoders.engine.multiview import embed_views  # torch: only for token models
    from geneb.encoders.engine.tokenmodel import TokenModelEncoder

    specs = [(layer, pooling) for pooling in views.poolings for layer in views.layers]
    # layers are resolved for token models only (geneb.registry.views: none without token states)
    base, vectors = embed_views(cast(TokenModelEncoder, encoder), sequences, rows, specs, desc=desc)
    by_spec: dict[LayerPooling, np.ndarray] = dict(zip(specs, vectors))
    return base, by_spec


def embed_split_views(
    encoder: Encoder, sequences: list[str], rows: list[int], views: ViewSet, *, desc: str | None = None
) -> tuple[EmbedResult, dict[str, np.ndarray]]:
    """Embed one split for every view of `views`: (the forward strand's EmbedResult, with an empty (n, 0)
    `embeddings`, `truncated` set where either strand was, step-downs and float32 retries of both strands;
    {view id: float32 (n, d)} in `views.views()` order). rc views are (forward + reverse) / 2 per (layer,
    pooling), as the registry's `rc: average`. Raises what the encoder raises (see `embed_views`)."""
    base, fwd = _one_strand(encoder, sequences, rows, views, desc)
    rev: dict[LayerPooling, np.ndarray] = {}
    if True in views.reverse_complement:
        rev_base, rev = _one_strand(
            encoder, _reverse_inputs(encoder, sequences), rows, views, f"{desc} (RC)" if desc else None
        )
        counters = replace(
            base.counters,
            step_downs=base.counters.step_downs + rev_base.counters.step_downs,
            fp32_retries=base.counters.fp32_retries + rev_base.counters.fp32_retries,
        )
        base = replace(base, truncated=base.truncated | rev_base.truncated, counters=counters)
    out: dict[str, np.ndarray] = {}
    for view in views.views():
        layer_pool = (view.layer, view.pooling)
        x = fwd[layer_pool] if not view.reverse_complement else (fwd[layer_pool] + rev[layer_pool]) / 2
        out[view.id] = np.asarray(x, dtype=np.float32)
    return base, out


def view_attrs(view: View, views: ViewSet, *, key_hash: str, settings_hash: str) -> dict[str, Any]:
    """The HDF5 attributes of one view's group: its id, layer (-1 in the file for an encoder without layers; HDF5
    has no null), n_layers (-1 likewise), layer_depth (NaN likewise), pooling, reverse_complement, and `view_key`
    (JSON: the file's settings hash and key hash with the view), its full key."""
    depth = layer_depth(view.layer, views.n_layers)
    spec = {"layer": view.layer, "pooling": view.pooling, "reverse_complement": view.reverse_complement}
    return {
        "view_id": view.id,
        "layer": -1 if view.layer is None else int(view.layer),
        "n_layers": -1 if views.n_layers is None else int(views.n_layers),
        "layer_depth": float("nan") if depth is None else depth,
        "pooling": view.pooling,
        "reverse_complement": bool(view.reverse_complement),
        "view_key": {"settings_hash": settings_hash, "key_hash": key_hash, "view": spec},
    }


def view_arrays(
    views: ViewSet, per_split: dict[str, dict[str, np.ndarray]], *, key_hash: str, settings_hash: str
) -> dict[str, ViewArrays]:
    """{view id: ViewArrays(its attributes, {split: float32 (n, d)})} from {split: {view id: vectors}}."""
    return {
        view.id: ViewArrays(
            view_attrs(view, views, key_hash=key_hash, settings_hash=settings_hash),
            {split: arrays[view.id] for split, arrays in per_split.items()},
        )
        for view in views.views()
    }
