"""Plan-time resolution of the config's `views:` section (`geneb.registry.views`): every selected model's views
resolved and checked before any job, or one error naming every model that cannot serve them and its valid choices.
Torch-free (called by `geneb.run.plan.plan_run`, in dry runs too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geneb.registry.families import family as model_family
from geneb.registry.views import ViewError, model_depth, resolve_views


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
        out[model] = {**resolved, "views": views.as_dict()}
    if problems:
        raise ViewError(
            f"views: {len(problems)} model(s) cannot serve the requested views:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out
