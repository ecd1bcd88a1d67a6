"""The leaderboard site built from analysed runs: its pages and embedded tables, several runs with the conflict
rule, a tier column shown when the leaderboard has one, the refused output folder, and `geneb site`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from site_support import copy_results, real_run, rewrite_table  # noqa: F401

from geneb.cli.app import main
from geneb.core import integrity
from geneb.site.build import build_site
from geneb.site.collect import SiteConflictError
from geneb.tables.scores import AnalysisInputError

SPEC = re.compile(r'<script type="application/json" data-table="([^"]+)">(.*?)</script>', re.S)


def specs(page: Path) -> dict[str, dict]:
    """{table id: spec} of the tables embedded in a site page."""
    return {k: json.loads(v.replace("<\\/", "</")) for k, v in SPEC.findall(page.read_text())}


@pytest.fixture(scope="module")
def results(synthetic_run) -> Path:
    return synthetic_run["root"] / "results"


def test_site_pages_hold_every_leaderboard_row_and_a_page_per_model_and_task(results, tmp_path):
    index = build_site([results], tmp_path / "site")
    site = index.parent
    board = integrity.read_parquet(results / "tables" / "leaderboard.parquet")
    cells = integrity.read_parquet(results / "tables" / "leaderboard_tasks.parquet")
    spec = specs(index)["board"]
    assert len(spec["rows"]) == len(board)
    assert spec["defaults"] == {"category": "macro", "regime": "full"}  # one protocol: no protocol filter
    assert {"regime", "category"} <= set(spec["filters"]) and "run" not in spec["filters"]
    keys = [c["key"] for c in spec["columns"]]
    assert keys[:4] == ["protocol", "regime", "category", "rank"] and "display" in keys and "rank interval" in keys
    top = {r["display"] for r in spec["rows"] if r["category"] == "macro" and r["regime"] == "full" and r["rank"] == 1}
    assert top == {"Encoder big"}  # the planted best model, by its display name
    for model in board["model"].unique():
        assert (site / "models" / f"{model}.html").is_file()
    for task in cells["task"].unique():
        page = site / "tasks" / f"{task}.html"
        rows = specs(page)["task-cells"]["rows"]
        assert len(rows) == (cells["task"] == task).sum() and {r["model_page"] for r in rows} == {
            f"{m}.html" for m in cells["model"]
        }
    copied = sorted(p.name for p in (site / "figures" / "results").iterdir())
    assert copied == sorted(p.name for p in (results / "figures").glob("*.png"))
    assert "<script src='site.js' defer></script>" in index.read_text()
    assert not re.search(r"(src|href)=['\"](https?:)?//", "".join(p.read_text() for p in site.rglob("*.html")))
    model_page = specs(site / "models" / "enc-big.html")
    assert {r["task"] for r in model_page["model-cells"]["rows"]} == set(cells["task"])


def test_several_runs_are_labelled_and_a_cell_that_differs_is_refused(results, tmp_path):
    a = copy_results(results, tmp_path / "a" / "results")
    b = copy_results(results, tmp_path / "b" / "results")
    index = build_site([a, b], tmp_path / "site", labels=["first", "second"])
    rows = specs(index)["board"]["rows"]
    board = integrity.read_parquet(a / "tables" / "leaderboard.parquet")
    assert len(rows) == 2 * len(board) and {r["run"] for r in rows} == {"first", "second"}
    assert "run" in specs(index)["board"]["filters"]
    cells = integrity.read_parquet(b / "tables" / "leaderboard_tasks.parquet")
    i = cells.index[(cells["model"] == "ssm") & (cells["task"] == "tf_1") & (cells["regime"] == "full")][0]
    cells.loc[i, "value"] += 0.01
    rewrite_table(b / "tables" / "leaderboard_tasks.parquet", cells)
    with pytest.raises(
        SiteConflictError, match=r"(?s)1 \(model, task, regime, protocol\) cell.*model=ssm, task=tf_1, regime=full"
    ):
        build_site([a, b], tmp_path / "site2", labels=["first", "second"])
    with pytest.raises(AnalysisInputError, match="given to more than one"):
        build_site([a, b], tmp_path / "site3", labels=["x", "x"])


def test_tier_and_ci_columns_are_shown_when_the_leaderboard_has_them(results, tmp_path):
    r = copy_results(results, tmp_path / "results")
    board = integrity.read_parquet(r / "tables" / "leaderboard.parquet")
    board["tier"] = ["A" if v == 1 else "B" for v in board["rank"].fillna(0)]
    board["ci_low"], board["ci_high"] = board["value"] - 0.05, board["value"] + 0.05
    rewrite_table(r / "tables" / "leaderboard.parquet", board)
    spec = specs(build_site([r], tmp_path / "site"))["board"]
    cols = {c["key"]: c for c in spec["columns"]}
    assert "tier" in cols and "tier" in spec["filters"]
    assert cols["value"]["kind"] == "ci" and (cols["value"]["low"], cols["value"]["high"]) == ("ci_low", "ci_high")
    # tables written before tiers and value CIs existed (or by another tool): no tier column, no CI bar
    old = copy_results(results, tmp_path / "old")
    untiered = integrity.read_parquet(old / "tables" / "leaderboard.parquet")
    rewrite_table(old / "tables" / "leaderboard.parquet", untiered.drop(columns=["tier"], errors="ignore"))
    intervals = integrity.read_parquet(old / "tables" / "rank_intervals.parquet")
    rewrite_table(old / "tables" / "rank_intervals.parquet", intervals.drop(columns=["ci_low", "ci_high"]))
    plain = specs(build_site([old], tmp_path / "plain"))["board"]
    assert "tier" not in {c["key"] for c in plain["columns"]}
    assert {c["key"]: c for c in plain["columns"]}["value"]["kind"] == "num"
    # the run as written: every model's value CI from rank_intervals (the two-level bootstrap) draws the CI bars
    own = {c["key"]: c for c in specs(build_site([results], tmp_path / "own"))["board"]["columns"]}
    assert own["value"]["kind"] == "ci" and "tier" in own


def test_a_folder_that_is_not_a_site_is_refused_and_a_site_is_rebuilt(results, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(AnalysisInputError, match="not a GENEB site"):
        build_site([results], other)
    assert (other / "keep.txt").read_text() == "mine"
    site = tmp_path / "site"
    build_site([results], site)
    (site / "models" / "stale.html").write_text("old")
    build_site([results], site)
    assert not (site / "models" / "stale.html").exists() and (site / "index.html").is_file()


def test_geneb_site_command(results, tmp_path, capsys, repo, monkeypatch):
    monkeypatch.chdir(repo)  # the figure captions from workflow/report
    assert main(["site", "--results-dir", str(results), "--out", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert "site written:" in out and "6 model pages" in out
    figures = (tmp_path / "site" / "figures.html").read_text()
    assert "heatmap" in figures and "figcaption" in figures
    assert main(["site", "--results-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "s2")]) == 2
    assert "leaderboard.parquet not found" in capsys.readouterr().err


@pytest.mark.slow
def test_site_of_a_real_run_states_provenance_and_audit(real_run):  # noqa: F811
    site = real_run / "results" / "site"
    audit = integrity.read_parquet(real_run / "results" / "tables" / "task_audit.parquet")
    tasks = specs(site / "tasks.html")["tasks"]["rows"]
    assert {r["task"] for r in tasks} == set(audit["task"])
    assert all(r["shortcut_flag"] in ("pass", "warning", "fail", "unknown") for r in tasks)
    page = (site / "models" / "kmer-3.html").read_text()
    # the extraction key of the model's embedding files: settings hash, source, environment
    assert re.search(r"<dt>settings hash</dt><dd>[0-9a-f]{12}</dd>", page)
    assert "kind: builtin" in page and "numpy" in page and "probe geneb_commit" in page
    card = (site / "tasks" / "ienhancer2l_strong_vs_weak.html").read_text()
    assert "<dt>data hash</dt>" in card and "train rows" in card and "shortcut_best_auroc" in card
    board = specs(site / "index.html")["board"]
    assert "shortcut_margin" in {c["key"] for c in board["columns"]}
    assert pd.notna(
        pd.Series([r.get("shortcut_margin") for r in board["rows"] if r["model_page"] == "kmer-3.html"])
    ).any()


def test_a_model_page_answers_every_track_and_says_why_one_is_missing(results, tmp_path):
    """One page per model with every track a run has: zero-shot (with its tasks' model-free baselines), fine-tuned
    against probed, the gain over its random-init twin, cost; a task page the tracks keyed by task. A track no run
    made is one line naming what makes it."""
    from site_support import with_tracks

    task = sorted(integrity.read_parquet(results / "tables/leaderboard_tasks.parquet")["task"])[0]
    both = with_tracks(results, tmp_path / "tracks", "enc-big", task)
    site = build_site([both], tmp_path / "site").parent
    page = specs(site / "models" / "enc-big.html")
    for table in ("zeroshot_leaderboard", "zeroshot-baselines", "finetune_vs_probe", "pretraining_gain", "cost"):
        assert len(page[f"model-{table}"]["rows"]) == 1, table
    zs = page["model-zeroshot_leaderboard"]
    assert {c["key"] for c in zs["columns"]} >= {"value", "gain_over_twin", "shortcut_flag", "auroc_within_strata"}
    assert [c["kind"] for c in zs["columns"] if c["key"] == "value"] == ["ci"]
    other = (site / "models" / "enc-small.html").read_text()
    assert "no row of enc-small in zeroshot_leaderboard" in other
    on_task = specs(site / "tasks" / f"{task}.html")
    assert len(on_task["task-pretraining_gain"]["rows"]) == 1 and len(on_task["task-cost"]["rows"]) == 1
    assert "task-finetune_vs_probe" not in on_task  # keyed by model, not by task
    plain = (build_site([results], tmp_path / "plain").parent / "models" / "enc-big.html").read_text()
    assert "not in these runs: the table zeroshot_leaderboard comes with a zero-shot stage" in plain
    assert "not in these runs: the table pretraining_gain comes with twins: true" in plain
