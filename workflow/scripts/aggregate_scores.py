"""Shim: rule aggregate_scores -> geneb.aggregate.concat_tables."""

from geneb.aggregate import concat_tables
from geneb.logs import log_to_file

log_to_file(snakemake.log[0])
concat_tables(list(snakemake.input), snakemake.output[0])
