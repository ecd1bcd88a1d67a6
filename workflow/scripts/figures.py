"""Shim: rules paper_figures / published_figures -> geneb.figures.registry.render_figures."""

from pathlib import Path

from geneb.core.logs import log_to_file
from geneb.figures.registry import render_figures

log_to_file(snakemake.log[0])
render_figures(
    Path(snakemake.input.leaderboard).parent,
    Path(snakemake.output.pdf[0]).parent,
    protocol=snakemake.params.protocol,
    regime=snakemake.params.regime,
)
