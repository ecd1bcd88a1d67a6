"""Few-shot plot: macro MCC from full data to 10 and 1 examples per class, and the drop against the level."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from geneb.analysis.paper.fewshot import SHOTS
from geneb.figures.style import DOUBLE_COLUMN, GREY, LINE_COLOURS, MARKERS, empty_figure, plt, short_all
from geneb.tables.scores import REGIMES


def fewshot_plot(
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
    return fewshot_plot(tables["fewshot_drops"], tables["fewshot_inverse"], display, protocol=protocol)
