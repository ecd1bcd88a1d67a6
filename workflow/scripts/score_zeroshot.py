"""Shim: rule score_zeroshot -> geneb.zeroshot.job.run_score_rule (device, batch size, threads and the env route are knobs)."""

from geneb.core.logs import log_to_file
from geneb.run.layout import model_embeddings_dir
from geneb.zeroshot.job import run_score_rule

log_to_file(snakemake.log[0])
run_score_rule(
    snakemake.params.settings,
    snakemake.input.rows,
    snakemake.output[0],
    scoring=snakemake.params.scoring,
    execution=snakemake.config["execution"],
    threads=snakemake.threads,
    checks_dir=model_embeddings_dir(snakemake.wildcards.model, snakemake.wildcards.xhash),
    config=snakemake.config,
    log_file=snakemake.log[0],
)
