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

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "clean_differences": "geneb.analysis.controls",
    "NO_CLEAN_ROWS": "geneb.analysis.controls",
    "load_model_meta": "geneb.analysis.inputs",
    "load_task_meta": "geneb.analysis.inputs",
    "MODEL_COLUMNS": "geneb.analysis.inputs",
    "model_frame": "geneb.analysis.inputs",
    "SHOTS": "geneb.analysis.paper",
    "capped_tasks": "geneb.analysis.published",
    "PROTOCOL": "geneb.analysis.published",
    "AGGREGATES": "geneb.analysis.ranking",
    "EXCLUDE_FLAGGED_ATTR": "geneb.analysis.ranking",
    "rank_desc": "geneb.analysis.ranking",
    "TASK_FLAGS_ATTR": "geneb.analysis.ranking",
    "wide_view": "geneb.analysis.ranking",
    "all_tables": "geneb.analysis.registry",
    "analysis_tables": "geneb.analysis.registry",
    "LEADERBOARD_TABLES": "geneb.analysis.registry",
    "report_sections": "geneb.analysis.registry",
    "Section": "geneb.analysis.registry",
    "compare_cells": "geneb.analysis.stats",
    "read_cell": "geneb.analysis.stats",
    "analyses_step": "geneb.analysis.steps",
    "compare_step": "geneb.analysis.steps",
    "import_published_step": "geneb.analysis.steps",
    "leaderboard_step": "geneb.analysis.steps",
    "reproduce_step": "geneb.analysis.steps",
    "submission_step": "geneb.analysis.steps",
    "task_audit_step": "geneb.analysis.steps",
    "separable": "geneb.analysis.tiers",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.analysis.controls import NO_CLEAN_ROWS as NO_CLEAN_ROWS
    from geneb.analysis.controls import clean_differences as clean_differences
    from geneb.analysis.inputs import MODEL_COLUMNS as MODEL_COLUMNS
    from geneb.analysis.inputs import load_model_meta as load_model_meta
    from geneb.analysis.inputs import load_task_meta as load_task_meta
    from geneb.analysis.inputs import model_frame as model_frame
    from geneb.analysis.paper import SHOTS as SHOTS
    from geneb.analysis.published import PROTOCOL as PROTOCOL
    from geneb.analysis.published import capped_tasks as capped_tasks
    from geneb.analysis.ranking import AGGREGATES as AGGREGATES
    from geneb.analysis.ranking import EXCLUDE_FLAGGED_ATTR as EXCLUDE_FLAGGED_ATTR
    from geneb.analysis.ranking import TASK_FLAGS_ATTR as TASK_FLAGS_ATTR
    from geneb.analysis.ranking import rank_desc as rank_desc
    from geneb.analysis.ranking import wide_view as wide_view
    from geneb.analysis.registry import LEADERBOARD_TABLES as LEADERBOARD_TABLES
    from geneb.analysis.registry import Section as Section
    from geneb.analysis.registry import all_tables as all_tables
    from geneb.analysis.registry import analysis_tables as analysis_tables
    from geneb.analysis.registry import report_sections as report_sections
    from geneb.analysis.stats import compare_cells as compare_cells
    from geneb.analysis.stats import read_cell as read_cell
    from geneb.analysis.steps import analyses_step as analyses_step
    from geneb.analysis.steps import compare_step as compare_step
    from geneb.analysis.steps import import_published_step as import_published_step
    from geneb.analysis.steps import leaderboard_step as leaderboard_step
    from geneb.analysis.steps import reproduce_step as reproduce_step
    from geneb.analysis.steps import submission_step as submission_step
    from geneb.analysis.steps import task_audit_step as task_audit_step
    from geneb.analysis.tiers import separable as separable
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
