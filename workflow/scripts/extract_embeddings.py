"""Shim: rule extract_embeddings -> geneb.extract.extract_task (execution knobs from config)."""

from geneb.embeddings.cache import configure_hdf5_locking

execution = snakemake.config["execution"]
configure_hdf5_locking(execution["hdf5_locking"])  # before anything imports h5py (case B37)

from pathlib import Path  # noqa: E402

from geneb.extract import extract_task  # noqa: E402
from geneb.logs import log_to_file  # noqa: E402

log_to_file(snakemake.log[0])
extract_task(
    snakemake.params.settings,
    Path(snakemake.input.card).parent,
    snakemake.output[0],
    device=execution["device"],
    batch_size=execution["batch_size"],
    batch_tokens=execution["batch_tokens"],
    threads=snakemake.threads,
    hdf5_locking=execution["hdf5_locking"],
)
