"""The critical-difference diagram (geneb.figures.leaderboard): its bars are the maximal runs of tied models."""

import numpy as np
import pandas as pd

from geneb.analysis import tiers
from geneb.analysis.ranking import leaderboard
from geneb.figures.leaderboard import _bar_rows, _cd_diagram, _cliques
from geneb.figures.style import paper_style, save


def test_cliques_are_the_maximal_runs_of_models_no_two_of_which_are_separable():
    r = np.array([1.0, 1.5, 3.0, 3.2, 6.0])
    sep = np.abs(r[:, None] - r[None, :]) > 1.6  # a CD of 1.6 by hand: 1.5 vs 3.2 differ by 1.7; 4 alone
    assert _cliques(r, sep) == [(0, 1), (1, 2), (2, 3)]
    assert _bar_rows([(0, 1), (1, 3)], r) == [0, 1]  # they touch at model 1: two rows
    assert _bar_rows([(0, 1), (2, 3)], r) == [0, 0]  # 1.5 + 0.3 < 3.0: one row
    assert _cliques(r, np.zeros((5, 5), dtype=bool)) == [(0, 4)]  # nothing separable: one bar over all


def test_the_diagram_draws_one_panel_per_regime_with_tiers(tmp_path):
    cats = {
        f"t{i}": c
        for i, c in enumerate(("Promoters", "Promoters", "Enhancers", "Enhancers", "TF Binding", "TF Binding"))
    }
    rows = []
    for regime in ("full", "10shot"):
        for j, m in enumerate("abcde"):
            for i, t in enumerate(cats):
                rows.append(
                    {"protocol": "p", "model": m, "task": t, "category": cats[t], "regime": regime,
                     "value": 0.9 - 0.15 * j + 0.01 * ((i + j) % 2), "source": "x"}
                )  # fmt: skip
    cells = pd.DataFrame(rows)
    board = tiers.add_tiers(leaderboard(cells), cells, 0.95)
    with paper_style():
        fig = _cd_diagram(board, {"a": "model A"}, protocol="p")
        titles = [ax.get_title() for ax in fig.axes]
        png, pdf = save(fig, tmp_path / "cd.png")
    assert len(titles) == 2 and titles[0].startswith("full: 5 models over 3 categories")
    assert png.stat().st_size > 0 and pdf.exists()
    with paper_style():
        note = _cd_diagram(board.drop(columns="tier"), {}, protocol="p")
    assert "no tier columns" in note.axes[0].texts[0].get_text()
    with paper_style():  # Wilcoxon-Holm tiers have no critical difference: a note, not an empty diagram
        wil = _cd_diagram(board.assign(tier_cd=np.nan, tier_method="Wilcoxon"), {}, protocol="p")
    assert "no critical difference" in wil.axes[0].texts[0].get_text()
