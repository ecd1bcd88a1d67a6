"""Names of the leaderboard and analysis tables: the contract between the library and the workflow rules
(workflow/rules/common.smk builds the rules' output lists from these). The analysis tables are derived from
the analysis registry (`geneb.analysis.registry`); importing this module loads no analysis code.
"""

from __future__ import annotations

from geneb.analysis.registry import analysis_tables

#: tables of the `leaderboard` rule (results/tables/{name}.parquet)
LEADERBOARD_TABLES: tuple[str, ...] = ("leaderboard", "leaderboard_tasks", "contamination", "rank_separability")

__all__ = ["LEADERBOARD_TABLES", "all_tables", "analysis_tables"]


def all_tables() -> tuple[str, ...]:
    """The leaderboard tables, then every registered analysis table (what `run.run_analyses` returns)."""
    return LEADERBOARD_TABLES + analysis_tables()
