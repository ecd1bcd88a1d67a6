"""Shim: rule aggregate_scores -> geneb.tables.aggregate.concat_tables (failures: a partial run's failures file; cards and
audits: the data-hygiene and overlap columns)."""

from geneb.core.logs import log_to_file
from geneb.tables.aggregate import concat_tables
from geneb.tables.freshness import write_input_record

log_to_file(snakemake.log[0])
failures = list(snakemake.input.failures)
concat_tables(
    list(snakemake.input.tables),
    snakemake.output[0],
    failures=failures[0] if failures else None,
    cards=list(snakemake.input.cards),
    audits=list(snakemake.input.audits),
)
write_input_record(snakemake.output.inputs, snakemake.input.resources)
