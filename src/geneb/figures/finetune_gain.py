"""Probe vs fine-tune: each model's fine-tune gain per category and macro with its paired CI, and the macro
Kendall tau between the probe and fine-tune rankings in the title."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, LINE_COLOURS, MARKERS, empty_figure, plt, short_all


def finetune_vs_probe(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
    """Markers at MCC(finetune-lora) - MCC(probe protocol `protocol`) per category and macro (x), one colour per
    model, the paired two-level bootstrap CI as a bar, filled where it excludes 0; a dashed line at 0. The title
    gives the macro Kendall tau with its task-bootstrap CI and whether the top model changes. Returns the figure (a
    note figure for a run without finetune-lora rows)."""
    t = table[(table["probe_protocol"] == protocol) & (table["regime"] == regime)] if len(table) else table
    if t.empty:
        return empty_figure("no finetune-lora rows in this run (config/finetune.yaml)", DOUBLE_COLUMN)
    rank = t[(t["kind"] == "ranking") & (t["level"] == "macro")]
    g_all = t[t["kind"] == "gain"]
    cols = [c for c in (*CATEGORIES, "macro") if c in set(g_all["category"])]
    models = sorted(g_all["model"].dropna().unique())[: len(LINE_COLOURS)]
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 2.6))
    width = 0.7 / max(1, len(models))
    names = short_all([display.get(m, m) for m in models], 28)
    for i, m in enumerate(models):
        g = g_all[g_all["model"] == m].set_index("category").reindex(cols)
        x = np.arange(len(cols)) - 0.35 + (i + 0.5) * width
        colour = LINE_COLOURS[i]
        ax.vlines(x, g["gain_ci_low"], g["gain_ci_high"], color=colour, lw=0.8)
        sure = ((g["gain_ci_low"] > 0) | (g["gain_ci_high"] < 0)).fillna(False).to_numpy(dtype=bool)
        ax.scatter(x[sure], g["gain"][sure], marker=MARKERS[i], s=14, color=colour, label=names[i], zorder=3)
        ax.scatter(x[~sure], g["gain"][~sure], marker=MARKERS[i], s=14, facecolors="white", edgecolors=colour, zorder=3)
    ax.axhline(0, color="0.5", lw=0.6, ls="--")
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_ylabel("MCC fine-tune - probe")
    if len(rank):
        r = rank.iloc[0]
        changed = "top model changes" if bool(r["winner_changed"]) else "same top model"
        ax.set_title(
            f"finetune-lora vs {protocol} ({regime}): macro Kendall τ {r['kendall_tau']:.2f} "
            f"[{r['tau_ci_low']:.2f}, {r['tau_ci_high']:.2f}], {changed}"
        )
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_finetune_vs_probe(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table finetune_vs_probe."""
    return finetune_vs_probe(tables["finetune_vs_probe"], display, protocol=protocol, regime=regime)
