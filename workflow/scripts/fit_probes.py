"""Shim: rule fit_probes -> geneb.probe.worker.run_fit_probes_job (threads, HDF5 locking and the probe
worker are execution knobs)."""

from pathlib import Path

from geneb.core.logs import log_to_file
from geneb.probe.worker import run_fit_probes_job

log_to_file(snakemake.log[0])
run_fit_probes_job(
    {
        "train": snakemake.input.train,
        "test": snakemake.input.test,
        "card": snakemake.input.card,
        "embeddings": snakemake.input.embeddings,
        "shots": snakemake.input.shots,
        "audit": snakemake.input.audit,
        "scores_out": snakemake.output.scores,
        "predictions_out": snakemake.output.predictions,
        "task": snakemake.wildcards.task,
        "model": snakemake.wildcards.model,
        "protocol": snakemake.wildcards.protocol,
        "settings": snakemake.params.settings,
        "n_layers": snakemake.params.views["n_layers"],
        "views": snakemake.params.views.get("views"),
        "threads": snakemake.threads,
        "hdf5_locking": snakemake.config["execution"]["hdf5_locking"],
        # resources/embeddings/{model}/{xhash}/{task}/{thash}.h5
        "settings_hash": Path(snakemake.input.embeddings).parents[1].name,
    },
    log=snakemake.log[0],
    execution=snakemake.config["execution"],
)
