"""The `analysis:` config: schema defaults equal the library defaults, the shipped config validates, captions
of the two reports agree, settings are merged and checked."""

import copy

import pytest
import yaml

from geneb.analysis import run
from geneb.analysis.metadata import entries
from geneb.analysis.tables import AnalysisInputError
from geneb.report.captions import CAPTIONS


def _validate(cfg, repo):
    from snakemake.utils import validate

    validate(cfg, str(repo / "workflow" / "schemas" / "config.schema.yaml"))
    return cfg


def test_schema_defaults_equal_the_library_defaults(repo):
    cfg = _validate({"tasks": ["x"], "models": ["y"]}, repo)
    assert cfg["analysis"] == run.DEFAULTS


def test_shipped_config_validates_and_sets_the_papers_choices_for_the_published_view(repo):
    cfg = _validate(yaml.safe_load((repo / "config" / "config.yaml").read_text()), repo)
    pub = run.resolve_settings(cfg["analysis"], "published")
    assert [e["model"] for e in pub["scale"]["rho_exclusions"]] == ["evo-1-131k-base"]
    assert len(pub["scale"]["in_domain"]["exclude_models"]) == 4 and pub["scale"]["in_domain"]["exclude_domains"] == []
    own = run.resolve_settings(cfg["analysis"], "geneb")
    assert own["scale"]["rho_exclusions"] == [] and "prokaryote" in own["scale"]["in_domain"]["exclude_domains"]


def test_bad_analysis_settings_are_refused_by_the_schema(repo):
    from snakemake.exceptions import WorkflowError

    for bad in ({"contamination": "ignore"}, {"bootstrap": {"n_resamples": 10}}, {"scale": {"rho_exclusions": [{"model": "x"}]}}):
        with pytest.raises(WorkflowError):
            _validate({"tasks": ["x"], "models": ["y"], "analysis": copy.deepcopy(bad)}, repo)


def test_merge_and_entries():
    s = run.merge_settings(run.DEFAULTS, {"bootstrap": {"seed": 1}})
    assert s["bootstrap"] == {"n_resamples": 1000, "seed": 1, "resample_tasks": True} and run.DEFAULTS["bootstrap"]["seed"] == 20260604
    with pytest.raises(AnalysisInputError, match="reason"):
        entries([{"model": "x"}], "analysis.scale.rho_exclusions")
    with pytest.raises(AnalysisInputError):
        run.resolve_settings({}, "other")


def test_rst_captions_equal_the_html_captions(repo):
    for name, text in CAPTIONS.items():
        assert (repo / "workflow" / "report" / f"{name}.rst").read_text().strip() == text
