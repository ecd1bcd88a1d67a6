"""Views: the layers, poolings and reverse-complement settings one forward pass per chunk embeds at once.

A run without a `views:` section in the config has one view per model, the registry's own (layer, pooling, rc):
its extraction settings, cache path and vectors are today's. With `views:`, the settings of every model carry a
resolved `views` entry (absolute hidden-state indices, the poolings and rc values), so the settings hash, the
cache folder and the extraction rerun key name the views; one HDF5 file per (model, task) holds them all
(`geneb.extract.views`). Torch-free: the workflow resolves and checks views while it plans.

Layers are hidden-state indices as in transformers: 0 = the embedding output, i = the output of block i, so a model
of n blocks has n + 1 of them, 0 .. n, and the registry's `layer: -1` (the last hidden state) is index n. A
requested layer is an integer (negative counts from the end: -1 = n), a relative depth d (a float strictly between 0
and 1, or a string "NN%" for any depth including "0%" and "100%": round(d x n); the config's numbers are
normalised, 1.0 becomes 1, so a float 0.0 or 1.0 would read as a layer index), or `all`. Poolings: mean, max, last (the last pooled position of the row's last chunk), cls (alias first: the
first position of the row's first chunk, the model's prefix token; refused for causal models, where it has seen
nothing but itself). Encoders without token states (k-mer counts) have no layers and one pooling, the spectrum
itself (pooling "mean": the mean of the one-hot k-mer indicators); they get one view per rc value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the poolings a view may name (`first` is read as `cls`)
VIEW_POOLINGS = ("mean", "max", "last", "cls")
POOLING_ALIASES = {"first": "cls"}
#: the view id of every score row of a run without `views:`
DEFAULT_VIEW_ID = "default"
#: the view id of the rows whose layer the inner-CV layer rule chose (per pooling and rc; `layer` names the choice)
INNER_CV_LAYER = "cv"
#: the config keys of a model's depth, in the order they are tried (transformers' names for the block count)
DEPTH_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


class ViewError(ValueError):
    """A `views:` request a model cannot serve (layer beyond its depth, a pooling it cannot do, an empty list); the
    message names the model and the valid choices."""


@dataclass(frozen=True)
class View:
    """One view of a model's embeddings. layer: absolute hidden-state index (None: the encoder has no layers);
    pooling: mean | max | last | cls; reverse_complement: average with the reverse strand's vector."""

    layer: int | None
    pooling: str
    reverse_complement: bool

    @property
    def id(self) -> str:
        """The stable view id, e.g. "L12|mean|rc0" ("L-" for an encoder without layers)."""
        return view_id(self.layer, self.pooling, self.reverse_complement)


def view_id(layer: int | str | None, pooling: str, reverse_complement: bool) -> str:
    """ "L<layer>|<pooling>|rc<0|1>"; layer None -> "L-" (no layers), a string (e.g. INNER_CV_LAYER) as given."""
    return f"L{'-' if layer is None else layer}|{pooling}|rc{int(bool(reverse_complement))}"


