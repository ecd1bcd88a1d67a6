"""Small or lopsided runs do not crash the analyses, figures or report: what cannot be computed is skipped
and said so (one model; only the full regime; every model a baseline)."""

import json
from pathlib import Path

import pytest

from geneb.analysis import run
from geneb.analysis.registry import all_tables
from geneb.figures.registry import figure_names, render_figures
from geneb.report.html import build_report
from geneb.report.render import report_captions
from geneb.tables.scores import check_scores
from synth import analysis_config, grid, meta, scores_from_values

CATS = {"p1": "Promoters", "e1": "Enhancers"}
CAPTIONS = Path(__file__).resolve().parents[2] / "workflow" / "report"


@pytest.mark.parametrize("models", [["only"], ["kmer-3", "kmer-4", "kmer-5"]])
def test_tiny_runs_produce_every_output(models, tmp_path):
    scores = check_scores(
        scores_from_values(grid(models, list(CATS), lambda m, t, r: 0.3 + 0.1 * models.index(m)), CATS)
    )
    m = meta({k: {"params": 0, "pretraining_domain": "none"} for k in models})
    tables, summary = run.run_analyses(
        scores,
        model_meta=m,
        task_meta=None,
        declared_pairs=[],
        settings=run.resolve_settings(analysis_config({"bootstrap": {"n_resamples": 100}})),
    )
    full = summary["protocols"]["geneb-paper"]["regimes"]["full"]
    assert "only 0 models with both a positive parameter count and an aggregate score" in full["scale_skipped"]
    assert tables["fewshot_drops"].empty and tables["scale"].empty
    run.write_tables(tables, summary, tmp_path / "tables", all_tables())
    render_figures(tmp_path / "tables", tmp_path / "figures")
    out = build_report(
        tmp_path / "tables", tmp_path / "figures", tmp_path / "r.html", config={}, captions=report_captions(CAPTIONS)
    )
    text = out.read_text()
    # every figure: drawn, or (nothing to plot in so small a run) the one line saying why
    assert text.count("data:image/png;base64,") + text.count("<p class='na' id='fig-") == len(figure_names()) == 11
    assert "<p class='na' id='fig-scale'><b>Scale (figure)</b>: no scale analysis" in text
    assert json.loads((tmp_path / "tables" / "analysis_summary.json").read_text())["protocols"]
