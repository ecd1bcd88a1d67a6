"""Zero-shot figure: each model's zero-shot score per task and scorer, and the zero-shot ranking against the probe's.

Panel (a): one row per (model, scorer), one column per zero-shot task: the task's primary metric (AUROC or paired
accuracy, 0.5 = chance) with its bootstrap CI, the k-mer Markov baselines in grey. Panel (b): each model's macro
zero-shot value (one colour per scorer) against its macro probe MCC, with Kendall's tau-b in the title.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.figures.style import DOUBLE_COLUMN, GREY, LINE_COLOURS, MARKERS, empty_figure, plt, short_all
from geneb.zeroshot.tables import MACRO
from geneb.zeroshot.task import MARKOV_PREFIX


def draw_zeroshot(
    board: pd.DataFrame,
    vs_probe: pd.DataFrame,
    probe_board: pd.DataFrame,
    display: dict[str, str],
    *,
    protocol: str,
    regime: str = "full",
) -> Figure:
    """The two-panel zero-shot figure (module docstring).

    board: `zeroshot_leaderboard.parquet`; vs_probe: `zeroshot_vs_probe.parquet`; probe_board: `leaderboard.parquet`
    (macro rows of `protocol`, `regime`). display: {model: display name}. Returns the figure (a note figure when the
    board has no task rows).
    """
    tasks_rows = board[board["task"] != MACRO]
    if tasks_rows.empty:
        return empty_figure("no zero-shot task was scored")
    tasks = sorted(tasks_rows["task"].unique())
    entries = tasks_rows[["model", "scorer"]].drop_duplicates().sort_values(["scorer", "model"]).itertuples(index=False)
    entries = list(entries)
    labels = short_all([f"{display.get(e.model, e.model)} · {e.scorer}" for e in entries], 34)
    fig, (a, b) = plt.subplots(
        1, 2, figsize=(DOUBLE_COLUMN, max(2.4, 0.16 * len(entries) + 0.8)), gridspec_kw={"width_ratios": [1.4, 1]}
    )
    y = np.arange(len(entries))
    width = 0.8 / max(len(tasks), 1)
    for i, task in enumerate(tasks):
        part = tasks_rows[tasks_rows["task"] == task].set_index(["model", "scorer"])
        vals, lo, hi, colours = [], [], [], []
        for e in entries:
            key = (e.model, e.scorer)
            hit = part.loc[key] if key in part.index else None
            vals.append(float(hit["value"]) if hit is not None else np.nan)
            lo.append(float(hit["ci_low"]) if hit is not None else np.nan)
            hi.append(float(hit["ci_high"]) if hit is not None else np.nan)
            colours.append(GREY if e.scorer.startswith(MARKOV_PREFIX) else LINE_COLOURS[i % len(LINE_COLOURS)])
        vals_a, lo_a, hi_a = np.array(vals), np.array(lo), np.array(hi)
        err = np.vstack([vals_a - lo_a, hi_a - vals_a])
        a.barh(y + (i - (len(tasks) - 1) / 2) * width, vals_a - 0.5, left=0.5, height=width, color=colours, label=task)
        a.errorbar(vals_a, y + (i - (len(tasks) - 1) / 2) * width, xerr=err, fmt="none", ecolor="black", lw=0.5)
    a.axvline(0.5, color="black", lw=0.6, ls=":")
    a.set_yticks(y, labels)
    a.invert_yaxis()
    a.set_xlabel("AUROC / paired accuracy (0.5 = chance)")
    a.set_title("(a) per task (grey: Markov baselines)")
    a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)

    probe = probe_board[
        (probe_board["category"] == MACRO) & (probe_board["protocol"] == protocol) & (probe_board["regime"] == regime)
    ].set_index("model")["value"]
    macro = board[(board["task"] == MACRO) & board["complete"]]
    drawn = False
    for k, (scorer, part) in enumerate(macro.groupby("scorer", sort=True)):
        shared = [m for m in part["model"] if m in probe.index]
        if not shared:
            continue
        zs = part.set_index("model")["value"]
        row = vs_probe[
            (vs_probe["scorer"] == scorer) & (vs_probe["protocol"] == protocol) & (vs_probe["regime"] == regime)
        ]
        tau = float(row["tau"].iloc[0]) if len(row) else np.nan
        b.scatter(
            [probe[m] for m in shared],
            [zs[m] for m in shared],
            color=LINE_COLOURS[k % len(LINE_COLOURS)],
            marker=MARKERS[k % len(MARKERS)],
            s=14,
            label=f"{scorer} (τ = {tau:.2f})" if np.isfinite(tau) else f"{scorer} (τ: fewer than 3 models)",
        )
        drawn = True
    b.axhline(0.5, color="black", lw=0.6, ls=":")
    b.set_xlabel(f"probe macro MCC ({protocol}, {regime})")
    b.set_ylabel("zero-shot macro")
    b.set_title("(b) zero-shot vs probe ranking (Kendall τ-b)" if drawn else "(b) no model in both rankings")
    if drawn:
        b.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    fig.tight_layout()
    return fig


def render(
    leaderboard: str | Path, vs_probe: str | Path, probe_leaderboard: str | Path, png: str | Path, *, protocol: str
) -> None:
    """Rule zeroshot_figure: draw the figure from the zero-shot tables and the probe leaderboard (digests checked)
    into `png` and the .pdf beside it."""
    from geneb.core import integrity
    from geneb.figures.style import paper_style, save

    board, vs, probe_board = (integrity.read_parquet(p) for p in (leaderboard, vs_probe, probe_leaderboard))
    with paper_style():
        save(draw_zeroshot(board, vs, probe_board, {}, protocol=protocol), png)
