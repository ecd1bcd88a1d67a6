"""Shim: rule audit_task -> geneb.tasks.audit.audit_prepared."""

from geneb.core.logs import log_to_file
from geneb.tasks.audit import audit_prepared

log_to_file(snakemake.log[0])
audit_prepared(
    train=snakemake.input.train,
    test=snakemake.input.test,
    card=snakemake.input.card,
    output=snakemake.output[0],
    task=snakemake.wildcards.task,
    settings=snakemake.params.settings,
    threads=snakemake.threads,
)
