"""Task variance plot: the spread of MCC across models on every task, grouped by category, with the
high-variance and near-random tasks marked."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, GREY, OKABE_ITO, empty_figure, plt


def task_variance(variance: pd.DataFrame, near_random: pd.DataFrame, *, protocol: str, regime: str = "full") -> Figure:
    """One vertical bar per task from the lowest to the highest model MCC, a dot at the median; tasks
    grouped by category (official order), sorted by sd within a category. Orange: high variance; blue:
    near random (its best model's CI below the threshold, dashed line). Returns the figure.
    """
    v = variance[(variance["protocol"] == protocol) & (variance["regime"] == regime)].copy()
    if v.empty:
        return empty_figure(f"no task results for {protocol} / {regime}")
    nr = near_random[(near_random["protocol"] == protocol) & (near_random["regime"] == regime)]
    near = set(nr.loc[nr["near_random"], "task"])
    v["_c"] = v["category"].map({c: i for i, c in enumerate(CATEGORIES)})
    v = v.sort_values(["_c", "sd"], ascending=[True, False]).reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 2.4))
    for i, r in v.iterrows():
        colour = OKABE_ITO[1] if r["task"] in near else OKABE_ITO[0] if r["high_variance"] else GREY
        ax.plot([i, i], [r["min"], r["max"]], color=colour, lw=1.4 if len(v) < 60 else 0.9)
        ax.scatter([i], [r["median"]], s=4, color="black", zorder=3)
    if len(nr):
        ax.axhline(float(nr["threshold"].iloc[0]), color=OKABE_ITO[1], ls="--", lw=0.6)
    ax.axhline(0, color="black", lw=0.4)
    bounds = v.groupby("category", sort=False).apply(lambda g: (g.index.min(), g.index.max()), include_groups=False)
    centres = [(lo + hi) / 2 for lo, hi in bounds]
    for lo, _ in bounds:
        if lo > 0:
            ax.axvline(lo - 0.5, color="black", lw=0.3, alpha=0.4)
    ax.set_xticks(centres, list(bounds.index), rotation=90, fontsize=5)
    ax.set_xlim(-1, len(v))
    ax.set_ylabel(f"MCC across models ({regime})")
    ax.scatter([], [], c=OKABE_ITO[0], marker="s", label="high variance")
    ax.scatter([], [], c=OKABE_ITO[1], marker="s", label="near random")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False, ncols=2)
    ax.set_title("Per-task MCC spread across models (bar: min-max, dot: median)", loc="left")
    ax.set_ylim(min(-0.05, float(np.nanmin(v["min"])) - 0.02), 1.0)
    return fig


def draw_task_variance(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables task_variance, near_random."""
    return task_variance(tables["task_variance"], tables["near_random"], protocol=protocol, regime=regime)
