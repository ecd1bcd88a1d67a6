"""The figure registry: every figure the `paper_figures` rule draws, with its caption file, drawing function and
the tables it reads. The figure rules' outputs, their `report()` entries (workflow/rules/common.smk), the
renderer (`render.render_figures`) and the HTML report's figures are all derived from it.

Adding a figure: write its drawing function `draw_<name>(tables, display, *, protocol, regime)` returning a
matplotlib figure (in a module of `geneb.figures`), write its caption `workflow/report/{name}.rst`, import the
function here and add one `Figure(...)` line to `FIGURES` (docs/analyses.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geneb.figures.bump import draw_rank_bump
from geneb.figures.cd import draw_critical_difference
from geneb.figures.fewshot import draw_fewshot
from geneb.figures.finetune_gain import draw_finetune_vs_probe
from geneb.figures.forest import draw_matched_pairs
from geneb.figures.heatmap import draw_heatmap
from geneb.figures.layers import draw_best_layer
from geneb.figures.pretraining import draw_pretraining_gain
from geneb.figures.scale import draw_scale
from geneb.figures.sensitivity import draw_sensitivity
from geneb.figures.variance import draw_task_variance


@dataclass(frozen=True)
class Figure:
    """One registered figure: results/figures/{name}.png and .pdf, drawn by the function `draw` from the tables
    `inputs` (results/tables/{input}.parquet) and captioned by the file `caption` in workflow/report/ (the
    caption of both `snakemake --report` and the HTML report)."""

    name: str
    draw: Callable[..., Any]
    inputs: tuple[str, ...]
    caption: str


#: the registered figures, in report order
FIGURES: list[Figure] = [
    Figure("heatmap", draw_heatmap, ("leaderboard",), "heatmap.rst"),
    Figure("scale", draw_scale, ("leaderboard", "scale", "in_domain"), "scale.rst"),
    Figure("rank_bump", draw_rank_bump, ("leaderboard",), "rank_bump.rst"),
    Figure("fewshot", draw_fewshot, ("fewshot_drops", "fewshot_inverse"), "fewshot.rst"),
    Figure("matched_pairs", draw_matched_pairs, ("matched_pairs",), "matched_pairs.rst"),
    Figure("task_variance", draw_task_variance, ("task_variance", "near_random"), "task_variance.rst"),
    Figure("best_layer", draw_best_layer, ("best_layer",), "best_layer.rst"),
    Figure("sensitivity", draw_sensitivity, ("sensitivity_leaderboard",), "sensitivity.rst"),
    Figure("pretraining_gain", draw_pretraining_gain, ("pretraining_gain",), "pretraining_gain.rst"),
    Figure("critical_difference", draw_critical_difference, ("leaderboard",), "critical_difference.rst"),
    Figure("finetune_vs_probe", draw_finetune_vs_probe, ("finetune_vs_probe",), "finetune_vs_probe.rst"),
]


def register(figure: Figure) -> Figure:
    """Add `figure` to the registry (drawn after the others). Raises ValueError when its name is taken."""
    if figure.name in figure_names():
        raise ValueError(f"figure {figure.name!r} is registered already")
    FIGURES.append(figure)
    return figure


def figures() -> tuple[Figure, ...]:
    """The registered figures, in registry order."""
    return tuple(FIGURES)


def figure_names() -> tuple[str, ...]:
    """The registered figures' names (results/figures/{name}.png and .pdf), in registry order."""
    return tuple(f.name for f in FIGURES)
