"""geneb.run.views at plan time: a run without `views:` keeps every model's settings and hash (no re-extraction);
`views:` adds the resolved views to the settings (a new cache folder); a request a model cannot serve stops the plan,
in a dry run too, naming every such model and its valid choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geneb.registry.extraction import extraction_hash
from geneb.registry.views import ViewError
from geneb.run.plan import plan_run
from geneb.run.views import plan_views

REPO = Path(__file__).resolve().parents[2]
LOCAL = ["kmer-3to6", "random-esm-tiny", "mistral-dna-1m-ft-prom", "hyenadna-tiny-1k-ft-anticapt"]


class Log:
    def info(self, msg: str) -> None: ...

    def warning(self, msg: str) -> None: ...


def _plan(config):
    return plan_run(config, main_process=False, conda_deploys=True, partial_file=None, log=Log())


@pytest.fixture
def config(shared, monkeypatch):
    import yaml

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg.update(
        task_source=str(shared / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(REPO / "config" / "models.yaml"),
        model_revisions=str(REPO / "config" / "model_revisions.yaml"),
        tasks=["gue_emp_h3__devtrain"],
        models=list(LOCAL),
    )
    return cfg


def test_no_views_keeps_the_recorded_settings_hashes(config):
    """The quickstart's models plan to the hashes recorded in tests/registry/extraction_hashes.json."""
    recorded = json.loads((REPO / "tests" / "registry" / "extraction_hashes.json").read_text())
    plan = _plan(config)
    assert all("views" not in plan.extraction_settings[m] for m in LOCAL)
    checked = [m for m in LOCAL if f"as-is/config/{m}" in recorded]  # builtins: no folder fingerprint
    assert checked == ["kmer-3to6", "random-esm-tiny"]
    for model in checked:
        assert plan.extraction_hashes[model] == recorded[f"as-is/config/{model}"], model
    assert plan.model_depth("mistral-dna-1m-ft-prom") == {"n_layers": 4}
    assert plan.model_depth("kmer-3to6") == {"n_layers": None}


def test_views_name_the_cache_folder(config):
    plain = _plan(config)
    config["views"] = {"layers": "all", "poolings": ["mean", "last", "max"], "reverse_complement": [False, True]}
    plan = _plan(config)
    for model in LOCAL:
        views = plan.extraction_settings[model]["views"]
        assert plan.extraction_hashes[model] != plain.extraction_hashes[model]
        assert plan.extraction_hashes[model] == extraction_hash(plan.extraction_settings[model])
        assert views["layers"] == ([] if model == "kmer-3to6" else list(range(views["n_layers"] + 1)))
    assert plan.extraction_settings["hyenadna-tiny-1k-ft-anticapt"]["views"]["n_layers"] == 2


@pytest.mark.parametrize(
    ("views", "message"),
    [
        ({"layers": [7]}, r"model random-esm-tiny: layer 7 is beyond its depth \(2 blocks.*\n.*model mistral-dna"),
        ({"poolings": ["cls"]}, r"model mistral-dna-1m-ft-prom: pooling 'cls'.*valid poolings for it: mean, max, last"),
        ({"layers": []}, "views.layers is empty"),
        ({}, "views: the section is empty"),
    ],
)
def test_bad_views_stop_the_plan_naming_model_and_choices(config, views, message):
    config["views"] = views
    with pytest.raises(ViewError, match=message):
        _plan(config)


def test_plan_views_is_the_identity_without_views():
    settings = {"m": {"model": "m", "family": "kmer", "extraction": {}}}
    assert plan_views({}, settings) == settings
