"""Shim: rule task_audit_table -> geneb.analysis.steps.task_audit_step."""

from geneb.analysis.steps import task_audit_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
task_audit_step(
    scores=snakemake.input.scores,
    audits=list(snakemake.input.audits),
    cards=list(snakemake.input.cards),
    models_yaml=snakemake.input.models,
    protocol=snakemake.params.protocol,
    output=snakemake.output[0],
)
