"""Shim: rule prepare_task -> geneb.tasks.prepare.prepare_from_params."""

from geneb.core.logs import log_to_file
from geneb.tasks.catalogue import source_string
from geneb.tasks.prepare import prepare_from_params

log_to_file(snakemake.log[0])
# where to read is resolved here, from config and environment: the rerun key holds the data's identity only;
# the task lock and the download limits are not output-affecting (a mismatch refuses, it never changes the data)
source = source_string(snakemake.params.task["catalogue_row"], snakemake.config)
prepare_from_params(
    snakemake.wildcards.task,
    snakemake.params.task,
    source,
    snakemake.output.card,
    lock_path=snakemake.config["task_lock"],
    download=snakemake.config["task_download"],
)
