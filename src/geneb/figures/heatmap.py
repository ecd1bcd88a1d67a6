"""Model x category heatmap of MCC (the leaderboard at a glance), rows sorted by macro MCC."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.analysis.ranking.leaderboard import wide_view
from geneb.figures.style import DOUBLE_COLUMN, SEQUENTIAL, empty_figure, plt, short_all


def heatmap(
    board: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full", annotate: bool = True
) -> Figure:
    """Heatmap of the 13 category MCCs plus macro (columns) for every model (rows, best macro on top).

    board: leaderboard table; display: model id -> display name. Cells without a value read 'n/a'. The colour
    scale (cividis) spans the table's minimum (or 0, if lower) to its maximum. Returns the figure; a note
    figure when the board has no row for (protocol, regime).
    """
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    if b.empty:
        return empty_figure(f"no {protocol} / {regime} results to plot")
    wide = wide_view(board, protocol, regime, complete_only=False).drop(columns="micro")
    values = wide.to_numpy(dtype=float)
    n, k = values.shape
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 0.9 + 0.16 * n))
    vmin = min(0.0, float(np.nanmin(values)))
    im = ax.imshow(
        np.ma.masked_invalid(values), aspect="auto", cmap=SEQUENTIAL, vmin=vmin, vmax=float(np.nanmax(values))
    )
    ax.set_xticks(range(k), wide.columns, rotation=40, ha="right")
    ax.set_yticks(range(n), short_all([display.get(m, m) for m in wide.index]))
    ax.axvline(k - 1.5, color="white", lw=1.5)
    if annotate and n <= 60:
        mid = vmin + (np.nanmax(values) - vmin) / 2
        for i in range(n):
            for j in range(k):
                v = values[i, j]
                if np.isfinite(v):
                    ax.text(
                        j, i, f"{v:.2f}", ha="center", va="center", fontsize=4.5, color="black" if v > mid else "white"
                    )
                else:
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=4.5, color="0.45")
    ax.spines[:].set_visible(False)
    ax.tick_params(length=0)
    cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    cb.set_label("MCC")
    title = f"MCC per category ({regime}); last column: macro mean over categories"
    if np.isnan(values).any():
        title += "\nn/a: no score (a cell left out, e.g. a model trained on that task; see contamination.parquet)"
    ax.set_title(title)
    return fig


def draw_heatmap(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables leaderboard."""
    return heatmap(tables["leaderboard"], display, protocol=protocol, regime=regime)
