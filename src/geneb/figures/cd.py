"""Critical-difference diagram (Demsar 2006, Fig. 1): each model's mean rank over the tasks on an axis, one panel
per regime (macro: every task of the regime), thick bars joining the models the Nemenyi post-hoc test cannot
separate, from the leaderboard's tier columns (`geneb.analysis.ranking.tiers`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from geneb.analysis.ranking.tiers import separable
from geneb.figures.style import DOUBLE_COLUMN, LINE_COLOURS, empty_figure, plt, short_all
from geneb.tables.scores import REGIMES

ROW = 0.11  # inches per label row


def cliques(mean_rank: np.ndarray, sep: np.ndarray) -> list[tuple[int, int]]:
    """The maximal runs [i, j] (indices into `mean_rank`, sorted best first) of models no two of which are
    separable (`sep`, (k, k) bool), each of at least two models: the bars of the diagram."""
    k = len(mean_rank)
    runs: list[tuple[int, int]] = []
    for i in range(k):
        j = i
        while j + 1 < k and not sep[i, j + 1]:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in runs):
            runs.append((i, j))
    return runs


def bar_rows(runs: list[tuple[int, int]], mean_rank: np.ndarray, gap: float = 0.3) -> list[int]:
    """A row (0 = nearest the axis) for each run of `cliques`, packed greedily: a run goes to the first row
    whose runs end more than `gap` ranks before it starts, so bars on one row never touch."""
    ends: list[float] = []
    rows = []
    for i, j in runs:
        row = next((n for n, end in enumerate(ends) if end + gap < mean_rank[i]), len(ends))
        if row == len(ends):
            ends.append(mean_rank[j])
        else:
            ends[row] = mean_rank[j]
        rows.append(row)
    return rows


def _p_text(p: float) -> str:
    """The Friedman p-value as shown (below the smallest double: "< 1e-300")."""
    return "< 1e-300" if p < 1e-300 else f"= {p:.2g}"


def _panel(ax: Axes, g: pd.DataFrame, display: dict[str, str], regime: str) -> None:
    """One regime's diagram on `ax` (rows of the macro leaderboard with a tier)."""
    g = g.sort_values(["tier_mean_rank", "rank", "model"])
    r = g["tier_mean_rank"].to_numpy(dtype=float)
    first = g.iloc[0]
    conf, cd, p = float(first["tier_confidence"]), float(first["tier_cd"]), float(first["friedman_p"])
    runs = cliques(r, separable(r, cd, p, conf))
    k = len(r)
    half = (k + 1) // 2
    names = short_all([display.get(m, m) for m in g["model"]], 30)
    lo, hi = 1, max(k, 2)
    ax.set_xlim(lo - 0.5, hi + 0.5)
    ax.hlines(0, lo, hi, color="black", lw=0.8)
    for t in range(lo, hi + 1):
        ax.vlines(t, 0, 0.25 if t in (lo, hi) or t % 5 == 0 else 0.12, color="black", lw=0.6)
        if t in (lo, hi) or t % 5 == 0:
            ax.text(t, 0.35, str(t), ha="center", va="bottom", fontsize=6)
    rows = bar_rows(runs, r)
    for (i, j), b in zip(runs, rows):
        y = -0.5 - 0.35 * b
        ax.hlines(y, r[i] - 0.05, r[j] + 0.05, color=LINE_COLOURS[3], lw=1.6)
    top = -0.5 - 0.35 * (max(rows) + 1 if rows else 0) - 0.3
    for i in range(k):
        left = i < half
        row = i if left else k - 1 - i
        y = top - row
        x_end = lo - 0.4 if left else hi + 0.4
        colour = LINE_COLOURS[4] if int(g["tier"].iloc[i]) == 1 else "black"
        ax.plot([r[i], r[i], x_end], [0, y, y], color=colour, lw=0.5)
        ax.text(
            x_end + (-0.1 if left else 0.1),
            y,
            f"{names[i]} ({r[i]:.1f})",
            ha="right" if left else "left",
            va="center",
            fontsize=5.5,
            color=colour,
        )
    ax.hlines(1.4, lo, lo + cd, color="black", lw=1.0)
    ax.text(lo + cd / 2, 1.5, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=6)
    n_top = int((g["tier"] == 1).sum())
    ax.set_ylim(top - half + 0.5, 2.2)
    ax.axis("off")
    ax.set_title(
        f"{regime}: {k} models over {int(first['tier_n_tasks'])} tasks, Friedman p {_p_text(p)}; "
        f"{n_top} in tier 1 (vermillion: not separable from the best), bars: {conf:.0%} Nemenyi ties",
        fontsize=7,
    )


def _n_rows(g: pd.DataFrame) -> int:
    """How many bar rows one regime's panel needs."""
    g = g.sort_values(["tier_mean_rank", "rank", "model"])
    r = g["tier_mean_rank"].to_numpy(dtype=float)
    first = g.iloc[0]
    sep = separable(r, float(first["tier_cd"]), float(first["friedman_p"]), float(first["tier_confidence"]))
    rows = bar_rows(cliques(r, sep), r)
    return max(rows) + 1 if rows else 0


def cd_diagram(board: pd.DataFrame, display: dict[str, str], *, protocol: str) -> Figure:
    """The diagram of the macro rows of `board` (a tiered leaderboard) for `protocol`, one panel per regime
    with tiers (REGIMES order). Returns the figure (a note figure when no regime has tiers or the board was
    written without them)."""
    if "tier" not in board.columns:
        return empty_figure("the leaderboard has no tier columns (written before tiers existed)", DOUBLE_COLUMN)
    b = board[(board["protocol"] == protocol) & (board["category"] == "macro") & board["tier"].notna()]
    regimes = [r for r in REGIMES if r in set(b["regime"])]
    if not regimes:
        why = board.loc[(board["protocol"] == protocol) & (board["category"] == "macro"), "tier_reason"]
        return empty_figure(f"no macro tiers for {protocol}: {why.iloc[0] if len(why) else 'no rows'}", DOUBLE_COLUMN)
    heights = [4.0 + (len(b[b["regime"] == r]) + 1) // 2 + 0.35 * _n_rows(b[b["regime"] == r]) for r in regimes]
    fig, axes = plt.subplots(
        len(regimes),
        1,
        figsize=(DOUBLE_COLUMN, ROW * sum(heights)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, regime in zip(axes[:, 0], regimes):
        _panel(ax, b[b["regime"] == regime], display, regime)
    return fig


def draw_critical_difference(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table leaderboard, every regime (the
    rule's `regime` is not used: the diagram shows one panel per regime)."""
    return cd_diagram(tables["leaderboard"], display, protocol=protocol)
