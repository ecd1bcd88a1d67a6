"""Shim: rule fit_probes -> geneb.probe.job.fit_probes (threads and HDF5 locking are execution knobs)."""

from pathlib import Path

from geneb.logs import log_to_file
from geneb.probe.job import fit_probes

log_to_file(snakemake.log[0])
fit_probes(
    train=snakemake.input.train,
    test=snakemake.input.test,
    card=snakemake.input.card,
    embeddings=snakemake.input.embeddings,
    shots=snakemake.input.shots,
    scores_out=snakemake.output.scores,
    predictions_out=snakemake.output.predictions,
    task=snakemake.wildcards.task,
    model=snakemake.wildcards.model,
    protocol=snakemake.wildcards.protocol,
    settings=snakemake.params.settings,
    threads=snakemake.threads,
    hdf5_locking=snakemake.config["execution"]["hdf5_locking"],
    settings_hash=Path(snakemake.input.embeddings).parent.name,  # resources/embeddings/{model}/{xhash}/{task}.h5
)
