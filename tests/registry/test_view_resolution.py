"""geneb.registry.spec: what a `views:` request resolves to for a model (absolute hidden-state indices, poolings,
rc), its depth read without torch, and the refusals that name the model and the valid choices."""

from __future__ import annotations

import pytest

from geneb.registry.spec import (
    ExtractionSettings,
    ViewError,
    ViewSet,
    layer_depth,
    model_depth,
    resolve_views,
    view_id,
)


def _resolve(request, *, n_layers=4, causal=False, token_states=True, layer=-1, pooling="mean"):
    return resolve_views(
        request,
        model="m",
        token_states=token_states,
        n_layers=n_layers,
        causal=causal,
        registry_layer=layer,
        registry_pooling=pooling,
    )


@pytest.mark.parametrize(
    ("layers", "want"),
    [
        ("all", (0, 1, 2, 3, 4)),
        ([-1], (4,)),
        ([0, -5], (0,)),
        ([0.5], (2,)),
        (["100%", "0%", "50%"], (0, 2, 4)),
        ([1, 1, 3], (1, 3)),
    ],
)
def test_layers_resolve_to_absolute_indices(layers, want):
    assert _resolve({"layers": layers}).layers == want


def test_defaults_are_the_registry_view_and_ids_are_stable():
    views = _resolve({}, layer=-1, pooling="max")
    assert [v.id for v in views.views()] == ["L4|max|rc0"]
    views = _resolve({"layers": [0, -1], "poolings": ["first", "mean"], "reverse_complement": [True, False]})
    assert views.poolings == ("cls", "mean") and views.reverse_complement == (False, True)
    assert view_id(12, "mean", False) == "L12|mean|rc0" and view_id(None, "mean", True) == "L-|mean|rc1"
    assert layer_depth(2, 4) == 0.5 and layer_depth(None, None) is None
    assert ViewSet.from_dict(views.as_dict()) == views


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"layers": [5]}, "model m: layer 5 is beyond its depth .*valid: 0 .. 4"),
        ({"layers": [-6]}, "model m: layer -6 is beyond its depth"),
        ({"layers": ["150%"]}, "outside"),
        ({"layers": []}, "model m: views.layers is empty"),
        ({"poolings": []}, "views.poolings is empty"),
        ({"poolings": ["median"]}, "unknown pooling 'median'; valid: mean, max, last, cls"),
    ],
)
def test_bad_requests_are_refused_naming_the_model_and_choices(request_, message):
    with pytest.raises(ViewError, match=message):
        _resolve(request_)


def test_cls_refused_for_a_causal_model_naming_valid_poolings():
    with pytest.raises(ViewError, match="model m: pooling 'first'.*valid poolings for it: mean, max, last"):
        _resolve({"poolings": ["mean", "first"]}, causal=True)
    assert _resolve({"poolings": ["cls"]}, causal=False).poolings == ("cls",)


def test_unknown_depth_and_module_name_layers_are_refused():
    with pytest.raises(ViewError, match="depth is not known before loading"):
        _resolve({"layers": "all"}, n_layers=None)
    with pytest.raises(ViewError, match="module name"):
        _resolve({"layers": [0]}, layer="blocks.3")


def test_kmer_counts_get_one_view_per_rc():
    views = _resolve(
        {"layers": "all", "poolings": ["mean", "last", "max"], "reverse_complement": [False, True]},
        token_states=False,
        n_layers=None,
    )
    assert [v.id for v in views.views()] == ["L-|mean|rc0", "L-|mean|rc1"]


def test_model_depth_from_builtin_config_and_local_folder(shared, tmp_path):
    assert model_depth({"builtin": {"config": {"num_hidden_layers": 2}}}) == 2
    assert model_depth({"source": {"path": str(shared / "models" / "hyenadna-tiny-1k-ft-anticapt")}}) == 2
    assert model_depth({"source": {"path": str(shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom")}}) == 4
    assert model_depth({"source": {"kind": "hub", "hub_id": "x/y"}}) is None
    assert model_depth({"source": {"path": str(tmp_path)}}) is None


def test_settings_round_trip_with_and_without_views():
    base = {"model": "m", "family": "kmer", "extraction": {"pooling": "mean"}}
    assert ExtractionSettings.from_dict(base).as_dict() == base and "views" not in base
    views = _resolve({"layers": "all"}).as_dict()
    with_views = {**base, "views": views}
    typed = ExtractionSettings.from_dict(with_views)
    assert typed.views is not None and typed.views.layers == (0, 1, 2, 3, 4)
    assert typed.as_dict() == with_views
