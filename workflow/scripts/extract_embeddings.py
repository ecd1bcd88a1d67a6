"""Shim: rule extract_embeddings -> geneb.extract.job.run_rule_job (execution knobs and env route from config)."""

from geneb.extract.cache import configure_hdf5_locking

execution = snakemake.config["execution"]
configure_hdf5_locking(execution["hdf5_locking"])  # before anything imports h5py (NFS locks)

from pathlib import Path  # noqa: E402

from geneb.core.logs import log_to_file  # noqa: E402
from geneb.extract.job import run_rule_job  # noqa: E402

log_to_file(snakemake.log[0])
run_rule_job(
    snakemake.params.settings,
    Path(snakemake.input.card).parent,
    snakemake.output[0],
    log=snakemake.log[0],
    execution=execution,
    threads=snakemake.threads,
    config=snakemake.config,
)
