"""Shim: rule pareto_table -> geneb.analysis.pareto.write_pareto (leaderboard, rank intervals, cost table)."""

from geneb.analysis.pareto import write_pareto
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
write_pareto(
    snakemake.input.leaderboard,
    snakemake.input.intervals,
    snakemake.input.cost,
    snakemake.params.model_sheet,
    snakemake.output[0],
)
