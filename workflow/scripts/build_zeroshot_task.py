"""Shim: rule build_zeroshot_task -> geneb.zeroshot.job.run_build_rule (where sources are read is resolved here,
outside the rerun key)."""

from geneb.core.logs import log_to_file
from geneb.zeroshot.job import run_build_rule

log_to_file(snakemake.log[0])
run_build_rule(snakemake.params.task, snakemake.output.rows, config=snakemake.config)
