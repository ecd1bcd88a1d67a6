"""The score-table contract (`scores`, read it first), its assembly from probe tables (`aggregate`), agreement
with a committed reference across machines (`agreement`) and whether a table is older than its inputs
(`freshness`), and the mark of a collapsed fine-tune run (`collapse`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "concat_tables": "geneb.tables.aggregate",
    "COLLAPSED": "geneb.tables.collapse",
    "collapsed_cells": "geneb.tables.collapse",
    "FINETUNE_ATTR": "geneb.tables.collapse",
    "run_status": "geneb.tables.collapse",
    "status_columns": "geneb.tables.collapse",
    "INPUTS_NAME": "geneb.tables.freshness",
    "stale_warning": "geneb.tables.freshness",
    "stale_warnings": "geneb.tables.freshness",
    "write_input_record": "geneb.tables.freshness",
    "AnalysisInputError": "geneb.tables.scores",
    "CELL_KEYS": "geneb.tables.scores",
    "check_scores": "geneb.tables.scores",
    "COVERAGE_NOTES_ATTR": "geneb.tables.scores",
    "failed_cells": "geneb.tables.scores",
    "FAILED_CELLS_ATTR": "geneb.tables.scores",
    "failed_tasks": "geneb.tables.scores",
    "FAILED_TASKS_ATTR": "geneb.tables.scores",
    "load_scores": "geneb.tables.scores",
    "MISSING_CELL_RULE": "geneb.tables.scores",
    "MISSING_CELL_RULE_ATTR": "geneb.tables.scores",
    "probe_threads": "geneb.tables.scores",
    "PROBE_THREADS_ATTR": "geneb.tables.scores",
    "PUBLISHED_SEED": "geneb.tables.scores",
    "REGIMES": "geneb.tables.scores",
    "SCHEMA_VERSION": "geneb.tables.scores",
    "with_code_revision": "geneb.tables.scores",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.tables.aggregate import concat_tables as concat_tables
    from geneb.tables.collapse import COLLAPSED as COLLAPSED
    from geneb.tables.collapse import FINETUNE_ATTR as FINETUNE_ATTR
    from geneb.tables.collapse import collapsed_cells as collapsed_cells
    from geneb.tables.collapse import run_status as run_status
    from geneb.tables.collapse import status_columns as status_columns
    from geneb.tables.freshness import INPUTS_NAME as INPUTS_NAME
    from geneb.tables.freshness import stale_warning as stale_warning
    from geneb.tables.freshness import stale_warnings as stale_warnings
    from geneb.tables.freshness import write_input_record as write_input_record
    from geneb.tables.scores import CELL_KEYS as CELL_KEYS
    from geneb.tables.scores import COVERAGE_NOTES_ATTR as COVERAGE_NOTES_ATTR
    from geneb.tables.scores import FAILED_CELLS_ATTR as FAILED_CELLS_ATTR
    from geneb.tables.scores import FAILED_TASKS_ATTR as FAILED_TASKS_ATTR
    from geneb.tables.scores import MISSING_CELL_RULE as MISSING_CELL_RULE
    from geneb.tables.scores import MISSING_CELL_RULE_ATTR as MISSING_CELL_RULE_ATTR
    from geneb.tables.scores import PROBE_THREADS_ATTR as PROBE_THREADS_ATTR
    from geneb.tables.scores import PUBLISHED_SEED as PUBLISHED_SEED
    from geneb.tables.scores import REGIMES as REGIMES
    from geneb.tables.scores import SCHEMA_VERSION as SCHEMA_VERSION
    from geneb.tables.scores import AnalysisInputError as AnalysisInputError
    from geneb.tables.scores import check_scores as check_scores
    from geneb.tables.scores import failed_cells as failed_cells
    from geneb.tables.scores import failed_tasks as failed_tasks
    from geneb.tables.scores import load_scores as load_scores
    from geneb.tables.scores import probe_threads as probe_threads
    from geneb.tables.scores import with_code_revision as with_code_revision
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
