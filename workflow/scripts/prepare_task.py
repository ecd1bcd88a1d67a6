"""Shim: rule prepare_task -> geneb.tasks.prepare.prepare_from_params."""

from geneb.logs import log_to_file
from geneb.tasks.prepare import prepare_from_params

log_to_file(snakemake.log[0])
prepare_from_params(snakemake.wildcards.task, snakemake.params.task, snakemake.output.card)
