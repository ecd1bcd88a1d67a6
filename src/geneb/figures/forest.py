"""Matched-pair forest plot: MCC(a) - MCC(b) with paired-bootstrap CIs, one row per (pair, category)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.figures.style import DOUBLE_COLUMN, OKABE_ITO, empty_figure, plt, short

DIFFERS_COLOUR = {"architecture": OKABE_ITO[3], "tokenizer": OKABE_ITO[0], "pretraining_data": OKABE_ITO[2]}


def forest(
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
        c = DIFFERS_COLOUR.get(r["differs_in"], "black")
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
    for k, c in DIFFERS_COLOUR.items():
        ax.scatter([], [], c=c, s=14, label=f"differs in {k.replace('_', ' ')}")
    ax.legend(loc="lower right", frameon=False)
    ax.set_title("Matched pairs (filled: significant after Benjamini-Hochberg)")
    return fig


def draw_matched_pairs(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the tables matched_pairs."""
    return forest(tables["matched_pairs"], display, protocol=protocol, regime=regime)
