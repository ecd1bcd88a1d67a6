"""The `analysis:` config: the schema is the one home of the defaults, the shipped config validates, every
caption the reports show has its file, settings are merged and checked."""

import copy

import pytest
import yaml

from geneb.analysis import run
from geneb.analysis.inputs import entries
from geneb.figures.registry import figures
from geneb.report.render import LEADERBOARD_CAPTION
from geneb.tables.scores import AnalysisInputError


def _validate(cfg, repo):
    from snakemake.utils import validate

    validate(cfg, str(repo / "workflow" / "schemas" / "config.schema.yaml"))
    return cfg


def test_the_schema_supplies_every_setting_and_an_unvalidated_section_is_refused(repo):
    cfg = _validate({"tasks": ["x"], "models": ["y"]}, repo)
    s = run.resolve_settings(cfg["analysis"], "geneb")
    assert set(run._SETTING_KEYS) <= set(s) and s["bootstrap"] == {
        "n_resamples": 1000,
        "seed": 20260604,
        "resample_tasks": True,
    }
    assert s["scale"]["in_domain"]["exclude_domains"] == ["prokaryote", "metagenome", "virus"]
    with pytest.raises(AnalysisInputError, match="validated against"):
        run.resolve_settings({"bootstrap": {"n_resamples": 100}})
    assert not hasattr(run, "DEFAULTS")  # one home: the schema


def test_shipped_config_validates_and_sets_the_papers_choices_for_the_published_view(repo):
    cfg = _validate(yaml.safe_load((repo / "config" / "config.yaml").read_text()), repo)
    pub = run.resolve_settings(cfg["analysis"], "published")
    assert [e["model"] for e in pub["scale"]["rho_exclusions"]] == ["evo-1-131k-base"]
    assert len(pub["scale"]["in_domain"]["exclude_models"]) == 4 and pub["scale"]["in_domain"]["exclude_domains"] == []
    own = run.resolve_settings(cfg["analysis"], "geneb")
    assert own["scale"]["rho_exclusions"] == [] and "prokaryote" in own["scale"]["in_domain"]["exclude_domains"]


def test_bad_analysis_settings_are_refused_by_the_schema(repo):
    from snakemake.exceptions import WorkflowError

    for bad in (
        {"contamination": "ignore"},
        {"bootstrap": {"n_resamples": 10}},
        {"scale": {"rho_exclusions": [{"model": "x"}]}},
    ):
        with pytest.raises(WorkflowError):
            _validate({"tasks": ["x"], "models": ["y"], "analysis": copy.deepcopy(bad)}, repo)


def test_merge_and_entries(repo):
    defaults = _validate({"tasks": ["x"], "models": ["y"]}, repo)["analysis"]
    s = run._merge_settings(defaults, {"bootstrap": {"seed": 1}})
    assert (
        s["bootstrap"] == {"n_resamples": 1000, "seed": 1, "resample_tasks": True}
        and defaults["bootstrap"]["seed"] == 20260604
    )
    with pytest.raises(AnalysisInputError, match="reason"):
        entries([{"model": "x"}], "analysis.scale.rho_exclusions")
    with pytest.raises(AnalysisInputError):
        run.resolve_settings(defaults, "other")


def test_every_registered_figure_and_the_leaderboard_have_a_caption_file(repo):
    for file in (LEADERBOARD_CAPTION, *(f.caption for f in figures())):
        path = repo / "workflow" / "report" / file
        assert path.is_file() and path.read_text().strip(), file


@pytest.mark.parametrize("where", ["own", "published"])
def test_a_misspelled_model_in_an_exclusion_list_stops_the_workflow(repo, tmp_path, where):
    """`evo-1-131k` for `evo-1-131k-base` would exclude nothing and change rho and the reversals silently. Planned
    in process (`dry_run`: `snakemake -n --configfile <overlay>` in a folder of its own raises the same error)."""
    from snakemake.exceptions import WorkflowError

    from workflow_support import dry_run

    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    scale = cfg["analysis"]["scale"] if where == "own" else cfg["analysis"]["published"]["scale"]
    scale["in_domain"]["exclude_models"] = [{"model": "evo-1-131k", "reason": "typo"}]
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        cfg[key] = str(repo / cfg[key])
    overlay = tmp_path / "config.yaml"
    overlay.write_text(yaml.safe_dump(cfg))
    with pytest.raises(WorkflowError) as err:
        dry_run(tmp_path, configfiles=(overlay.name,))
    prefix = "analysis.scale" if where == "own" else "analysis.published.scale"
    # the error names the config file (as given, relative to the run folder), the setting and its entry
    assert (
        f"{overlay.name}: {prefix}.in_domain.exclude_models: entry 1: model 'evo-1-131k' is not in the registry; "
        "did you mean ['evo-1-131k-base'" in str(err.value)
    )
