"""Best layer per model and category: relative depth of the best hidden-state layer with its task-bootstrap CI."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, LINE_COLOURS, MARKERS, empty_figure, plt, short_all


def best_layer(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
    """Markers at the best layer's relative depth (0 = embedding layer, 1 = last layer) per category and macro
    (x), one colour per model, with the percentile CI as a bar; hollow where the gain over the registry's layer has
    a CI that includes 0. Returns the figure (a note figure without fixed-layer views)."""
    t = table[(table["protocol"] == protocol) & (table["regime"] == regime)] if len(table) else table
    if t.empty:
        return empty_figure("no model has two or more fixed-layer views (run with views: layers)", DOUBLE_COLUMN)
    cols = [c for c in (*CATEGORIES, "macro") if c in set(t["category"])]
    models = sorted(t["model"].unique())[: len(LINE_COLOURS)]
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 2.6))
    width = 0.7 / max(1, len(models))
    names = short_all([display.get(m, m) for m in models], 28)
    for i, m in enumerate(models):
        g = t[t["model"] == m].set_index("category").reindex(cols)
        x = np.arange(len(cols)) - 0.35 + (i + 0.5) * width
        colour = LINE_COLOURS[i]
        ax.vlines(x, g["depth_ci_low"], g["depth_ci_high"], color=colour, lw=0.8)
        sure = (g["gain_ci_low"] > 0).to_numpy()
        ax.scatter(x[sure], g["best_depth"][sure], marker=MARKERS[i], s=14, color=colour, label=names[i], zorder=3)
        ax.scatter(
            x[~sure], g["best_depth"][~sure], marker=MARKERS[i], s=14, facecolors="white", edgecolors=colour, zorder=3
        )
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("best layer (relative depth)")
    ax.set_title(f"Best layer per category ({protocol}, {regime}); filled: gain over the registry layer > 0")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_best_layer(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table best_layer."""
    return best_layer(tables["best_layer"], display, protocol=protocol, regime=regime)
