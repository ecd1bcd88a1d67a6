"""Shim: rule submission -> geneb.analysis.steps.submission_step (spec folder = folder of the spec input)."""

from pathlib import Path

from geneb.analysis.steps import submission_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
submission_step(
    scores=snakemake.input.scores,
    models_yaml=snakemake.input.models,
    tasks_tsv=snakemake.input.tasks,
    spec_dir=str(Path(snakemake.input.spec).parent),
    model=snakemake.wildcards.model,
    submitted_by=snakemake.params.submitted_by,
    output=snakemake.output[0],
    cards=list(snakemake.input.cards),
)
