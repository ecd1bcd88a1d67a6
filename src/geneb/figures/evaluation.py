"""Figures of evaluation choices and controls: best layer, sensitivity, pretraining gain, fine-tune vs probe
and zero-shot.

Best layer per model and category: relative depth of the best hidden-state layer with its task-bootstrap CI.

The leaderboard under each evaluation choice: macro rank under the reference (left) and each alternative.

Pretraining gain: each model minus its random-init twin, per category and macro, with the two-level CI.

Probe vs fine-tune: each model's fine-tune gain per category and macro with its paired CI, and the macro
Kendall tau between the probe and fine-tune rankings in the title.

Zero-shot figure: each model's zero-shot score per task and scorer, and the zero-shot ranking against the probe's.

Panel (a): one row per (model, scorer), one column per zero-shot task: the task's primary metric (AUROC or paired
accuracy, 0.5 = chance) with its bootstrap CI, the k-mer Markov baselines in grey. Panel (b): each model's macro
zero-shot value (one colour per scorer) against its macro probe MCC, with Kendall's tau-b in the title.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from geneb.core.categories import CATEGORIES
from geneb.figures.style import DOUBLE_COLUMN, GREY, LINE_COLOURS, MARKERS, empty_figure, plt, short_all
from geneb.zeroshot.tables import MACRO
from geneb.zeroshot.task import MARKOV_PREFIX


def _best_layer(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
    """Markers at the best layer's relative depth (0 = embedding layer, 1 = last layer) per category and macro
    (x), one colour per model, with the percentile CI as a bar; hollow where the gain over the registry's layer has
    a CI that includes 0. Returns the figure (a note figure without fixed-layer views)."""
    t = table[(table["protocol"] == protocol) & (table["regime"] == regime)] if len(table) else table
    if t.empty:
        return empty_figure("no model has two or more fixed-layer views (run with views: layers)", DOUBLE_COLUMN)
    cols = [c for c in (*CATEGORIES, "macro") if c in set(t["category"])]
    models = sorted(t["model"].unique())[: len(LINE_COLOURS)]
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 2.6))
    width = 0.7 / max(1, len(models))
    names = short_all([display.get(m, m) for m in models], 28)
    for i, m in enumerate(models):
        g = t[t["model"] == m].set_index("category").reindex(cols)
        x = np.arange(len(cols)) - 0.35 + (i + 0.5) * width
        colour = LINE_COLOURS[i]
        ax.vlines(x, g["depth_ci_low"], g["depth_ci_high"], color=colour, lw=0.8)
        sure = (g["gain_ci_low"] > 0).to_numpy()
        ax.scatter(x[sure], g["best_depth"][sure], marker=MARKERS[i], s=14, color=colour, label=names[i], zorder=3)
        ax.scatter(
            x[~sure], g["best_depth"][~sure], marker=MARKERS[i], s=14, facecolors="white", edgecolors=colour, zorder=3
        )
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("best layer (relative depth)")
    ax.set_title(f"Best layer per category ({protocol}, {regime}); filled: gain over the registry layer > 0")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_best_layer(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table best_layer."""
    return _best_layer(tables["best_layer"], display, protocol=protocol, regime=regime)


def _sensitivity(board: pd.DataFrame, display: dict[str, str], *, regime: str = "full", highlight: int = 7) -> Figure:
    """One column per leaderboard (the reference first, then every alternative of every choice), each model's
    macro-MCC rank (1 at the top) joined by lines; the `highlight` best models of the reference are coloured.
    board: the `sensitivity_leaderboard` table (its protocol is the reference's). Returns the figure (a note
    figure when the run has no alternative)."""
    b = board[(board["regime"] == regime) & (board["category"] == "macro")] if len(board) else board
    if b.empty or not (b["choice"] != "reference").any():
        return empty_figure("one view per model and one protocol: no evaluation choice to vary", DOUBLE_COLUMN)
    b = b.assign(
        column=[
            ("reference" if c == "reference" else f"{c.replace('_', ' ')}:\n{a}")
            for c, a in zip(b["choice"], b["alternative"])
        ]
    )
    order = list(dict.fromkeys(b["column"]))
    wide = b.pivot_table(index="model", columns="column", values="rank", aggfunc="first")[order].astype(float)
    wide = wide.sort_values("reference")
    top = list(wide.index[: min(highlight, len(LINE_COLOURS))])
    fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN, 1.4 + 0.12 * len(wide)))
    x = list(range(len(order)))
    for m in wide.index:
        if m not in top:
            ax.plot(x, wide.loc[m], color=GREY, lw=0.5, alpha=0.6, marker=".", ms=2)
    names = short_all([display.get(m, m) for m in top], 28)
    for i, m in enumerate(top):
        ax.plot(x, wide.loc[m], color=LINE_COLOURS[i], lw=1.1, marker=MARKERS[i], ms=3, label=names[i])
    ax.set_ylim(len(wide) + 0.5, 0.5)
    ax.set_yticks(range(1, len(wide) + 1) if len(wide) <= 12 else sorted({1, *range(5, len(wide) + 1, 5)}))
    ax.set_xticks(x, order, rotation=30, ha="right")
    ax.set_ylabel("macro-MCC rank (1 = best)")
    ax.set_title(f"The leaderboard under each evaluation choice ({regime}); one change at a time")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    return fig


def draw_sensitivity(
    tables: dict[str, pd.DataFrame], display: dict[str, str], *, protocol: str, regime: str = "full"
) -> Figure:
    """The registered figure (geneb.figures.registry): drawn from the table sensitivity_leaderboard (whose
    protocol is the sensitivity reference's, whatever the report's)."""
    return _sensitivity(tables["sensitivity_leaderboard"], display, regime=regime)


def _pretraining_gain(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
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
    return _pretraining_gain(tables["pretraining_gain"], display, protocol=protocol, regime=regime)


def _finetune_vs_probe(table: pd.DataFrame, display: dict[str, str], *, protocol: str, regime: str = "full") -> Figure:
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
        if pd.isna(r["winner_changed"]):  # no model has both protocols on every task: no macro ranking to compare
            ax.set_title(f"finetune-lora vs {protocol} ({regime}): no macro ranking ({r['note']})")
        else:
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
    return _finetune_vs_probe(tables["finetune_vs_probe"], display, protocol=protocol, regime=regime)


def _draw_zeroshot(
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
        save(_draw_zeroshot(board, vs, probe_board, {}, protocol=protocol), png)
