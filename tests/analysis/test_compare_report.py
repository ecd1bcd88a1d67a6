"""The comparison with the paper's published models as a result a paper can cite: task-resampled CIs and rank
intervals (geneb.analysis.published.compare_intervals), the comparison step's four outputs, the self-contained report
(geneb.report.compare) and the `geneb` CLI reading the comparison table."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from geneb.analysis import published
from geneb.analysis.inputs import load_task_meta
from geneb.analysis.steps import compare_step, reference_caveats
from geneb.cli.app import main
from geneb.report.compare import build_compare_report
from geneb.tables.scores import check_scores
from synth import analysis_config, grid, scores_from_values

USER = ["kmer-3to6", "mistral-dna-1m-ft-prom"]  # the second lists gue_prom_core_all in trained_on_tasks


@pytest.fixture(scope="module")
def paper(shared):
    return shared / "reference" / "geneb_paper"


@pytest.fixture(scope="module")
def catalogue(repo):
    return load_task_meta(repo / "config" / "tasks.tsv")


@pytest.fixture(scope="module")
def same_split(catalogue) -> list[str]:
    """The 13 mirrored GUE tasks whose split is the paper's (config/compare_published.yaml)."""
    rows = catalogue[(catalogue["same_split_as_geneb"] == "yes") & (catalogue["task_set"] == "mirror")]
    return sorted(rows.index)


def _user_scores(catalogue, tasks) -> pd.DataFrame:
    cats = catalogue.loc[tasks, "category"].to_dict()
    values = grid(
        USER,
        tasks,
        lambda m, t, r: 0.3 + 0.04 * (len(t) % 7) + (0.2 if m == USER[0] else 0.0) - 0.1 * ("shot" in r),
        regimes=("full", "10shot", "1shot"),
    )
    return check_scores(scores_from_values(values, cats))


@pytest.fixture(scope="module")
def compared(tmp_path_factory, repo, paper, catalogue, same_split):
    """compare_step on a synthetic run of USER on the 13 same-split tasks: {output name: path}."""
    out = tmp_path_factory.mktemp("compare")
    tables = out / "results" / "tables"
    tables.mkdir(parents=True)
    _user_scores(catalogue, same_split).to_parquet(tables / "scores.parquet", index=False)
    published.import_published(paper).to_parquet(out / "published.parquet", index=False)
    paths = {name: tables / f"compare_published{suffix}" for name, suffix in COMPARE_OUTPUTS.items()}
    compare_step(
        scores=str(tables / "scores.parquet"),
        published_scores=str(out / "published.parquet"),
        models_yaml=str(repo / "config" / "models.yaml"),
        tasks_tsv=str(repo / "config" / "tasks.tsv"),
        analysis_config=analysis_config({"bootstrap": {"n_resamples": 200}}),
        board_out=str(paths["board"]),
        left_out=str(paths["left"]),
        tasks_out=str(paths["tasks"]),
        summary_out=str(paths["summary"]),
    )
    return paths


COMPARE_OUTPUTS = {
    "board": ".parquet",
    "left": "_left_out.parquet",
    "tasks": "_tasks.parquet",
    "summary": "_summary.json",
}


def test_the_comparison_has_task_resampled_cis_rank_intervals_and_roles(compared):
    board = pd.read_parquet(compared["board"])
    full = board[board["regime"] == "full"]
    ranked = full[full["rank"].notna() & full["category"].isin(["macro", "Promoters", "TF Binding"])]
    assert len(ranked) and ranked["ci_low"].notna().all() and ranked["rank_low"].notna().all()
    assert (ranked["ci_low"] <= ranked["value"] + 1e-12).all() and (ranked["value"] <= ranked["ci_high"] + 1e-12).all()
    assert (ranked["rank_low"] <= ranked["rank"]).all() and (ranked["rank"] <= ranked["rank_high"]).all()
    # one best model per category, tied ones beside it; the contaminated user model is incomplete: no interval
    roles = full.groupby("category")["role"].apply(lambda r: (r == "best").sum())
    assert (roles[roles.index != "micro"] == 1).all()
    macro = full[full["category"] == "macro"].set_index("model")
    assert pd.isna(macro.loc[USER[1], "rank"]) and pd.isna(macro.loc[USER[1], "rank_low"])
    assert macro.loc[USER[0], "rank"] >= 1 and macro.loc[USER[0], "origin"] == "user"
    assert set(board["confidence"]) == {0.95} and set(board["tie_rule"]) == {"overlap"}


def test_the_per_task_table_and_the_summary_say_what_was_compared(compared, same_split):
    per_task = pd.read_parquet(compared["tasks"])
    full = per_task[per_task["regime"] == "full"]
    assert full["task"].nunique() == 13 and (full.groupby("task")["model"].size() >= 41).all()
    assert set(full.loc[full["model"] == USER[0], "origin"]) == {"user"}
    summary = json.loads(Path(compared["summary"]).read_text())
    assert summary["n_paper_tasks"] == 100 and len(summary["compared_tasks"]) == 13
    assert summary["user_models"] == sorted(USER) and summary["contamination"] == "exclude"
    assert {c["model"] for c in summary["reference_caveats"]} >= {"BioFM-265M", "space"}


def test_reference_caveats_name_the_published_models_geneb_corrects(repo):
    rows = reference_caveats(str(repo / "config" / "models.yaml"), {"BioFM-265M", "kmer-3to6"})
    assert [r["model"] for r in rows] == ["BioFM-265M"]
    assert rows[0]["page"] == "docs/adapters/biofm.md" and "mask" in rows[0]["change"]


