"""The analyses on GENEB score tables, grouped by the question they answer (methods and terms: docs/analyses.md).

Modules: `inputs` (what the analyses read: the score-table contract reduced to cells, views, model and task
metadata, the context an analysis sees), `stats` (paired two-level bootstrap replicates and paired tests),
`ranking` (leaderboards with Borda rank, contamination, rank instability, recommendation), `tiers` (statistically
tied tiers), `paper` (scale, matched pairs, few-shot, task difficulty), `published` (the paper's published results:
import, reproduction, a new model beside them, submission file), `evaluation` (views, protocol sensitivity, best
layer), `controls` (task audit, random-init twins, fine-tune vs probe), `registry` (every analysis table, its
function and report sections, and the table names the workflow reads), `run` (run them all and write the tables)
and `steps` (the rules' file-level entry points). Read `registry` first.
"""
