"""Scale scatter: parameter count (log axis) against macro MCC, with Spearman's rho and the models left out
of the recomputed rho (and the out-of-domain models) marked."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.figures.style import OKABE_ITO, SINGLE_COLUMN, empty_figure, plt, short


def scale_scatter(
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
    return scale_scatter(
        tables["leaderboard"], tables["scale"], tables["in_domain"], display, protocol=protocol, regime=regime
    )
