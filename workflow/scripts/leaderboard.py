"""Shim: rules leaderboard / published_leaderboard -> geneb.analysis.steps.leaderboard_step."""

from geneb.analysis.steps import leaderboard_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
leaderboard_step(
    scores=snakemake.input.scores,
    models_yaml=snakemake.input.models,
    tasks_tsv=snakemake.input.tasks,
    analysis_config=snakemake.params.analysis,
    view=snakemake.params.view,
    outputs=dict(snakemake.output.items()),
    leaderboard_config=snakemake.params.leaderboard,
    task_audit=snakemake.input.get("task_audit"),
    coverage_notes=snakemake.params.get("coverage"),
)
