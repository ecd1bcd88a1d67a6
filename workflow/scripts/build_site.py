"""Shim: rule build_site -> geneb.site.build.build_site (the run's results folder, one run)."""

from pathlib import Path

from geneb.core.logs import log_to_file
from geneb.site.build import build_site, site_summary

log_to_file(snakemake.log[0])
index = build_site(
    [Path(snakemake.input.leaderboard).parent.parent],
    snakemake.output[0],
    captions=dict(snakemake.params.captions),
)
print(site_summary(index))
