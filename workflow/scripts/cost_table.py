"""Shim: rule cost_table -> geneb.tables.cost.write_cost_table (the run's embedding files -> cost.parquet)."""

from geneb.core.logs import log_to_file
from geneb.tables.cost import write_cost_table

log_to_file(snakemake.log[0])
write_cost_table(list(snakemake.input.embeddings), snakemake.output[0])
