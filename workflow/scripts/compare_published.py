"""Shim: rule compare_published_tables -> geneb.analysis.steps.compare_step."""

from geneb.analysis.steps import compare_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
compare_step(
    scores=snakemake.input.scores,
    published_scores=snakemake.input.published,
    models_yaml=snakemake.input.models,
    tasks_tsv=snakemake.input.tasks,
    analysis_config=snakemake.params.analysis,
    board_out=snakemake.output.board,
    left_out=snakemake.output.left_out,
    tasks_out=snakemake.output.tasks,
    summary_out=snakemake.output.summary,
    cards=list(snakemake.input.cards),
)
