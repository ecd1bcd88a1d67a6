"""Shim: rule import_published -> geneb.analysis.steps.import_published_step (folder of the input files)."""

from pathlib import Path

from geneb.analysis.steps import import_published_step
from geneb.core.logs import log_to_file

log_to_file(snakemake.log[0])
import_published_step(folder=str(Path(snakemake.input.results).parent), output=snakemake.output[0])
