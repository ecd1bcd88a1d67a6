"""Render every analysis figure from the analysis tables of one run (what the figures rule calls).

Figures (PNG at 300 dpi and PDF, same stem): `heatmap`, `scale`, `rank_bump`, `fewshot`, `matched_pairs`,
`task_variance`. Each is drawn for one protocol (the configured default, or the only one) and regime.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from geneb.analysis.outputs import FIGURES
from geneb.figures import bump, fewshot, forest, heatmap, scale, variance
from geneb.figures.style import paper_style, save
from geneb.scores import AnalysisInputError


def _read(tables_dir: Path, name: str) -> pd.DataFrame:
    path = tables_dir / f"{name}.parquet"
    if not path.exists():
        raise AnalysisInputError(f"figures: table {path} not found; run the analyses first")
    return pd.read_parquet(path)


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
    """Draw FIGURES from `tables_dir/*.parquet` into `figures_dir/{name}.png|pdf`; returns the PNG paths."""
    tables_dir, figures_dir = Path(tables_dir), Path(figures_dir)
    board = _read(tables_dir, "leaderboard")
    protocol = choose_protocol(board, protocol)
    models = _read(tables_dir, "models")
    display = dict(zip(models["model"], models["display"].fillna(models["model"])))
    kw = {"protocol": protocol, "regime": regime}
    makers = {
        "heatmap": lambda: heatmap.heatmap(board, display, **kw),
        "scale": lambda: scale.scale_scatter(
            board, _read(tables_dir, "scale"), _read(tables_dir, "in_domain"), display, **kw
        ),
        "rank_bump": lambda: bump.rank_bump(board, display, **kw),
        "fewshot": lambda: fewshot.fewshot_plot(
            _read(tables_dir, "fewshot_drops"), _read(tables_dir, "fewshot_inverse"), display, protocol=protocol
        ),
        "matched_pairs": lambda: forest.forest(_read(tables_dir, "matched_pairs"), display, **kw),
        "task_variance": lambda: variance.task_variance(
            _read(tables_dir, "task_variance"), _read(tables_dir, "near_random"), **kw
        ),
    }
    out = []
    with paper_style():
        for name in FIGURES:
            png, _ = save(makers[name](), figures_dir / f"{name}.png")
            out.append(png)
    return out
