"""Shim: rule zeroshot_figure -> geneb.figures.evaluation.render."""

from geneb.core.logs import log_to_file
from geneb.figures.evaluation import render

log_to_file(snakemake.log[0])
render(
    snakemake.input.leaderboard,
    snakemake.input.vs_probe,
    snakemake.input.probe_leaderboard,
    snakemake.output.png,
    protocol=snakemake.params.protocol,
)
