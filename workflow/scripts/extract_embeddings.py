"""Shim: rule extract_embeddings -> geneb.embeddings.extract.extract_task (execution knobs from config)."""

from pathlib import Path

from geneb.embeddings.extract import extract_task
from geneb.logs import log_to_file

log_to_file(snakemake.log[0])
execution = snakemake.config["execution"]
extract_task(
    snakemake.params.settings,
    Path(snakemake.input.card).parent,
    snakemake.output[0],
    device=execution["device"],
    batch_size=execution["batch_size"],
    hdf5_locking=execution["hdf5_locking"],
)
