"""Figures of the paper's analyses: scale, few-shot, matched pairs, and the comparison with published models.

Scale scatter: parameter count (log axis) against macro MCC, with Spearman's rho and the models left out
of the recomputed rho (and the out-of-domain models) marked.

Few-shot plot: macro MCC from full data to 10 and 1 examples per class, and the drop against the level.

Matched-pair forest plot: MCC(a) - MCC(b) with paired-bootstrap CIs, one row per (pair, category).

The comparison figure of `compare_published`: every complete model's macro MCC with its bootstrap CI (left) and
its macro rank with the bootstrap rank interval (right), tasks resampled (`geneb.analysis.published.compare_intervals`);
the user's models in colour, the paper's published models in grey. Not in the figure registry: it is drawn from
the comparison table by the comparison report (`geneb.report.compare`), not from a run's analysis tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.analysis.paper import SHOTS
from geneb.figures.style import (
    DOUBLE_COLUMN,
    GREY,
    LINE_COLOURS,
    MARKERS,
    OKABE_ITO,
    SINGLE_COLUMN,
    empty_figure,
    plt,
    short,
    short_all,
)
from geneb.tables.scores import REGIMES


def _scale_scatter(
    board: pd.DataFrame,
    scale_table: pd.DataFrame,
    in_domain: pd.DataFrame,
    display: dict[str, str],
    *,
    protocol: str,
    regime: str = "full",
) -> Figure:
    """Scatter of params_used (x, log) vs macro MCC (y) for the models of the scale analysis.

    board: leaderboard; scale_table: `scale.scale_correlations` rows (subset all / excluding) with protocol
    and regime; in_domain: `scale.in_domain` rows with params_used. Marks: in-domain (blue circles),
    out-of-domain (orange triangles), excluded from rho (vermillion cross, labelled). Returns the figure (a
    note figure when fewer than 3 models have a parameter count).
    """
    if in_domain.empty or scale_table.empty:
        return empty_figure("no scale analysis: it needs >= 3 models with different parameter counts")
    sel = (in_domain["protocol"] == protocol) & (in_domain["regime"] == regime)
    d = in_domain[sel].set_index("model")
    macro = board[(board["protocol"] == protocol) & (board["regime"] == regime) & (board["category"] == "macro")]
    macro = macro.set_index("model")["value"]
    d = d.join(macro.rename("macro"), how="inner").dropna(subset=["macro", "params_used"])
    if len(d) < 3:
        return empty_figure("scale analysis needs >= 3 models with a parameter count")
    sc = scale_table[(scale_table["protocol"] == protocol) & (scale_table["regime"] == regime)].set_index("subset")
    excluded = set(sc.loc["excluding", "excluded"].split(";")) if "excluding" in sc.index else set()
    fig, ax = plt.subplots(figsize=(SINGLE_COLUMN, 2.6))
    groups = [
        (d[d["in_domain"] & ~d.index.isin(excluded)], "in-domain", OKABE_ITO[3], "o"),
        (d[~d["in_domain"] & ~d.index.isin(excluded)], "out of domain", OKABE_ITO[0], "^"),
        (d[d.index.isin(excluded)], "excluded from rho", OKABE_ITO[4], "X"),
    ]
    for g, label, colour, marker in groups:
        if len(g):
            ax.scatter(g["params_used"], g["macro"], s=14, c=colour, marker=marker, label=label, edgecolors="none")
    for m, r in d.iterrows():
        if m in excluded or not r["in_domain"]:
            ax.annotate(
                short(display.get(m, m), 18),
                (r["params_used"], r["macro"]),
                fontsize=5,
                xytext=(3, -2),
                textcoords="offset points",
            )
    ax.set_xscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel(f"macro MCC ({regime})")
    lines = []
    for subset, label in (("all", "all"), ("excluding", "excl.")):
        if subset in sc.index:
            r = sc.loc[subset]
            lines.append(f"ρ {label} = {r['rho']:.3f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] (n={int(r['n'])})")
    ax.text(0.02, 0.98, "\n".join(lines), transform=ax.transAxes, va="top", fontsize=5.5)
    ax.legend(loc="lower right", frameon=False, handletextpad=0.2)
    ax.set_ylim(top=ax.get_ylim()[1] + 0.12 * np.ptp(ax.get_ylim()))
    return fig


def draw_scale(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables leaderboard, scale, in_domain."""
    return _scale_scatter(
        tables["leaderboard"], tables["scale"], tables["in_domain"], display, protocol=protocol, regime=regime
    )


