"""Shim: rule write_shot_indices -> geneb.probe.job.write_shot_indices."""

from geneb.core.logs import log_to_file
from geneb.probe.job import write_shot_indices

log_to_file(snakemake.log[0])
write_shot_indices(
    train=snakemake.input.train,
    card=snakemake.input.card,
    output=snakemake.output[0],
    task=snakemake.wildcards.task,
    protocol=snakemake.wildcards.protocol,
    settings=snakemake.params.draw,
)
