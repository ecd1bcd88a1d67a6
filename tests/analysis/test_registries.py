"""The analysis and figure registries are the one list: a dummy analysis or figure registered here (and
nowhere else) is computed, written, drawn, listed in the rules' outputs and shown in the report; every
registered figure has its caption file; no rule file names a protocol."""

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from geneb.analysis import registry
from geneb.analysis.steps import analyses_step
from geneb.figures import registry as figure_registry
from geneb.figures.registry import render_figures
from geneb.figures.style import empty_figure
from geneb.probe.protocols import _PROTOCOL_NAMES
from geneb.report.html import build_report
from geneb.report.render import report_captions
from geneb.tables.scores import AnalysisInputError
from workflow_support import dry_run


def _dummy_tables(ctx):
    """A regime-scope analysis: the number of complete models."""
    ctx.summary["dummy_complete"] = len(ctx.complete)
    return {"dummy_counts": pd.DataFrame({"n_complete": [len(ctx.complete)], "flag": [True]})}


def _dummy_figure(tables, display, *, protocol, regime):
    fig = empty_figure(f"{len(tables['dummy_counts'])} dummy rows ({protocol}, {regime})")
    fig.geneb_not_applicable = None  # a figure with content: the report shows it, not its one line
    return fig


def register_analysis(analysis: registry.Analysis) -> None:
    """Add `analysis` to the registry (after the others), as a line added to `_ANALYSES` would. Raises
    AnalysisInputError when its name or one of its tables is taken."""
    if analysis.name in {a.name for a in registry._ANALYSES}:
        raise AnalysisInputError(f"analysis {analysis.name!r} is registered already")
    taken = set(analysis.tables) & set(registry.analysis_tables())
    if taken:
        raise AnalysisInputError(f"analysis {analysis.name!r}: tables {sorted(taken)} are another analysis' tables")
    registry._ANALYSES.append(analysis)


def register_figure(figure: figure_registry.Figure) -> None:
    """Add `figure` to the registry (drawn after the others). Raises ValueError when its name is taken."""
    if figure.name in figure_registry.figure_names():
        raise ValueError(f"figure {figure.name!r} is registered already")
    figure_registry._FIGURES.append(figure)


DUMMY_ANALYSIS = registry.Analysis(
    "dummy",
    "regime",
    _dummy_tables,
    ("dummy_counts",),
    (registry.Section("Dummy counts per regime", "dummy_counts", only="flag"),),
)
DUMMY_FIGURE = figure_registry.Figure("dummy_figure", _dummy_figure, ("dummy_counts",), "dummy_figure.rst")


@pytest.fixture
def registered(monkeypatch):
    """The dummy analysis and figure registered for one test (the registries restored afterwards)."""
    monkeypatch.setattr(registry, "_ANALYSES", list(registry._ANALYSES))
    monkeypatch.setattr(figure_registry, "_FIGURES", list(figure_registry._FIGURES))
    register_analysis(DUMMY_ANALYSIS)
    register_figure(DUMMY_FIGURE)


def test_a_registered_analysis_and_figure_reach_every_output_and_the_report(registered, synthetic_run, tmp_path, repo):
    assert registry.analysis_tables()[-1] == "dummy_counts" and "dummy_counts" in registry.all_tables()
    assert registry.report_sections()[-1].table == "dummy_counts"
    assert figure_registry.figure_names()[-1] == "dummy_figure"
    root = synthetic_run["root"]
    tables, figs = tmp_path / "tables", tmp_path / "figures"
    shutil.copytree(root / "results" / "tables", tables)
    analyses_step(
        scores=str(tables / "scores.parquet"),
        models_yaml=str(root / "config" / "models.yaml"),
        tasks_tsv=str(root / "config" / "tasks.tsv"),
        analysis_config=synthetic_run["config"]["analysis"],
        view="geneb",
        predictions_root=str(root / "results" / "predictions"),
        outdir=str(tables),
    )
    dummy = pd.read_parquet(tables / "dummy_counts.parquet")
    # one row per (protocol, regime), tagged, with provenance, like every analysis table
    assert sorted(dummy["regime"]) == ["10shot", "1shot", "full"] and set(dummy["protocol"]) == {"geneb-paper"}
    assert (dummy["n_complete"] == 6).all() and {"settings_hash", "input_sha256"} <= set(dummy.columns)
    pngs = render_figures(tables, figs)
    assert [p.name for p in pngs][-1] == "dummy_figure.png" and (figs / "dummy_figure.pdf").exists()
    captions_dir = tmp_path / "captions"
    shutil.copytree(repo / "workflow" / "report", captions_dir)
    (captions_dir / "dummy_figure.rst").write_text("The dummy figure's caption.\n")
    out = build_report(
        tables, figs, tmp_path / "r.html", config={}, captions=report_captions(captions_dir), protocol="geneb-paper"
    )
    text = out.read_text()
    assert "<h3>Dummy counts per regime</h3>" in text and '<img alt="dummy_figure figure"' in text
    assert "The dummy figure&#x27;s caption." in text
    # sections keep registry order: the dummy's after the registered ones, before the fixed tail
    assert text.index("Recommendation per category") < text.index("Dummy counts") < text.index("Contaminated cells")


