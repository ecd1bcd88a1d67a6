"""The figures, report and site of a merged folder (`geneb merge` of two bundles of the synthetic run): every
registered figure drawn as a real image with the merged registry's display names, the report stating that it is
a merged folder and naming each bundle with its sha256, the sections a merged folder lacks one line each, and
the site built from the folder showing its figures."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from merged_support import REPO, merged  # noqa: F401
from PIL import Image

from geneb.core import integrity
from geneb.figures.registry import figure_names
from geneb.pool.bundle import BundleError
from geneb.pool.merge import merged_outputs
from geneb.report.render import report_captions
from geneb.site.build import build_site


def test_every_registered_figure_is_a_real_image(merged):  # noqa: F811
    figures = merged["out"] / "figures"
    for name in figure_names():
        png = figures / f"{name}.png"
        assert png.is_file(), f"figure {name} not drawn"
        assert (figures / f"{name}.pdf").stat().st_size > 1000
        with Image.open(png) as im:
            im.verify()
        with Image.open(png) as im:
            assert im.format == "PNG" and im.width > 200 and im.height > 100, (name, im.size)


def test_the_figures_use_the_merged_registry_for_display_names(merged):  # noqa: F811
    registry = yaml.safe_load((merged["out"] / "registry/models.yaml").read_text())["models"]
    models = integrity.read_parquet(merged["out"] / "tables/models.parquet")
    shown = dict(zip(models["model"], models["display"]))
    assert shown == {m: e["display"] for m, e in registry.items()}
    assert len(shown) == 6  # both bundles' models


def test_the_report_says_it_is_merged_and_names_each_bundle(merged):  # noqa: F811
    page = (merged["out"] / "report/geneb_report.html").read_text()
    assert "<h2 id='pooled'>Pooled from</h2>" in page
    top = page.index("id='pooled'")
    assert top < page.index("id='leaderboard'")  # near the top, before the answer
    record = json.loads((merged["out"] / "tables/pool.json").read_text())["bundles"]
    for path in merged["bundles"]:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert path.name in page and digest in page
        assert {"name": path.name, "sha256": digest}.items() <= next(
            b for b in record if b["name"] == path.name
        ).items()
    assert f"merged results folder {merged['out'].name}" in page
    assert "<h2 id='leaderboard'>Leaderboard</h2>" in page and "Encoder big" in page
    drawn = [n for n in figure_names() if f'<figure id="fig-{n}">' in page]
    lines = [n for n in figure_names() if f"<p class='na' id='fig-{n}'>" in page]  # nothing to plot: one line
    assert sorted(drawn + lines) == sorted(figure_names()) and len(drawn) >= 5, (drawn, lines)


def test_the_sections_a_merged_folder_lacks_are_one_line_each(merged):  # noqa: F811
    page = (merged["out"] / "report/geneb_report.html").read_text()
    folder = merged["out"].name
    for heading, anchor in (("Task cards", "task-cards"), ("Zero-shot scoring", "zeroshot")):
        line = f"<p class='na' id='{anchor}'><b>{heading}</b>: not in the merged folder {folder}: bundles carry no"
        assert page.count(line) == 1, heading
    assert "<h2 id='zeroshot'>" not in page


def test_the_site_of_the_merged_folder_shows_its_figures(merged, tmp_path):  # noqa: F811
    index = build_site([merged["out"]], tmp_path / "site", captions=report_captions(REPO / "workflow/report"))
    page = (index.parent / "figures.html").read_text()
    label = merged["out"].name
    for name in figure_names():
        copied = index.parent / "figures" / label / f"{name}.png"
        assert copied.is_file() and copied.read_bytes() == (merged["out"] / f"figures/{name}.png").read_bytes()
        assert f"figures/{label}/{name}.png" in page
    assert "has no figures" not in page


def test_outputs_of_a_folder_that_is_not_merged_are_refused(synthetic_run, tmp_path):
    with pytest.raises(BundleError, match="pool.json not found; not a merged results folder"):
        merged_outputs(
            synthetic_run["root"] / "results", config_file=REPO / "config/config.yaml", captions_dir=tmp_path
        )
