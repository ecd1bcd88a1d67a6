"""The comparison figure of `compare_published`: every complete model's macro MCC with its bootstrap CI (left) and
its macro rank with the bootstrap rank interval (right), tasks resampled (`geneb.analysis.paper.compare.compare_intervals`);
the user's models in colour, the paper's published models in grey. Not in the figure registry: it is drawn from
the comparison table by the comparison report (`geneb.report.compare`), not from a run's analysis tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.figures.style import DOUBLE_COLUMN, GREY, OKABE_ITO, empty_figure, plt, short


def rank_figure(board: pd.DataFrame, *, protocol: str, regime: str = "full", category: str = "macro") -> Figure:
    """The figure for one (protocol, regime, category) of the comparison board (`compare_intervals` columns).

    Rows: the ranked models (rank not NA), best on top. Returns the figure (a note figure when no model is
    ranked)."""
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime) & (board["category"] == category)]
    b = b[b["rank"].notna()].sort_values(["rank", "model"])
    if b.empty:
        return empty_figure(f"no model is ranked on {category} ({regime})", DOUBLE_COLUMN)
    fig, (left, right) = plt.subplots(1, 2, figsize=(DOUBLE_COLUMN, 0.9 + 0.13 * len(b)), sharey=True)
    y = np.arange(len(b))[::-1]
    colours = [OKABE_ITO[5] if o == "user" else GREY for o in b["origin"]]
    for yi, ci_low, ci_high, rank_low, rank_high, c in zip(
        y, b["ci_low"], b["ci_high"], b["rank_low"], b["rank_high"], colours
    ):
        if not pd.isna(ci_low):
            left.plot([ci_low, ci_high], [yi, yi], color=c, lw=1)
        if not pd.isna(rank_low):
            right.plot([rank_low, rank_high], [yi, yi], color=c, lw=1)
    left.scatter(b["value"], y, s=12, c=colours, zorder=3)
    right.scatter(b["rank"].astype(float), y, s=12, c=colours, zorder=3)
    left.set_yticks(y, [short(str(m), 44) for m in b["model"]])
    for tick, o in zip(left.get_yticklabels(), b["origin"]):
        if o == "user":
            tick.set_fontweight("bold")
    conf = float(b["confidence"].iloc[0]) if "confidence" in b and pd.notna(b["confidence"].iloc[0]) else 0.95
    left.set_xlabel(f"{category} MCC ({regime}), {conf:.0%} CI over tasks")
    right.set_xlabel(f"{category} rank, {conf:.0%} bootstrap interval")
    left.set_title(f"{len(b)} ranked models; bold: yours", loc="left")
    return fig