def _fewshot_plot(
    drops: pd.DataFrame, inverse: pd.DataFrame, display: dict[str, str], *, protocol: str, highlight: int = 7
) -> Figure:
    """Two panels: (a) macro MCC per regime, one line per model (the `highlight` best in colour); (b) full
    macro MCC (x) against its absolute drop to 10-shot (y) with Spearman's rho (the inverse pattern).

    drops: `fewshot.drops` rows with protocol; inverse: `fewshot.inverse_pattern` rows with protocol.
    Returns the figure (a note figure without k-shot regimes).
    """
    if drops.empty:
        return empty_figure("few-shot plot needs the full regime and a k-shot regime")
    d = drops[drops["protocol"] == protocol].set_index("model")
    regimes = [r for r in REGIMES if r in d.columns and d[r].notna().any()]
    if len(regimes) < 2:
        return empty_figure("few-shot plot needs the full regime and a k-shot regime")
    d = d.sort_values("full", ascending=False)
    top = [m for m in d.index if d.loc[m, regimes].notna().any()][
        : min(highlight, len(LINE_COLOURS))
    ]  # no line, no entry
    names = short_all([display.get(m, m) for m in top], 22)
    fig, (a, b) = plt.subplots(1, 2, figsize=(DOUBLE_COLUMN, 2.6), gridspec_kw={"width_ratios": [1.2, 1]})
    x = range(len(regimes))
    for m in d.index:
        if m not in top:
            a.plot(x, d.loc[m, regimes], color=GREY, lw=0.5, alpha=0.6)
    for i, m in enumerate(top):
        a.plot(x, d.loc[m, regimes], color=LINE_COLOURS[i], marker=MARKERS[i], ms=3, lw=1.1, label=names[i])
    a.set_xticks(list(x), regimes)
    a.set_ylabel("macro MCC")
    a.set_title("(a) macro MCC by regime")
    a.legend(frameon=False, fontsize=5)
    k = next((r for r in SHOTS if f"abs_drop_{r}" in d.columns), None)
    if k is None:
        b.axis("off")
    else:
        b.scatter(d["full"], d[f"abs_drop_{k}"], s=10, c=LINE_COLOURS[3], edgecolors="none")
        b.set_xlabel("macro MCC, full data")
        b.set_ylabel(f"drop to {k} (full - {k})")
        inv = inverse[(inverse["protocol"] == protocol) & (inverse["regime"] == k) & (inverse["measure"] == "abs_drop")]
        if len(inv):
            r = inv.iloc[0]
            b.text(
                0.98,
                0.02,
                f"Spearman ρ = {r['rho']:.3f} (p = {r['p_value']:.2g}, n = {int(r['n'])})",
                transform=b.transAxes,
                va="bottom",
                ha="right",
                fontsize=6,
            )
        b.set_title(f"(b) level vs drop to {k}")
    return fig


def draw_fewshot(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables fewshot_drops, fewshot_inverse."""
    return _fewshot_plot(tables["fewshot_drops"], tables["fewshot_inverse"], display, protocol=protocol)


_DIFFERS_COLOUR = {"architecture": OKABE_ITO[3], "tokenizer": OKABE_ITO[0], "pretraining_data": OKABE_ITO[2]}


def _forest(
    pairs: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full", max_rows: int = 40
) -> Figure:
    """Forest plot of tested matched-pair differences for one (protocol, regime).

    Shows every pair's macro row plus its significant category rows, at most `max_rows` rows (largest |diff|
    kept). Filled markers: significant after Benjamini-Hochberg (q < alpha); open: not. Colour: the factor
    the pair differs in. Returns the figure (a note figure when no pair was tested).
    """
    p = pairs[(pairs["protocol"] == protocol) & (pairs["regime"] == regime)] if len(pairs) else pairs
    if p.empty or not p["tested"].any():
        return empty_figure(
            "no matched pair could be tested (none declared or derivable, or too few tasks)", DOUBLE_COLUMN
        )
    p = p[p["tested"] & ((p["category"] == "macro") | p["significant"])].copy()
    p["abs"] = p["diff"].abs()
    p = p.nlargest(max_rows, "abs").sort_values(["pair_id", "category"])
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 0.8 + 0.14 * len(p)))
    y = np.arange(len(p))[::-1]
    for yi, (_, r) in zip(y, p.iterrows()):
        c = _DIFFERS_COLOUR.get(r["differs_in"], "black")
        ax.plot([r["ci_low"], r["ci_high"]], [yi, yi], color=c, lw=1)
        ax.scatter(
            [r["diff"]], [yi], s=14, marker="o", facecolors=c if r["significant"] else "white", edgecolors=c, zorder=3
        )
    labels = [
        f"{short(display.get(r.model_a, r.model_a), 20)} − {short(display.get(r.model_b, r.model_b), 20)}  [{r.category}]"
        for r in p.itertuples()
    ]
    ax.set_yticks(y, labels)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_xlabel(f"MCC difference ({regime}), paired bootstrap CI")
    for k, c in _DIFFERS_COLOUR.items():
        ax.scatter([], [], c=c, s=14, label=f"differs in {k.replace('_', ' ')}")
    ax.legend(loc="lower right", frameon=False)
    ax.set_title("Matched pairs (filled: significant after Benjamini-Hochberg)")
    return fig


def draw_matched_pairs(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables matched_pairs."""
    return _forest(tables["matched_pairs"], display, protocol=protocol, regime=regime)


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
