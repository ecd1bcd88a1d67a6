"""Every registered figure is drawn from the synthetic run as PNG and PDF; an empty analysis draws a note, not an
error."""

import pandas as pd
import pytest

from geneb.figures.registry import figure_names


def test_figures_exist_as_png_and_pdf(synthetic_run):
    f = synthetic_run["root"] / "results" / "figures"
    for name in figure_names():
        png, pdf = f / f"{name}.png", f / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-", name
        assert png.stat().st_size > 5000


def test_figures_of_an_empty_analysis_are_notes_not_errors(tmp_path):
    from geneb.figures import paper
    from geneb.figures.style import paper_style, save

    with paper_style():
        f = paper._forest(pd.DataFrame(), {}, protocol="geneb-paper")
        empty = pd.DataFrame(columns=["protocol", "regime", "model", "in_domain", "params_used"])
        s = paper._scale_scatter(
            pd.DataFrame(columns=["protocol", "regime", "category", "model", "value"]),
            empty,
            empty,
            {},
            protocol="geneb-paper",
        )
        # a note figure: one blank axes holding the reason as its only text, no plotted data
        for fig, reason in ((f, "no matched pair could be tested"), (s, "no scale analysis")):
            (ax,) = fig.axes
            assert not ax.axison and not ax.lines and not ax.collections
            assert [t.get_text()[: len(reason)] for t in ax.texts] == [reason]
        save(f, tmp_path / "f.png")
        save(s, tmp_path / "s.png")
    assert (tmp_path / "f.pdf").exists() and (tmp_path / "s.png").exists()
    with pytest.raises(ValueError):
        save(paper._forest(pd.DataFrame(), {}, protocol="x"), tmp_path / "f.jpg")
