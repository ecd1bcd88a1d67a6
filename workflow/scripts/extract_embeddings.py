"""Shim: rule extract_embeddings -> the node's model server (geneb.model_server.client), or
geneb.extract.extract_task in this process when execution.model_server is false (execution knobs from config)."""

from geneb.embeddings.cache import configure_hdf5_locking

execution = snakemake.config["execution"]
configure_hdf5_locking(execution["hdf5_locking"])  # before anything imports h5py (case B37)

from pathlib import Path  # noqa: E402

from geneb.logs import log_to_file  # noqa: E402

log_to_file(snakemake.log[0])
knobs = dict(
    device=execution["device"],
    batch_size=execution["batch_size"],
    threads=snakemake.threads,
    hdf5_locking=execution["hdf5_locking"],
)
task_dir = Path(snakemake.input.card).parent
if execution["model_server"]:
    from geneb.model_server.client import extract_via_server

    extract_via_server(
        snakemake.params.settings, task_dir, snakemake.output[0], idle_s=execution["model_server_idle_s"], **knobs
    )
else:
    from geneb.extract import extract_task

    extract_task(snakemake.params.settings, task_dir, snakemake.output[0], **knobs)
