"""Shim: rule zeroshot_tables -> geneb.zeroshot.tables.run_tables_rule."""

from geneb.core.logs import log_to_file
from geneb.zeroshot.tables import run_tables_rule

log_to_file(snakemake.log[0])
run_tables_rule(
    rows=list(snakemake.input.rows),
    score_files=[*snakemake.input.scores, *snakemake.input.baselines],
    leaderboard=snakemake.input.leaderboard,
    outputs=dict(snakemake.output.items()),
    bootstrap=snakemake.params.tables["bootstrap"],
    twins=snakemake.params.tables["twins"],
)
