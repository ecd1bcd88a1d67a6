"""Shim: rule finetune_lora -> geneb.finetune.job.finetune_task (device and threads are execution knobs)."""

from geneb.core.logs import log_to_file
from geneb.finetune.job import finetune_task

log_to_file(snakemake.log[0])
p = snakemake.params.finetune
model, task = snakemake.wildcards.model, snakemake.wildcards.task
finetune_task(
    train=snakemake.input.train,
    test=snakemake.input.test,
    card=snakemake.input.card,
    shots=snakemake.input.shots,
    audit=snakemake.input.audit,
    scores_out=snakemake.output.scores,
    predictions_out=snakemake.output.predictions,
    task=task,
    model=model,
    settings=p["recipe"],
    probe_settings=p["probe"],
    extraction=p["extraction"],
    settings_hash=p["settings_hash"],
    n_layers=p["n_layers"],
    scratch=f"resources/finetune/scratch/{model}/{task}",
    adapter_dir=f"resources/finetune/adapters/{model}/{task}" if p["keep_adapter"] else None,
    device=snakemake.config["execution"]["device"],
    threads=snakemake.threads,
)
