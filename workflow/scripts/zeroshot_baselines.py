"""Shim: rule zeroshot_baselines -> geneb.zeroshot.job.run_baselines_rule."""

from geneb.core.logs import log_to_file
from geneb.zeroshot.job import run_baselines_rule

log_to_file(snakemake.log[0])
run_baselines_rule(
    snakemake.input.rows, list(snakemake.input.background), snakemake.output[0], snakemake.params.baselines
)
