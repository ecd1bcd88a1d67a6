"""Shim: rule reproduce_paper -> geneb.analysis.steps.reproduce_step."""

from geneb.analysis.steps import reproduce_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
reproduce_step(
    claims=snakemake.input.claims,
    summary=snakemake.input.summary,
    leaderboard=snakemake.input.leaderboard,
    models=snakemake.input.models,
    output=snakemake.output[0],
)