def test_registering_a_taken_name_is_refused(registered):
    with pytest.raises(ValueError, match="registered already"):
        register_analysis(DUMMY_ANALYSIS)
    with pytest.raises(ValueError, match="another analysis"):
        register_analysis(registry.Analysis("other", "run", _dummy_tables, ("scale",)))
    with pytest.raises(ValueError, match="registered already"):
        register_figure(DUMMY_FIGURE)
    with pytest.raises(ValueError, match="scope"):
        registry.Analysis("x", "task", _dummy_tables, ("x",))


def test_the_workflow_takes_its_outputs_from_the_registries(repo, shared, tmp_path, monkeypatch):
    """The dummy registered before the rule files are read (here, then the workflow parsed in this process:
    `dry_run`, what `snakemake -n report published` plans; the registries restored afterwards): the analyses,
    figures and report rules list its outputs, with nothing else changed."""
    monkeypatch.setattr(registry, "_ANALYSES", list(registry._ANALYSES))
    monkeypatch.setattr(figure_registry, "_FIGURES", list(figure_registry._FIGURES))
    register_analysis(registry.Analysis("dummy", "run", _dummy_tables, ("dummy_counts",)))
    register_figure(figure_registry.Figure("dummy_figure", _dummy_figure, ("dummy_counts",), "heatmap.rst"))
    (tmp_path / "shared").symlink_to(shared)
    work = tmp_path / "work"
    work.mkdir()
    (work / "config").symlink_to(repo / "config")
    # each rule's planned outputs and its reason (which names the inputs another job makes), as `snakemake -n` shows
    jobs = {job["rule"]: "\n".join([*job["output"], job["reason"]]) for job in dry_run(work, "report", "published")}
    for rule, folder in (("analyses", "results"), ("published_analyses", "results/published")):
        assert f"{folder}/tables/dummy_counts.parquet" in jobs[rule]
    for rule, folder in (("paper_figures", "results"), ("published_figures", "results/published")):
        assert f"{folder}/figures/dummy_figure.png" in jobs[rule] and f"{folder}/figures/dummy_figure.pdf" in jobs[rule]
    assert "results/figures/dummy_figure.png" in jobs["report"]


def test_every_registered_figure_has_a_caption_file_and_reads_produced_tables(repo):
    produced = set(registry.all_tables())
    for fig in figure_registry.figures():
        assert (repo / "workflow" / "report" / fig.caption).is_file(), fig.name
        assert set(fig.inputs) <= produced, fig.name
        assert callable(fig.draw.resolve()), fig.name  # a registry names its functions, imported on first call
    for analysis in registry.analyses():
        assert callable(analysis.compute.resolve()), analysis.name


def test_reading_the_registries_imports_no_analysis_or_drawing_code(repo):
    """What the workflow imports while it plans (the `geneb` imports of workflow/rules/common.smk) leaves
    scipy.stats, matplotlib and the analysis and figure modules unimported: every `snakemake` start, and every
    cluster job's, would pay for them (docs/performance.md, "Workflow start-up")."""
    common = (repo / "workflow" / "rules" / "common.smk").read_text().splitlines()
    imports = [line for line in common if line.startswith(("from geneb", "import geneb"))]
    assert any("analysis.registry" in line for line in imports) and any("figures.registry" in line for line in imports)
    heavy = ("scipy.stats", "matplotlib", "geneb.analysis.controls", "geneb.analysis.ranking", "geneb.figures.paper")
    code = "\n".join(["import sys", *imports, f"print(sorted(m for m in {heavy!r} if m in sys.modules))"])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_rule_file_names_a_protocol(repo):
    files = [repo / "Snakefile", *sorted((repo / "workflow" / "rules").glob("*.smk"))]
    for path in files:
        text = path.read_text()
        for name in _PROTOCOL_NAMES:
            assert name not in text, f"{path.name} names the protocol {name!r}; take it from config or the registry"
