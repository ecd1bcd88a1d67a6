"""Pretraining gain: each model minus its random-init twin, per category and macro, with the two-level CI."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, LINE_COLOURS, MARKERS, empty_figure, plt, short_all


def pretraining_gain(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
    """Markers at MCC(model) - MCC(twin) per category and macro (x), one colour per model, the percentile CI as a
    bar (the two-level bootstrap: tasks within the category, test rows within each task); filled where the CI
    excludes 0, a dashed line at 0. The title counts the tasks won and lost significantly (Holm-corrected).
    Returns the figure (a note figure for a run without a model beside its twin)."""
    t = table[(table["protocol"] == protocol) & (table["regime"] == regime)] if len(table) else table
    if t.empty:
        return empty_figure("no model of this run has its random-init twin beside it (twins: true)", DOUBLE_COLUMN)
    per_task = t[t["level"] == "task"]
    t = t[t["level"] != "task"]
    cols = [c for c in (*CATEGORIES, "macro") if c in set(t["category"])]
    models = sorted(t["model"].unique())[: len(LINE_COLOURS)]
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 2.6))
    width = 0.7 / max(1, len(models))
    names = short_all([display.get(m, m) for m in models], 28)
    for i, m in enumerate(models):
        g = t[t["model"] == m].set_index("category").reindex(cols)
        x = np.arange(len(cols)) - 0.35 + (i + 0.5) * width
        colour = LINE_COLOURS[i]
        ax.vlines(x, g["gain_ci_low"], g["gain_ci_high"], color=colour, lw=0.8)
        sure = ((g["gain_ci_low"] > 0) | (g["gain_ci_high"] < 0)).to_numpy()
        ax.scatter(x[sure], g["gain"][sure], marker=MARKERS[i], s=14, color=colour, label=names[i], zorder=3)
        ax.scatter(x[~sure], g["gain"][~sure], marker=MARKERS[i], s=14, facecolors="white", edgecolors=colour, zorder=3)
    ax.axhline(0, color="0.5", lw=0.6, ls="--")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_ylabel("MCC model - twin")
    wins, losses = int(per_task["n_wins"].fillna(0).sum()), int(per_task["n_losses"].fillna(0).sum())
    ax.set_title(
        f"Pretraining gain ({protocol}, {regime}): significant wins {wins}, losses {losses} "
        f"of {len(per_task)} (model, task) pairs"
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_pretraining_gain(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table pretraining_gain."""
    return pretraining_gain(tables["pretraining_gain"], display, protocol=protocol, regime=regime)
