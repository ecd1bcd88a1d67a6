"""Plan-time resolution of the config's `views:` section (`geneb.registry.spec`): every selected model's views
resolved and checked before any job, or one error naming every model that cannot serve them and its valid choices.
Torch-free (called by `geneb.run.plan.plan_run`, in dry runs too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geneb.registry.families import family as model_family
from geneb.registry.spec import View, ViewError, ViewSet, absolute_layer, model_depth, resolve_views


def plan_views(config: Mapping[str, Any], settings: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{model: its resolved extraction settings}, with a `views` entry (`ViewSet.as_dict`) added to each when the
    config has a `views:` section; the settings unchanged (same mapping, same hash) when it has none.

    Raises ViewError listing every model whose views cannot be served (a layer beyond its depth, cls/first
    pooling of a causal model, an empty list, reverse_complement with long_policy truncate, a depth unknown
    before loading), each line naming the model and its valid choices.
    """
    request = config.get("views")
    if request is None:
        return dict(settings)
    if not request:
        raise ViewError("views: the section is empty; name layers, poolings or reverse_complement, or leave it out")
    out: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for model, resolved in settings.items():
        ext = resolved["extraction"]
        try:
            views = resolve_views(
                request,
                model=model,
                token_states=model_family(resolved["family"], model=model).uses_torch,
                n_layers=model_depth(resolved),
                causal=bool(ext.get("causal", False)),
                registry_layer=ext.get("layer", -1),
                registry_pooling=str(ext.get("pooling", "mean")),
            )
        except ViewError as err:
            problems.append(str(err))
            continue
        if True in views.reverse_complement and ext.get("long_policy") == "truncate":
            problems.append(
                f"model {model}: reverse_complement true with long_policy truncate would average two different "
                "windows of a long row; valid reverse_complement for it: [false]"
            )
            continue
        problem = _registry_view_problem(config, model, resolved, views)
        if problem:
            problems.append(problem)
            continue
        out[model] = {**resolved, "views": views.as_dict()}
    problems += _unknown_view_protocols(config)
    if problems:
        raise ViewError(
            f"views: {len(problems)} model(s) cannot serve the requested views:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def view_protocols(config: Mapping[str, Any]) -> list[str]:
    """The protocols that probe every view (`views.protocols`; default: every protocol of the run). The run's other
    protocols probe each model's registry view only (`probed_views`): the protocol comparison of the sensitivity
    analysis needs nothing else, and each view costs one set of probe fits per protocol."""
    request = config.get("views") or {}
    return list(request.get("protocols") or config.get("protocols") or [])


def registry_view(settings: Mapping[str, Any], views: ViewSet) -> View:
    """The view of a model's registry settings in a views run: its `layer` as an absolute index (None for an encoder
    without layers), its `pooling` ("mean" for k-mer spectra) and the reverse complement off."""
    ext = settings["extraction"]
    if not views.layers:
        return View(None, "mean", False)
    return View(absolute_layer(int(ext.get("layer", -1)), views.n_layers), str(ext.get("pooling", "mean")), False)


def probed_views(config: Mapping[str, Any], settings: Mapping[str, Any], protocol: str) -> list[str] | None:
    """The view ids a probe job of `protocol` scores for a model with resolved extraction `settings`: None (every
    view of its embedding file) in a run without `views:` or when `protocol` is in `view_protocols`; otherwise
    [the model's registry view id] (`registry_view`)."""
    if config.get("views") is None or protocol in view_protocols(config):
        return None
    return [registry_view(settings, ViewSet.from_dict(settings["views"])).id]


def _registry_view_problem(
    config: Mapping[str, Any], model: str, settings: Mapping[str, Any], views: ViewSet
) -> str | None:
    """A model whose registry view is not among its views while some protocol probes that view only."""
    narrow = [p for p in config.get("protocols") or [] if p not in view_protocols(config)]
    if not narrow:
        return None
    wanted = registry_view(settings, views)
    if wanted in views.views():
        return None
    return (
        f"model {model}: protocol(s) {narrow} probe only its registry view {wanted.id} (views.protocols leaves them "
        f"out), which its views {[v.id for v in views.views()]} do not include; add that layer, pooling and "
        "reverse_complement false to views:, or list the protocol(s) under views.protocols"
    )


def _unknown_view_protocols(config: Mapping[str, Any]) -> list[str]:
    run = list(config.get("protocols") or [])
    unknown = [p for p in (config.get("views") or {}).get("protocols") or [] if p not in run]
    if not unknown:
        return []
    return [f"views.protocols names {unknown}, which the run does not probe; valid: {run}"]
