"""The analysis, figure and report rules as Snakemake runs them: the DAG of the named targets, and the
published-results chain executed end to end (import -> leaderboard -> analyses -> figures -> report)."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from geneb.analysis.registry import analysis_tables
from geneb.figures.registry import figure_names
from workflow_support import dry_run

TARGETS = ["leaderboard", "analyses", "paper_figures", "report", "compare_published", "submissions", "published"]


@pytest.fixture(scope="module")
def workdir(repo, shared, tmp_path_factory):
    """A run folder beside a `shared` link (the config's ../shared paths), with the repo's config, and a
    Snakefile that includes every rule file of the repository."""
    base = tmp_path_factory.mktemp("wf")
    (base / "shared").symlink_to(shared)
    work = base / "work"
    work.mkdir()
    (work / "config").symlink_to(repo / "config")
    rules = sorted(p.name for p in (repo / "workflow" / "rules").glob("*.smk") if p.name != "common.smk")
    includes = "\n".join(f'include: "{repo}/workflow/rules/{r}"' for r in ["common.smk", *rules])
    (work / "Snakefile").write_text(f'configfile: "{repo}/config/config.yaml"\n{includes}\n')
    return work


def _snakemake(work: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(work / "Snakefile"), "-d", str(work), "--cores", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_named_targets_resolve_to_a_dag(workdir):
    """Planned in process (`dry_run`: the repository's Snakefile, which includes every rule file too, in the run
    folder; what `snakemake -n <targets>` plans)."""
    rules = {job["rule"] for job in dry_run(workdir, *TARGETS)}
    for rule in (
        "import_published",
        "published_leaderboard",
        "published_analyses",
        "published_figures",
        "published_report",
        "leaderboard",
        "analyses",
        "paper_figures",
        "report",
        "compare_published",
        "submission",
    ):
        assert rule in rules, rule


def test_published_chain_runs_and_writes_every_output(workdir):
    """A real run of its own (the published results, not a run's probes; the shared finished run has none), then
    `snakemake --report` (Snakemake's command, a subprocess)."""
    overlay = workdir / "fast.yaml"
    overlay.write_text("analysis:\n  bootstrap:\n    n_resamples: 200\n")
    r = _snakemake(workdir, "published", "--configfile", str(overlay))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    out = workdir / "results" / "published"
    for name in analysis_tables():
        assert (out / "tables" / f"{name}.parquet").exists(), name
    for name in figure_names():
        assert (out / "figures" / f"{name}.png").exists() and (out / "figures" / f"{name}.pdf").exists()
    html = (out / "report" / "geneb_report.html").read_text()
    # every figure drawn, or (nothing to plot for the published models: no layers, twins) its one line why not
    shown = html.count("data:image/png;base64,")
    assert shown + html.count("<p class='na' id='fig-") == len(figure_names()) and shown >= 6
    scale = pd.read_parquet(out / "tables" / "scale.parquet").query("regime == 'full'").set_index("subset")
    assert round(scale.loc["all", "rho"], 3) == 0.573 and round(scale.loc["excluding", "rho"], 3) == 0.694
    reproduced = pd.read_parquet(out / "tables" / "reproduce_paper.parquet").set_index("claim")
    assert reproduced["passed"].sum() == len(reproduced) - 2 and "Reproducing the paper" in html
    assert (workdir / "logs" / "analysis" / "published_analyses.log").exists()
    # the same outputs through `snakemake --report`
    r = _snakemake(workdir, "published", "--configfile", str(overlay), "--report", str(workdir / "report.zip"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    names = zipfile.ZipFile(workdir / "report.zip").namelist()
    assert sum(n.endswith(".png") for n in names) == len(figure_names()) and any(
        n.endswith("geneb_report.html") for n in names
    )
