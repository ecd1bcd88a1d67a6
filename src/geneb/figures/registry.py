"""The figure registry: every figure the `paper_figures` rule draws, with its caption file, drawing function and
the tables it reads. The figure rules' outputs, their `report()` entries (workflow/rules/common.smk), the
renderer (`render.render_figures`) and the HTML report's figures are all derived from it.

Adding a figure: write its module with a `draw(tables, display, *, protocol, regime)` function returning a
matplotlib figure, write its caption `workflow/report/{name}.rst`, and add one `Figure(...)` line to `FIGURES`
(docs/analyses.md). Functions are named by "module:function" and imported only when the figures are drawn,
so reading the registry (the workflow does, to build its DAG) loads no plotting code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One registered figure: results/figures/{name}.png and .pdf, drawn by `draw` ("module:function" or a
    callable) from the tables `inputs` (results/tables/{input}.parquet) and captioned by the file `caption` in
    workflow/report/ (the caption of both `snakemake --report` and the HTML report)."""

    name: str
    draw: str | Callable[..., Any]
    inputs: tuple[str, ...]
    caption: str

    def function(self) -> Callable[..., Any]:
        """The drawing function (imported on first use when given as "module:function")."""
        if callable(self.draw):
            return self.draw
        module, _, attr = self.draw.partition(":")
        return getattr(import_module(module), attr)


#: the registered figures, in report order
FIGURES: list[Figure] = [
    Figure("heatmap", "geneb.figures.heatmap:draw", ("leaderboard",), "heatmap.rst"),
    Figure("scale", "geneb.figures.scale:draw", ("leaderboard", "scale", "in_domain"), "scale.rst"),
    Figure("rank_bump", "geneb.figures.bump:draw", ("leaderboard",), "rank_bump.rst"),
    Figure("fewshot", "geneb.figures.fewshot:draw", ("fewshot_drops", "fewshot_inverse"), "fewshot.rst"),
    Figure("matched_pairs", "geneb.figures.forest:draw", ("matched_pairs",), "matched_pairs.rst"),
    Figure("task_variance", "geneb.figures.variance:draw", ("task_variance", "near_random"), "task_variance.rst"),
    Figure("best_layer", "geneb.figures.layers:draw", ("best_layer",), "best_layer.rst"),
    Figure("sensitivity", "geneb.figures.sensitivity:draw", ("sensitivity_leaderboard",), "sensitivity.rst"),
    Figure("pretraining_gain", "geneb.figures.pretraining:draw", ("pretraining_gain",), "pretraining_gain.rst"),
    Figure("critical_difference", "geneb.figures.cd:draw", ("leaderboard",), "critical_difference.rst"),
    Figure("finetune_vs_probe", "geneb.figures.finetune_gain:draw", ("finetune_vs_probe",), "finetune_vs_probe.rst"),
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
