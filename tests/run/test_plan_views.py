"""geneb.run.checks at plan time: a run without `views:` keeps every model's settings and hash (no re-extraction);
`views:` adds the resolved views to the settings (a new cache folder); a request a model cannot serve stops the plan,
in a dry run too, naming every such model and its valid choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geneb.registry.load import extraction_hash
from geneb.registry.spec import ViewError
from geneb.run.checks import plan_views
from geneb.run.plan import plan_run

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
    assert plan.probe_views("geneb-paper", "mistral-dna-1m-ft-prom") == {"n_layers": 4}
    assert plan.probe_views("geneb-paper", "kmer-3to6") == {"n_layers": None}


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


def test_views_protocols_leave_the_others_with_the_registry_view(config):
    """views.protocols: the listed protocols probe every view, the others each model's registry view (its layer
    as an absolute index, its pooling, rc off); the extraction (settings hash) is the same either way."""
    config["protocols"] = ["geneb-paper", "geneb-strict"]
    config["views"] = {"layers": "all", "poolings": ["mean", "max"], "reverse_complement": [False, True]}
    every = _plan(config)
    config["views"]["protocols"] = ["geneb-paper"]
    plan = _plan(config)
    assert plan.extraction_hashes == every.extraction_hashes
    assert plan.probe_views("geneb-paper", "mistral-dna-1m-ft-prom") == {"n_layers": 4}
    assert plan.probe_views("geneb-strict", "mistral-dna-1m-ft-prom") == {"n_layers": 4, "views": ["L4|mean|rc0"]}
    assert plan.probe_views("geneb-strict", "hyenadna-tiny-1k-ft-anticapt")["views"] == ["L2|mean|rc0"]
    assert plan.probe_views("geneb-strict", "kmer-3to6") == {"n_layers": None, "views": ["L-|mean|rc0"]}
    assert every.probe_views("geneb-strict", "mistral-dna-1m-ft-prom") == {"n_layers": 4}


@pytest.mark.parametrize(
    ("views", "message"),
    [
        (
            {"layers": [0], "protocols": ["geneb-paper"]},
            r"model mistral-dna-1m-ft-prom: protocol\(s\) \['geneb-strict'\] probe only its registry view L4\|mean\|rc0",
        ),
        (
            {"reverse_complement": [True], "protocols": ["geneb-paper"]},
            r"model random-esm-tiny: .*registry view L2\|mean\|rc0.*do not include",
        ),
        (
            {"layers": "all", "protocols": ["geneb-strict"]},
            r"views.protocols names \['geneb-strict'\].*valid: \['geneb-paper'\]",
        ),
    ],
)
def test_views_protocols_refused_when_planning(config, views, message):
    config["protocols"] = ["geneb-paper", "geneb-strict"] if views["protocols"] == ["geneb-paper"] else ["geneb-paper"]
    config["views"] = views
    with pytest.raises(ViewError, match=message):
        _plan(config)
