"""Shim: rules report / published_report -> geneb.report.html.build_report."""

from pathlib import Path

from geneb.core.logs import log_to_file
from geneb.report.html import build_report
from geneb.zeroshot.plan import ZEROSHOT_REPORT_INPUTS

log_to_file(snakemake.log[0])
build_report(
    Path(snakemake.input.summary).parent,
    Path(snakemake.input.figures[0]).parent,
    snakemake.output[0],
    config=dict(snakemake.params.config),
    captions=dict(snakemake.params.captions),
    title=snakemake.params.title,
    protocol=snakemake.params.protocol,
    regime=snakemake.params.regime,
    reproduce=snakemake.input.get("reproduce"),
    scores=snakemake.input.get("scores"),
    task_audit=snakemake.input.get("task_audit"),
    cards=list(snakemake.input.get("cards", [])),
    zeroshot=dict(zip(ZEROSHOT_REPORT_INPUTS, snakemake.input.get("zeroshot", []))) or None,
)
