"""Render every analysis figure from the analysis tables of one run (what the figures rule calls).

Figures (PNG at 300 dpi and PDF, same stem): those of the figure registry (`geneb.figures.registry`). Each is
drawn for one protocol (the configured default, or the only one) and regime.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from geneb.core import integrity
from geneb.figures.registry import figures
from geneb.figures.style import paper_style, save
from geneb.tables.scores import AnalysisInputError


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
    out = []
    with paper_style():
        for fig in figures():
            tables = {name: board if name == "leaderboard" else _read(tables_dir, name) for name in fig.inputs}
            png, _ = save(fig.draw(tables, display, protocol=protocol, regime=regime), figures_dir / f"{fig.name}.png")
            out.append(png)
    return out
