"""Shim: rule compare_published_report -> geneb.report.compare.build_compare_report."""

from geneb.core.logs import log_to_file
from geneb.report.compare import build_compare_report

log_to_file(snakemake.log[0])
build_compare_report(
    snakemake.input.board,
    snakemake.input.left_out,
    snakemake.input.tasks,
    snakemake.input.summary,
    snakemake.output.html,
    snakemake.output.png,
    scores_path=snakemake.input.scores,
    models_yaml=snakemake.input.models,
)
