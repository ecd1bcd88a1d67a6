"""Every figure GENEB draws, the tables each reads and its caption, and their rendering to files.

The figure registry: every figure the `paper_figures` rule draws, with its caption file, drawing function and
the tables it reads. The figure rules' outputs, their `report()` entries (workflow/rules/common.smk), the
renderer (`render.render_figures`) and the HTML report's figures are all derived from it.

Adding a figure: write its drawing function `draw_<name>(tables, display, *, protocol, regime)` returning a
matplotlib figure (in a module of `geneb.figures`), write its caption `workflow/report/{name}.rst` and add one
`Figure(...)` line to `_FIGURES` naming it (`_drawing(module, name)`, imported when figures are drawn: reading this
registry imports no matplotlib; docs/analyses.md).

Render every analysis figure from the analysis tables of one run (what the figures rule calls).

Figures (PNG at 300 dpi and PDF, same stem): those of the figure registry (`geneb.figures.registry`). Each is
drawn for one protocol (the configured default, or the only one) and regime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from geneb._exports import LazyFunction
from geneb.core import integrity
from geneb.tables.scores import AnalysisInputError


@dataclass(frozen=True)
class Figure:
    """One registered figure: results/figures/{name}.png and .pdf, drawn by the function `draw` from the tables
    `inputs` (results/tables/{input}.parquet) and captioned by the file `caption` in workflow/report/ (the
    caption of both `snakemake --report` and the HTML report)."""

    name: str
    draw: Callable[..., Any]
    inputs: tuple[str, ...]
    caption: str


def _drawing(module: str, name: str) -> LazyFunction:
    """The drawing function `name` of geneb.figures.<module>, imported when figures are drawn (with matplotlib),
    not when the workflow reads the figure names."""
    return LazyFunction(f"geneb.figures.{module}", name)


#: the registered figures, in report order
_FIGURES: list[Figure] = [
    Figure("heatmap", _drawing("leaderboard", "draw_heatmap"), ("leaderboard",), "heatmap.rst"),
    Figure("scale", _drawing("paper", "draw_scale"), ("leaderboard", "scale", "in_domain"), "scale.rst"),
    Figure("rank_bump", _drawing("leaderboard", "draw_rank_bump"), ("leaderboard",), "rank_bump.rst"),
    Figure("fewshot", _drawing("paper", "draw_fewshot"), ("fewshot_drops", "fewshot_inverse"), "fewshot.rst"),
    Figure("matched_pairs", _drawing("paper", "draw_matched_pairs"), ("matched_pairs",), "matched_pairs.rst"),
    Figure(
        "task_variance",
        _drawing("leaderboard", "draw_task_variance"),
        ("task_variance", "near_random"),
        "task_variance.rst",
    ),
    Figure("best_layer", _drawing("evaluation", "draw_best_layer"), ("best_layer",), "best_layer.rst"),
    Figure("sensitivity", _drawing("evaluation", "draw_sensitivity"), ("sensitivity_leaderboard",), "sensitivity.rst"),
    Figure(
        "pretraining_gain",
        _drawing("evaluation", "draw_pretraining_gain"),
        ("pretraining_gain",),
        "pretraining_gain.rst",
    ),
    Figure(
        "critical_difference",
        _drawing("leaderboard", "draw_critical_difference"),
        ("leaderboard",),
        "critical_difference.rst",
    ),
    Figure(
        "finetune_vs_probe",
        _drawing("evaluation", "draw_finetune_vs_probe"),
        ("finetune_vs_probe",),
        "finetune_vs_probe.rst",
    ),
]


def figures() -> tuple[Figure, ...]:
    """The registered figures, in registry order."""
    return tuple(_FIGURES)


def figure_names() -> tuple[str, ...]:
    """The registered figures' names (results/figures/{name}.png and .pdf), in registry order."""
    return tuple(f.name for f in _FIGURES)


def _read(tables_dir: Path, name: str) -> pd.DataFrame:
    path = tables_dir / f"{name}.parquet"
    if not path.exists():
        raise AnalysisInputError(f"figures: table {path} not found; run the analyses first")
    return integrity.read_parquet(path)


def choose_protocol(board: pd.DataFrame, protocol: str | None) -> str:
    """`protocol` if the board has it; without one, the board's only protocol. Raises AnalysisInputError."""
    have = sorted(board["protocol"].unique())
    if protocol is None:
        if len(have) != 1:
            raise AnalysisInputError(f"the leaderboard has protocols {have}; name one")
        return have[0]
    if protocol not in have:
        raise AnalysisInputError(f"protocol {protocol!r} not in the leaderboard (have {have})")
    return protocol


def render_figures(
    tables_dir: str | Path, figures_dir: str | Path, *, protocol: str | None = None, regime: str = "full"
) -> list[Path]:
    """Draw every registered figure (`geneb.figures.registry`) from `tables_dir/*.parquet` into
    `figures_dir/{name}.png|pdf`; returns the PNG paths. Raises AnalysisInputError for a missing table."""
    tables_dir, figures_dir = Path(tables_dir), Path(figures_dir)
    board = _read(tables_dir, "leaderboard")
    protocol = choose_protocol(board, protocol)
    models = _read(tables_dir, "models")
    display = dict(zip(models["model"], models["display"].fillna(models["model"])))
    from geneb.figures.style import paper_style, save  # matplotlib: only when drawing

    out = []
    with paper_style():
        for fig in figures():
            tables = {name: board if name == "leaderboard" else _read(tables_dir, name) for name in fig.inputs}
            png, _ = save(fig.draw(tables, display, protocol=protocol, regime=regime), figures_dir / f"{fig.name}.png")
            out.append(png)
    return out