@dataclass(frozen=True)
class ViewSet:
    """The resolved views of one model (the `views` entry of its extraction settings). layers: absolute
    hidden-state indices, ascending, or () for an encoder without layers; poolings; reverse_complement: the rc
    values, False first; n_layers: the model's block count (None without layers). With more than one layer, the
    probe also scores the layer the inner-CV rule chooses (`geneb.probe.views`)."""

    layers: tuple[int, ...]
    poolings: tuple[str, ...]
    reverse_complement: tuple[bool, ...]
    n_layers: int | None

    def views(self) -> list[View]:
        """Every (layer, pooling, rc) combination, rc outermost (one strand's pass serves all its views)."""
        layers: Sequence[int | None] = self.layers or (None,)
        return [View(layer, p, rc) for rc in self.reverse_complement for p in self.poolings for layer in layers]

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able mapping that goes into the extraction settings (and so into the settings hash)."""
        return {
            "layers": list(self.layers),
            "poolings": list(self.poolings),
            "reverse_complement": list(self.reverse_complement),
            "n_layers": self.n_layers,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ViewSet:
        """The inverse of `as_dict`. Raises KeyError for a missing key."""
        return cls(
            layers=tuple(int(x) for x in data["layers"]),
            poolings=tuple(str(x) for x in data["poolings"]),
            reverse_complement=tuple(bool(x) for x in data["reverse_complement"]),
            n_layers=None if data["n_layers"] is None else int(data["n_layers"]),
        )


def layer_depth(layer: int | None, n_layers: int | None) -> float | None:
    """layer / n_layers in [0, 1] (None without layers or an unknown depth)."""
    if layer is None or not n_layers:
        return None
    return float(layer) / float(n_layers)


def absolute_layer(layer: int, n_layers: int | None) -> int | None:
    """The absolute hidden-state index of a registry layer index (-1 -> n_layers); None when -1 and the depth is
    unknown."""
    if layer >= 0:
        return int(layer)
    return None if n_layers is None else n_layers + 1 + int(layer)


def model_depth(settings: Mapping[str, Any]) -> int | None:
    """The block count of a model from its resolved extraction settings, torch-free: a builtin's `config`, or the
    `config.json` of a local folder (`source.path`). None when it cannot be known without loading (a hub model, a
    config without a depth key) or the model has no layers (no torch family)."""
    builtin = settings.get("builtin") or {}
    cfg = builtin.get("config") if isinstance(builtin, Mapping) else None
    if not isinstance(cfg, Mapping):
        path = (settings.get("source") or {}).get("path")
        cfg = None
        if path and (Path(path) / "config.json").is_file():
            cfg = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    for key in DEPTH_KEYS:
        value = (cfg or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _resolve_layer(item: Any, n: int, model: str) -> list[int]:
    valid = f"valid: 0 .. {n}, -{n + 1} .. -1, a depth strictly between 0 and 1 or 'NN%', or all"
    if item == "all":
        return list(range(n + 1))
    if isinstance(item, str) and item.endswith("%"):
        try:
            item = float(item[:-1]) / 100.0
        except ValueError:
            raise ViewError(f"model {model}: views.layers item {item!r} is not a layer ({valid})") from None
        if not 0.0 <= item <= 1.0:
            raise ViewError(f"model {model}: relative depth {item} is outside [0, 1] ({valid})")
        return [int(round(item * n))]
    if isinstance(item, bool) or not isinstance(item, (int, float)):
        raise ViewError(f"model {model}: views.layers item {item!r} is not a layer ({valid})")
    if isinstance(item, float):
        if not 0.0 <= item <= 1.0:
            raise ViewError(f"model {model}: relative depth {item} is outside [0, 1] ({valid})")
        return [int(round(item * n))]
    index = item if item >= 0 else n + 1 + item
    if not 0 <= index <= n:
        raise ViewError(f"model {model}: layer {item} is beyond its depth ({n} blocks, {n + 1} hidden states; {valid})")
    return [int(index)]


def resolve_views(
    request: Mapping[str, Any],
    *,
    model: str,
    token_states: bool,
    n_layers: int | None,
    causal: bool,
    registry_layer: int | str,
    registry_pooling: str,
) -> ViewSet:
    """Resolve a `views:` request for one model. request: the config section (keys layers, poolings,
    reverse_complement; absent keys: the registry's layer, the registry's pooling, [false]).
    token_states: whether the encoder has per-token hidden states (False: k-mer counts); n_layers: its block count
    (`model_depth`); causal: its extraction's `causal`; registry_layer / registry_pooling: its registry settings.

    Raises ViewError naming the model and the valid choices for: an empty list; a layer beyond the depth; a depth
    that is unknown when planning (a hub model: name the layers in a registry entry of a local copy instead) or a
    layer given by module name; cls/first pooling of a causal model (its first token has seen only itself) or an
    unknown pooling.
    """
    for key in ("layers", "poolings", "reverse_complement"):
        value = request.get(key)
        if isinstance(value, (list, tuple)) and not value:
            raise ViewError(f"model {model}: views.{key} is empty; give at least one value or leave the key out")
    rc_request = request.get("reverse_complement", [False])
    rc = sorted({bool(x) for x in (rc_request if isinstance(rc_request, (list, tuple)) else [rc_request])})
    if not token_states:  # k-mer counts: no layers, the one pooling of the spectrum
        return ViewSet((), ("mean",), tuple(rc), None)
    poolings: list[str] = []
    for item in request.get("poolings") or [registry_pooling]:
        name = POOLING_ALIASES.get(str(item), str(item))
        if name not in VIEW_POOLINGS:
            raise ViewError(f"model {model}: unknown pooling {item!r}; valid: mean, max, last, cls (first)")
        if name == "cls" and causal:
            valid = ", ".join(p for p in VIEW_POOLINGS if p != "cls")
            raise ViewError(
                f"model {model}: pooling {item!r} reads the first token, which in this causal model has seen only "
                f"itself (no CLS summary token); valid poolings for it: {valid}"
            )
        if name not in poolings:
            poolings.append(name)
    if isinstance(registry_layer, str):
        raise ViewError(
            f"model {model}: its layer is a module name ({registry_layer!r}); views.layers needs hidden-state "
            "indices, so leave this model out of a views run"
        )
    layers_request = request.get("layers", [registry_layer])
    items = layers_request if isinstance(layers_request, (list, tuple)) else [layers_request]
    if n_layers is None:
        raise ViewError(
            f"model {model}: its depth is not known before loading (no config.json in a local folder); views.layers "
            "cannot be checked when planning: run it from a local copy (source kind local)"
        )
    layers = sorted({index for item in items for index in _resolve_layer(item, n_layers, model)})
    return ViewSet(tuple(layers), tuple(poolings), tuple(rc), n_layers)
