"""Rank bump chart: each model's rank in each category (and macro), showing how the order changes."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, GREY, LINE_COLOURS, MARKERS, empty_figure, plt, short_all


def rank_bump(
    board: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full", highlight: int = 7
) -> Figure:
    """Lines of rank (y, 1 at the top) across the categories and macro (x) for every model.

    The `highlight` best models by macro get Okabe-Ito colours, markers and labels; the rest are thin grey
    lines. Returns the figure (a note figure without ranked rows).
    """
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    wide = b.pivot(index="model", columns="category", values="rank")
    cols = [c for c in (*CATEGORIES, "macro") if c in wide.columns]
    if wide.empty or not cols or "macro" not in wide.columns:
        return empty_figure(f"no ranks for {protocol} / {regime}")
    wide = wide[cols].astype(float).sort_values("macro")
    top = list(wide.index[: min(highlight, len(LINE_COLOURS))])
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 1.2 + 0.07 * len(wide)))
    x = range(len(cols))
    for m in wide.index:
        if m not in top:
            ax.plot(x, wide.loc[m], color=GREY, lw=0.5, alpha=0.6)
    names = short_all([display.get(m, m) for m in top], 32)
    for i, m in enumerate(top):
        ax.plot(x, wide.loc[m], color=LINE_COLOURS[i], lw=1.2, marker=MARKERS[i], ms=3, label=names[i])
    ax.set_ylim(len(wide) + 0.5, 0.5)
    # every rank for a short list, every fifth beyond that
    ax.set_yticks(range(1, len(wide) + 1) if len(wide) <= 12 else sorted({1, *range(5, len(wide) + 1, 5)}))
    ax.set_xticks(list(x), cols, rotation=30, ha="right")
    ax.set_ylabel("rank (1 = best)")
    ax.set_title(f"Rank per category ({regime}); coloured: the {len(top)} best by macro MCC")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_rank_bump(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables leaderboard."""
    return rank_bump(tables["leaderboard"], display, protocol=protocol, regime=regime)
