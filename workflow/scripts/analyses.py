"""Shim: rules analyses / published_analyses -> geneb.analysis.steps.analyses_step.

The predictions folder is the common root of the prediction inputs (results/predictions/{protocol}/{model}/
{task}.parquet); the published view has none.
"""

from pathlib import Path

from geneb.analysis.steps import analyses_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
predictions = list(snakemake.input.get("predictions", []))
analyses_step(
    scores=snakemake.input.scores,
    models_yaml=snakemake.input.models,
    tasks_tsv=snakemake.input.tasks,
    analysis_config=snakemake.params.analysis,
    view=snakemake.params.view,
    predictions_root=str(Path(predictions[0]).parents[2]) if predictions else None,
    outdir=str(Path(snakemake.output.summary).parent),
)