def test_the_comparison_report_states_coverage_left_out_tasks_rules_and_caveat(compared, tmp_path, repo):
    out = tmp_path / "report" / "compare_published.html"
    png = tmp_path / "figures" / "compare_published.png"
    scores = compared["board"].with_name("scores.parquet")
    build_compare_report(
        compared["board"],
        compared["left"],
        compared["tasks"],
        compared["summary"],
        out,
        png,
        scores_path=scores,
        models_yaml=repo / "config" / "models.yaml",
    )
    text = out.read_text()
    assert png.is_file() and png.with_suffix(".pdf").is_file() and "data:image/png;base64," in text
    # every regime: its section, its figure (files beside the full one), its placement of each user model
    for regime in ("full", "10shot", "1shot"):
        assert f"<h2 id='regime-{regime}'>" in text and f"<b>kmer-3to6</b> ({regime}): rank" in text
        assert f"Your models per category ({regime})" in text
    assert png.with_name("compare_published_10shot.png").is_file() and text.count("data:image/png;base64,") == 3
    # each user model's run card (the site's model card: registry facts, provenance) and how to cite
    cards = text[text.index("id='run-cards'") : text.index("id='left-out'")]
    for model in USER:
        assert f"<h3>{model}</h3>" in cards
    assert "<dt>pretraining_data</dt>" in cards and "<dt>params</dt><dd>720,000</dd>" in cards
    assert "<dt>trained_on_tasks</dt><dd>gue_prom_core_all, " in cards and "(&#x27;" not in cards
    cite = text[text.index("id='cite'") : text.index("id='provenance'")]
    assert "GENEB version" in cite and "GENEB commit" in cite and "config hash" in cite
    assert "arXiv 2606.04525" in cite and "darlednik/GENEB" in cite and "published scores sha256" in cite
    assert "13 of 100 paper tasks, 3 of 13 categories (Promoters 4 of " in text
    assert re.search(
        r"<b>kmer-3to6</b> \(full\): rank \d+ of \d+ ranked models by macro MCC \(0\.\d{3}; 95% CI 0\.\d{3}–0\.\d{3} "
        r"and rank interval \d+–\d+ from 200 bootstrap resamples of the compared tasks\)",
        text,
    )
    assert "<b>mistral-dna-1m-ft-prom</b> (full): not ranked" in text
    assert "1 task for mistral-dna-1m-ft-prom: left out: the model was trained on this task: gue_prom_core_all" in text
    assert "87 tasks for all models: paper task not run by the user" in text
    assert "Contamination rule</b> (analysis.contamination: exclude)" in text and "trained_on_tasks" in text
    assert "Reference extractor</b>" in text and "BioFM-265M" in text and "docs/adapters/" in text
    # provenance once, not a column of every table
    assert "<th>geneb_commit</th>" not in text and text.count("commit ") >= 1
    assert "⚠" not in text  # nothing is stale


def test_the_cli_reads_the_comparison_table_like_its_own(compared, capsys):
    table = str(compared["board"])
    assert main(["recommend", "--table", table, "--category", "macro"]) == 0
    out = capsys.readouterr().out
    assert re.match(r"macro, full: \S+ \(MCC 0\.\d{4}, 95% CI 0\.\d{4}-0\.\d{4}\)", out), out
    assert "confidence level unknown" not in out
    assert main(["leaderboard", "--table", table, "--category", "Promoters"]) == 0
    out = capsys.readouterr().out
    assert "rank_low" in out and "kmer-3to6" in out and "origin" in out


def test_the_cli_and_the_comparison_report_warn_when_a_table_is_older_than_its_input(compared, tmp_path, capsys):
    scores = Path(compared["board"]).with_name("scores.parquet")
    later = Path(compared["board"]).stat().st_mtime + 60
    os.utime(scores, (later, later))
    try:
        assert main(["leaderboard", "--table", str(compared["board"])]) == 0
        err = capsys.readouterr().err
        assert f"geneb: warning: {compared['board']} is older than its input {scores}" in err
        out = tmp_path / "r.html"
        build_compare_report(
            compared["board"], compared["left"], compared["tasks"], compared["summary"], out, tmp_path / "f.png"
        )
        assert f"⚠ {compared['board']} is older than its input {scores}" in out.read_text()
    finally:
        os.utime(scores, (later - 120, later - 120))


def test_compare_intervals_leaves_a_single_task_category_without_an_interval(catalogue, paper):
    pub = published.import_published(paper)
    task = "gue_prom_core_all"
    user = check_scores(scores_from_values(grid(["mine"], [task], lambda m, t, r: 0.5), {task: "Promoters"}))
    board, _ = published.compare_with_published(user, pub, catalogue)
    board = published.compare_intervals(board, board.attrs["cells"], confidence=0.9, n_resamples=100, seed=1)
    prom = board[(board["regime"] == "full") & (board["category"] == "Promoters")]
    assert prom["ci_low"].isna().all() and prom["rank_low"].isna().all()
    assert (prom["role"] == "best").sum() == 1 and set(board["confidence"]) == {0.9}


def test_a_model_line_without_an_interval_says_why():
    import pandas as pd

    from geneb.report.compare import _model_lines

    row = {"protocol": "geneb-paper", "regime": "full", "category": "macro", "model": "mine", "rank": 1, "value": 0.5,
           "ci_low": float("nan"), "ci_high": float("nan"), "rank_low": float("nan"), "rank_high": float("nan"),
           "interval_reason": "a macro over one category: nothing to resample", "n_tasks": 1, "n_tasks_expected": 1}  # fmt: skip
    summary = {"user_models": ["mine"], "confidence": 0.95, "n_resamples": 1000}
    (line,) = _model_lines(pd.DataFrame([row]), summary, "geneb-paper", "full")
    assert "95% CI no interval and rank interval no interval from 1000 bootstrap resamples" in line
    assert line.endswith("; a macro over one category: nothing to resample)")
