"""The leaderboard under each evaluation choice: macro rank under the reference (left) and each alternative."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from geneb.figures.style import DOUBLE_COLUMN, GREY, LINE_COLOURS, MARKERS, empty_figure, plt, short_all


def sensitivity(board: pd.DataFrame, display: dict[str, str], *, regime: str = "full", highlight: int = 7) -> Figure:
    """One column per leaderboard (the reference first, then every alternative of every choice), each model's
    macro-MCC rank (1 at the top) joined by lines; the `highlight` best models of the reference are coloured.
    board: the `sensitivity_leaderboard` table (its protocol is the reference's). Returns the figure (a note
    figure when the run has no alternative)."""
    b = board[(board["regime"] == regime) & (board["category"] == "macro")] if len(board) else board
    if b.empty or not (b["choice"] != "reference").any():
        return empty_figure("one view per model and one protocol: no evaluation choice to vary", DOUBLE_COLUMN)
    b = b.assign(
        column=[
            ("reference" if c == "reference" else f"{c.replace('_', ' ')}:\n{a}")
            for c, a in zip(b["choice"], b["alternative"])
        ]
    )
    order = list(dict.fromkeys(b["column"]))
    wide = b.pivot_table(index="model", columns="column", values="rank", aggfunc="first")[order].astype(float)
    wide = wide.sort_values("reference")
    top = list(wide.index[: min(highlight, len(LINE_COLOURS))])
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 1.4 + 0.12 * len(wide)))
    x = list(range(len(order)))
    for m in wide.index:
        if m not in top:
            ax.plot(x, wide.loc[m], color=GREY, lw=0.5, alpha=0.6, marker=".", ms=2)
    names = short_all([display.get(m, m) for m in top], 28)
    for i, m in enumerate(top):
        ax.plot(x, wide.loc[m], color=LINE_COLOURS[i], lw=1.1, marker=MARKERS[i], ms=3, label=names[i])
    ax.set_ylim(len(wide) + 0.5, 0.5)
    ax.set_yticks(range(1, len(wide) + 1) if len(wide) <= 12 else sorted({1, *range(5, len(wide) + 1, 5)}))
    ax.set_xticks(x, order, rotation=30, ha="right")
    ax.set_ylabel("macro-MCC rank (1 = best)")
    ax.set_title(f"The leaderboard under each evaluation choice ({regime}); one change at a time")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_sensitivity(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table sensitivity_leaderboard (whose
    protocol is the sensitivity reference's, whatever the report's)."""
    return sensitivity(tables["sensitivity_leaderboard"], display, regime=regime)
