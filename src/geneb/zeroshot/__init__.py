"""Zero-shot scoring: variant effects and likelihood preferences of a model with no training at all, beside the
probes (docs/zeroshot.md). `task` is the contract every part reads: what a zero-shot task is on disk and in memory;
`plan` is the stage's part of the run plan (its tasks, models and paths, torch-free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "build_tasks": "geneb.zeroshot.build",
    "run_baselines_rule": "geneb.zeroshot.job",
    "run_build_rule": "geneb.zeroshot.job",
    "run_score_rule": "geneb.zeroshot.job",
    "ZeroShotPlan": "geneb.zeroshot.plan",
    "build_reference_lms": "geneb.zeroshot.reference_lms",
    "check_pretraining_task": "geneb.zeroshot.reference_lms",
    "PRETRAINING_TASK": "geneb.zeroshot.reference_lms",
    "Background": "geneb.zeroshot.scorers",
    "EMBEDDING": "geneb.zeroshot.scorers",
    "fit_markov": "geneb.zeroshot.scorers",
    "markov_scores": "geneb.zeroshot.scorers",
    "PSEUDOCOUNT": "geneb.zeroshot.scorers",
    "score_with": "geneb.zeroshot.scorers",
    "Scorer": "geneb.zeroshot.scorers",
    "scorer_table": "geneb.zeroshot.scorers",
    "MACRO": "geneb.zeroshot.tables",
    "METRIC_COLUMNS": "geneb.zeroshot.tables",
    "N_BOOT": "geneb.zeroshot.tables",
    "run_tables_rule": "geneb.zeroshot.tables",
    "score_metrics": "geneb.zeroshot.tables",
    "ZEROSHOT_REPORT_INPUTS": "geneb.zeroshot.plan",
    "check_row_scores": "geneb.zeroshot.task",
    "MARKOV_PREFIX": "geneb.zeroshot.task",
    "NotApplicable": "geneb.zeroshot.task",
    "read_zeroshot_catalogue": "geneb.zeroshot.task",
    "read_zeroshot_task": "geneb.zeroshot.task",
    "ROW_SCORE_COLUMNS": "geneb.zeroshot.task",
    "write_zeroshot_task": "geneb.zeroshot.task",
    "ZeroShotCatalogueError": "geneb.zeroshot.task",
    "ZeroShotModel": "geneb.zeroshot.task",
    "ZeroShotTask": "geneb.zeroshot.task",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.zeroshot.build import build_tasks as build_tasks
    from geneb.zeroshot.job import run_baselines_rule as run_baselines_rule
    from geneb.zeroshot.job import run_build_rule as run_build_rule
    from geneb.zeroshot.job import run_score_rule as run_score_rule
    from geneb.zeroshot.plan import ZEROSHOT_REPORT_INPUTS as ZEROSHOT_REPORT_INPUTS
    from geneb.zeroshot.plan import ZeroShotPlan as ZeroShotPlan
    from geneb.zeroshot.reference_lms import PRETRAINING_TASK as PRETRAINING_TASK
    from geneb.zeroshot.reference_lms import build_reference_lms as build_reference_lms
    from geneb.zeroshot.reference_lms import check_pretraining_task as check_pretraining_task
    from geneb.zeroshot.scorers import EMBEDDING as EMBEDDING
    from geneb.zeroshot.scorers import PSEUDOCOUNT as PSEUDOCOUNT
    from geneb.zeroshot.scorers import Background as Background
    from geneb.zeroshot.scorers import Scorer as Scorer
    from geneb.zeroshot.scorers import fit_markov as fit_markov
    from geneb.zeroshot.scorers import markov_scores as markov_scores
    from geneb.zeroshot.scorers import score_with as score_with
    from geneb.zeroshot.scorers import scorer_table as scorer_table
    from geneb.zeroshot.tables import MACRO as MACRO
    from geneb.zeroshot.tables import METRIC_COLUMNS as METRIC_COLUMNS
    from geneb.zeroshot.tables import N_BOOT as N_BOOT
    from geneb.zeroshot.tables import run_tables_rule as run_tables_rule
    from geneb.zeroshot.tables import score_metrics as score_metrics
    from geneb.zeroshot.task import MARKOV_PREFIX as MARKOV_PREFIX
    from geneb.zeroshot.task import ROW_SCORE_COLUMNS as ROW_SCORE_COLUMNS
    from geneb.zeroshot.task import NotApplicable as NotApplicable
    from geneb.zeroshot.task import ZeroShotCatalogueError as ZeroShotCatalogueError
    from geneb.zeroshot.task import ZeroShotModel as ZeroShotModel
    from geneb.zeroshot.task import ZeroShotTask as ZeroShotTask
    from geneb.zeroshot.task import check_row_scores as check_row_scores
    from geneb.zeroshot.task import read_zeroshot_catalogue as read_zeroshot_catalogue
    from geneb.zeroshot.task import read_zeroshot_task as read_zeroshot_task
    from geneb.zeroshot.task import write_zeroshot_task as write_zeroshot_task
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
