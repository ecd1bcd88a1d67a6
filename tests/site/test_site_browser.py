"""The leaderboard site in Debian's headless chromium (DevTools protocol over a pipe, tests/cdp_support.py): every
page loads without a console error and fits a 1280 px window without horizontal scrolling; on the leaderboard a
filter and a sort change the rows shown, and a model's link opens its page. A screenshot of the leaderboard is
kept under the test's tmp folder (its path printed)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from site_support import real_run  # noqa: F401

from cdp_support import Browser, chromium
from geneb.site.build import build_site

WIDTH = 1280
ROWS = "[...document.querySelectorAll('#board tbody tr')]"


def _browser(tmp_path: Path) -> Browser:
    exe = chromium()
    if exe is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium); the lead's CI installs it")
    return Browser(exe, tmp_path / "profile", width=WIDTH)


def _column(b: Browser, key: str) -> list[str]:
    """The text of the leaderboard's column `key` in the rows shown, top to bottom."""
    i = b.eval(f"[...document.querySelectorAll('#board thead button')].findIndex(x=>x.dataset.sort==='{key}')")
    assert i >= 0, key
    return b.eval(f"{ROWS}.map(r=>r.children[{i}].textContent)")


def _fits(b: Browser) -> tuple[int, list[str]]:
    """The page's scroll width and the tables that reach past the window's right edge."""
    wide = b.eval(
        f"[...document.querySelectorAll('table')].filter(t=>t.getBoundingClientRect().right>{WIDTH}).map(t=>t.parentElement.id)"
    )
    return b.eval("document.documentElement.scrollWidth"), wide


def check_site(site: Path, tmp_path: Path) -> Path:
    """Drive the site's pages; returns the screenshot of its leaderboard."""
    b = _browser(tmp_path)
    try:
        b.open((site / "index.html").as_uri())
        assert b.eval("document.body.dataset.ready") == "1" and b.errors == []
        width, wide = _fits(b)
        assert width <= WIDTH and not wide, (width, wide)
        shot = b.screenshot(tmp_path / "leaderboard.png")
        # a filter: the category select keeps that category's rows only
        before = b.eval(ROWS + ".length")
        assert set(_column(b, "category")) == {"macro"}
        other = b.eval("[...document.querySelector('#board select[name=category]').options].map(o=>o.value)")
        category = next(c for c in other if c not in ("", "macro", "micro"))
        b.select("#board select[name=category]", category)
        assert set(_column(b, "category")) == {category}
        assert b.eval("document.getElementById('board').dataset.shown") == str(b.eval(ROWS + ".length"))
        b.select("#board select[name=category]", "")
        assert b.eval(ROWS + ".length") > before
        b.select("#board select[name=category]", "macro")
        # a sort: by MCC, then the other way; missing values last both times
        b.click("#board button[data-sort=value]")
        up = _column(b, "value")
        b.click("#board button[data-sort=value]")
        down = _column(b, "value")
        nums = [float(x) for x in up if x != "–"]
        assert nums == sorted(nums) and [float(x) for x in down if x != "–"] == sorted(nums, reverse=True)
        assert up != down and (up[-1] == "–") == ("–" in up)
        # the header cell sorts anywhere in it (not only on its label), and from the keyboard
        b.click("#board th[data-sort-key=value]")
        assert _column(b, "value") == up
        b.press("#board button[data-sort=value]", "Enter")
        assert _column(b, "value") == down
        # headers in words with the data dictionary's meaning as a tooltip; numbers never in a float's full repr
        labels = b.eval("[...document.querySelectorAll('#board thead button')].map(x=>x.textContent)")
        assert not [x for x in labels if "_" in x], labels
        tip = b.eval("document.querySelector('#board th[data-sort-key=value]').title")
        assert tip.startswith("value: ") and len(tip) > 40 and tip.endswith("(click or Enter to sort)"), tip
        long = b.eval(f"{ROWS}.flatMap(r=>[...r.children].map(c=>c.textContent)).filter(t=>/\\d\\.\\d{{6,}}/.test(t))")
        assert long == [], long[:5]
        # a model page opens from its link
        name = b.eval(f"{ROWS}[0].querySelector('a').textContent")
        b.click_and_wait("#board tbody tr a")
        assert "/models/" in b.eval("location.href") and b.eval("document.body.dataset.ready") == "1"
        assert b.eval("document.querySelector('h1').textContent").startswith("Model ")
        assert name in b.eval("document.body.textContent") and b.errors == []
        b.screenshot(tmp_path / "model.png")
        # every page: loads without an error, no horizontal scroll at 1280 px
        for page in sorted(site.rglob("*.html")):
            b.open(page.as_uri())
            assert b.errors == [], (page, b.errors)
            width, wide = _fits(b)
            assert width <= WIDTH and not wide, (page, width, wide)
        b.open((site / "figures.html").as_uri())
        decoded = b.eval("Promise.all([...document.images].map(i=>i.decode().then(()=>i.naturalWidth>0,()=>false)))")
        assert decoded and all(decoded)
    finally:
        b.close()
    print(f"site screenshot: {shot}")
    return shot


@pytest.mark.browser
def test_site_in_headless_chromium(synthetic_run, tmp_path):
    site = build_site([synthetic_run["root"] / "results"], tmp_path / "site").parent
    shot = check_site(site, tmp_path)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20000


@pytest.mark.browser
@pytest.mark.slow
def test_site_of_a_real_run_in_headless_chromium(real_run, tmp_path):  # noqa: F811
    shot = check_site(real_run / "results" / "site", tmp_path)
    assert shot.stat().st_size > 20000


@pytest.mark.browser
def test_a_model_page_with_every_track_in_headless_chromium(synthetic_run, tmp_path):
    """The model page of a run with every track: each track's table drawn with its row, no console error, no
    horizontal scroll at 1280 px."""
    from site_support import with_tracks

    results = synthetic_run["root"] / "results"
    task = sorted(pd.read_parquet(results / "tables/leaderboard_tasks.parquet")["task"])[0]
    site = build_site([with_tracks(results, tmp_path / "tracks", "enc-big", task)], tmp_path / "site").parent
    b = _browser(tmp_path)
    try:
        b.open((site / "models" / "enc-big.html").as_uri())
        assert b.eval("document.body.dataset.ready") == "1" and b.errors == [], b.errors
        headings = b.eval("[...document.querySelectorAll('h2')].map(h=>h.textContent)")
        for title in ("Zero-shot scores", "Fine-tuned against probed", "Pretraining gain over its random-init twin",
                      "What it cost to run"):  # fmt: skip
            assert title in headings, headings
        for host in ("zeroshot_leaderboard", "zeroshot-baselines", "finetune_vs_probe", "pretraining_gain", "cost"):
            assert b.eval(f"document.getElementById('model-{host}').dataset.shown") == "1", host
        width, wide = _fits(b)
        assert width <= WIDTH and not wide, (width, wide)
    finally:
        b.close()
