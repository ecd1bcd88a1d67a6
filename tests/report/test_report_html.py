"""The self-contained HTML report: content, inlined figures, no external resources; and, in headless
Chromium, that it renders with its figures decoded."""

import re
import shutil
import subprocess

import pytest

from geneb.figures.registry import figure_names
from geneb.report.html import build_report
from geneb.report.render import _read_caption, report_captions


@pytest.fixture(scope="module")
def report(synthetic_run, tmp_path_factory, repo):
    root = synthetic_run["root"]
    out = tmp_path_factory.mktemp("report") / "report.html"
    build_report(
        root / "results" / "tables",
        root / "results" / "figures",
        out,
        config=synthetic_run["config"],
        captions=report_captions(repo / "workflow" / "report"),
        title="Test <run>",
    )
    return out


def test_report_is_self_contained_with_every_figure_table_and_the_config(report, repo):
    text = report.read_text()
    imgs = re.findall(r'<img alt="([^"]+) figure" width="[0-9]+" src="data:image/png;base64,', text)
    lines = re.findall(r"<p class='na' id='fig-([a-z_]+)'>", text)
    assert sorted(imgs + lines) == sorted(figure_names()) and imgs  # each figure shown, or its one line why not
    assert not re.search(r'(src|href)="(https?:)?//', text)  # nothing fetched from the network
    assert "Test &lt;run&gt;" in text  # escaped
    for heading in (
        "Headline statistics",
        "Leaderboard",
        "Reversals",
        "Matched pairs",
        "Configuration and versions",
        "Inverse pattern",
        "Kendall τ between category rankings",
        "Macro rank with 95% bootstrap interval",
    ):
        assert heading in text
    assert "planted outlier" in text and "n_resamples: 200" in text and "scipy" in text
    assert _read_caption(repo / "workflow" / "report", "heatmap.rst")[:60] in text and "Encoder big" in text


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
def test_report_renders_in_headless_chromium_with_its_figures(report, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the lead's CI installs it")
    # a test copy of the page reports, after load, how many images decoded (naturalWidth > 0) into the DOM
    probe = tmp_path / "probe.html"
    probe.write_text(
        report.read_text().replace(
            "</body>",
            "<script>window.addEventListener('load',()=>{"
            "const ok=[...document.images].filter(i=>i.complete&&i.naturalWidth>0).length;"
            "document.body.setAttribute('data-decoded',ok+'/'+document.images.length);});</script></body>",
        )
    )
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run([exe, *flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    n = report.read_text().count("data:image/png;base64,")
    assert n and f'data-decoded="{n}/{n}"' in dom.stdout
    assert dom.stdout.count("<table") >= 10
    shot = tmp_path / "shot.png"
    r = subprocess.run(
        [exe, *flags, "--window-size=1200,2400", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20000


def test_figure_labels_stay_distinct_after_shortening():
    from geneb.figures.style import short_all

    a = "organisation-foundation-model-large-hg38-variant-A-final"
    b = "organisation-foundation-model-large-mm10-variant-A-final"
    out = short_all([a, b, "short"], 28)
    assert len(set(out)) == 3 and out[2] == "short" and all(len(x) <= len(a) for x in out)


def test_report_says_capped_subsamples_counts_what_it_shows_and_states_provenance_once(synthetic_run, tmp_path, repo):
    """The headline says when the tasks are capped subsamples, the heatmap caption counts the models and categories
    shown, and the provenance columns are stated once, not as columns of every table."""
    import json

    import pandas as pd

    root = synthetic_run["root"]
    tables = root / "results" / "tables"
    tasks = sorted(pd.read_parquet(tables / "scores.parquet", columns=["task"])["task"].unique())
    cards = []
    for i, task in enumerate(tasks):
        caps = {"train": {"cap": 2000, "n_source": 9000, "n_kept": 2000}} if i < 2 else {}
        card = tmp_path / f"{task}.json"
        card.write_text(json.dumps({"task": task, "category": "Promoters", "data_hash": "0" * 64, "caps": caps}))
        cards.append(str(card))
    out = tmp_path / "report.html"
    build_report(
        tables,
        root / "results" / "figures",
        out,
        config=synthetic_run["config"],
        captions=report_captions(repo / "workflow" / "report"),
        scores=tables / "scores.parquet",
        cards=cards,
    )
    text = out.read_text()
    assert f"⚠ 2 of {len(tasks)} tasks are capped subsamples (train ≤ 2,000 rows;" in text
    board = pd.read_parquet(tables / "leaderboard.parquet")
    n_models = board["model"].nunique()
    n_cats = board.loc[~board["category"].isin(["macro", "micro"]), "category"].nunique()
    assert f"Shown: {n_models} models × {n_cats} of 13 categories." in text
    assert "each of the 13 functional categories" not in text
    assert "<th>geneb_commit</th>" not in text and "<th>geneb_dirty</th>" not in text
    assert text.count("Every table above was written by GENEB commit") == 1
    assert "is older than its input" not in text


def test_report_warns_when_a_table_is_older_than_the_score_table(synthetic_run, tmp_path, repo):
    import os

    tables = synthetic_run["root"] / "results" / "tables"
    scores = tables / "scores.parquet"
    before = scores.stat().st_mtime
    later = max(p.stat().st_mtime for p in tables.glob("*.parquet")) + 60
    os.utime(scores, (later, later))
    try:
        out = tmp_path / "report.html"
        build_report(
            tables,
            synthetic_run["root"] / "results" / "figures",
            out,
            config=synthetic_run["config"],
            captions=report_captions(repo / "workflow" / "report"),
        )
        assert f"⚠ {tables / 'leaderboard.parquet'} is older than its input {scores}" in out.read_text()
    finally:
        os.utime(scores, (before, before))
