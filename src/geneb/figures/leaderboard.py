"""Figures of the leaderboard: the heatmap, rank bump chart, critical-difference diagram and task variance.

Model x category heatmap of MCC (the leaderboard at a glance), rows sorted by macro MCC.

Rank bump chart: each model's rank in each category (and macro), showing how the order changes.

Critical-difference diagram (Demsar 2006, Fig. 1): each model's mean rank over the tasks on an axis, one panel
per regime (macro: every task of the regime), thick bars joining the models the Nemenyi post-hoc test cannot
separate, from the leaderboard's tier columns (`geneb.analysis.tiers`).

Task variance plot: the spread of MCC across models on every task, grouped by category, with the
high-variance and near-random tasks marked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from geneb.analysis.ranking import wide_view
from geneb.analysis.tiers import separable
from geneb.core.categories import CATEGORIES
from geneb.figures.style import (
    DOUBLE_COLUMN,
    GREY,
    LINE_COLOURS,
    MARKERS,
    OKABE_ITO,
    SEQUENTIAL,
    empty_figure,
    plt,
    short_all,
)
from geneb.tables.scores import REGIMES


def _heatmap(
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
    return _heatmap(tables["leaderboard"], display, protocol=protocol, regime=regime)


def _rank_bump(
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
    return _rank_bump(tables["leaderboard"], display, protocol=protocol, regime=regime)


_ROW = 0.11  # inches per label row


def _cliques(mean_rank: np.ndarray, sep: np.ndarray) -> list[tuple[int, int]]:
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


def _bar_rows(runs: list[tuple[int, int]], mean_rank: np.ndarray, gap: float = 0.3) -> list[int]:
    """A row (0 = nearest the axis) for each run of `_cliques`, packed greedily: a run goes to the first row
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
    runs = _cliques(r, separable(r, cd, p, conf))
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
    rows = _bar_rows(runs, r)
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
        f"{regime}: {k} models over {_blocks_text(first)}, Friedman p {_p_text(p)}; "
        f"{n_top} in tier 1 (vermillion: not separable from the best), bars: {conf:.0%} Nemenyi ties",
        fontsize=7,
    )


def _blocks_text(row: pd.Series) -> str:
    """ "13 categories": the row's blocks (`tier_n_blocks` `tier_blocks`; a board written before them: its tasks)."""
    if "tier_n_blocks" in row.index and pd.notna(row["tier_n_blocks"]):
        return f"{int(row['tier_n_blocks'])} {row['tier_blocks']}"
    return f"{int(row['tier_n_tasks'])} tasks"


def _n_rows(g: pd.DataFrame) -> int:
    """How many bar rows one regime's panel needs."""
    g = g.sort_values(["tier_mean_rank", "rank", "model"])
    r = g["tier_mean_rank"].to_numpy(dtype=float)
    first = g.iloc[0]
    sep = separable(r, float(first["tier_cd"]), float(first["friedman_p"]), float(first["tier_confidence"]))
    rows = _bar_rows(_cliques(r, sep), r)
    return max(rows) + 1 if rows else 0


def _cd_diagram(board: pd.DataFrame, display: dict[str, str], *, protocol: str) -> Figure:
    """The diagram of the macro rows of `board` (a tiered leaderboard) for `protocol`, one panel per regime
    with tiers (REGIMES order). Returns the figure (a note figure when no regime has tiers or the board was
    written without them)."""
    if "tier" not in board.columns:
        return empty_figure("the leaderboard has no tier columns (written before tiers existed)", DOUBLE_COLUMN)
    b = board[(board["protocol"] == protocol) & (board["category"] == "macro") & board["tier"].notna()]
    if "tier_cd" in b.columns and len(b) and b["tier_cd"].isna().all():  # wilcoxon_holm: no critical difference
        method = str(b["tier_method"].iloc[0])
        return empty_figure(f"the tiers of {protocol} are by {method}: no critical difference to draw", DOUBLE_COLUMN)
    regimes = [r for r in REGIMES if r in set(b["regime"])]
    if not regimes:
        why = board.loc[(board["protocol"] == protocol) & (board["category"] == "macro"), "tier_reason"]
        return empty_figure(f"no macro tiers for {protocol}: {why.iloc[0] if len(why) else 'no rows'}", DOUBLE_COLUMN)
    heights = [4.0 + (len(b[b["regime"] == r]) + 1) // 2 + 0.35 * _n_rows(b[b["regime"] == r]) for r in regimes]
    fig, axes = plt.subplots(
        len(regimes),
        1,
        figsize=(DOUBLE_COLUMN, _ROW * sum(heights)),
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
    return _cd_diagram(tables["leaderboard"], display, protocol=protocol)


def _task_variance(variance: pd.DataFrame, near_random: pd.DataFrame, *, protocol: str, regime: str = "full") -> Figure:
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
    return _task_variance(tables["task_variance"], tables["near_random"], protocol=protocol, regime=regime)
