"""The analysis registry: every table the `analyses` rule writes, the function that computes it and the
report sections that show it, and the table names derived from it that the workflow reads.

The analysis registry: every table the `analyses` rule writes, the function that computes it and the report
sections that show it. Everything else is derived from it: `run.run_analyses`, the output lists
(`outputs.analysis_tables`, the rules' `output:`) and the HTML report's "Analysis tables" sections.

Adding an analysis: write its module (a function taking a context of `geneb.analysis.inputs` and returning
{table name: frame}, named for what it computes, e.g. `scale_tables`) and add one `Analysis(...)` line to
`_ANALYSES` naming it (`_analysis(module, name)`, imported when the analyses run: reading this registry, as the
workflow does while it plans, imports no analysis code; docs/analyses.md).

Scopes: "regime" runs once per (protocol, regime) and its tables get `protocol` and `regime` columns;
"protocol" once per protocol, after its regimes (tables get `protocol`); "run" once, after every protocol.

Names of the leaderboard and analysis tables: the contract between the library and the workflow rules
(workflow/rules/common.smk builds the rules' output lists from these). The analysis tables are derived from
the analysis registry (`geneb.analysis.registry`); importing this module loads no analysis code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geneb._exports import LazyFunction
from geneb.tables.scores import AnalysisInputError

_SCOPES = ("regime", "protocol", "run")


@dataclass(frozen=True)
class Section:
    """One table of the HTML report's "Analysis tables": `heading` over the rows of `table` of the report's
    protocol/regime. by: the columns filtered to the report's protocol and regime (those present; then both
    columns are dropped), None: the whole table as written; only: a boolean column, keep its true rows."""

    heading: str
    table: str
    by: tuple[str, ...] | None = ("protocol", "regime")
    only: str | None = None


@dataclass(frozen=True)
class Analysis:
    """One registered analysis: the function `compute` takes the context of `scope` and returns {name: frame}
    for some of `tables` (a table it skips stays empty); `sections` show them in the report, in registry order."""

    name: str
    scope: str
    compute: Callable[[Any], dict[str, Any]]
    tables: tuple[str, ...]
    sections: tuple[Section, ...] = ()

    def __post_init__(self) -> None:
        if self.scope not in _SCOPES:
            raise AnalysisInputError(f"analysis {self.name!r}: scope must be one of {_SCOPES}, not {self.scope!r}")
        for s in self.sections:
            if s.table not in self.tables:
                raise AnalysisInputError(f"analysis {self.name!r}: section {s.heading!r} shows unknown {s.table!r}")


def _analysis(module: str, name: str) -> LazyFunction:
    """The analysis function `name` of geneb.analysis.<module>, imported when the analyses run, not when the
    workflow reads the table names."""
    return LazyFunction(f"geneb.analysis.{module}", name)


#: the registered analyses, in report order (tables and sections follow it)
_ANALYSES: list[Analysis] = [
    Analysis("models", "run", _analysis("inputs", "models_tables"), ("models",)),
    Analysis("rank_intervals", "regime", _analysis("ranking", "rank_interval_tables"), ("rank_intervals",)),
    Analysis(
        "scale",
        "regime",
        _analysis("paper", "scale_tables"),
        ("scale", "in_domain", "reversals"),
        (
            Section("Scale: Spearman ρ", "scale"),
            Section("In-domain models (reversal count)", "in_domain"),
            Section("Reversals", "reversals"),
        ),
    ),
    Analysis(
        "matched_pairs",
        "regime",
        _analysis("paper", "matched_pair_tables"),
        ("matched_pairs",),
        (Section("Matched pairs significant after Benjamini-Hochberg", "matched_pairs", only="significant"),),
    ),
    Analysis(
        "fewshot",
        "protocol",
        _analysis("paper", "fewshot_tables"),
        ("fewshot_drops", "fewshot_inverse", "fewshot_regimes"),
        (
            Section("Few-shot drops (macro MCC)", "fewshot_drops", by=("protocol",)),
            Section("Top model per regime and Kendall τ between regimes", "fewshot_regimes", by=("protocol",)),
            Section(
                "Inverse pattern: Spearman ρ between full-data level and drop", "fewshot_inverse", by=("protocol",)
            ),
        ),
    ),
    Analysis(
        "category_kendall",
        "regime",
        _analysis("ranking", "category_kendall_tables"),
        ("category_kendall",),
        (Section("Kendall τ between category rankings", "category_kendall"),),
    ),
    Analysis(
        "difficulty",
        "run",
        _analysis("paper", "difficulty_tables"),
        ("near_random", "task_variance", "specialists"),
        (
            Section("Near-random tasks", "near_random", only="near_random"),
            Section("High-variance tasks", "task_variance", only="high_variance"),
            Section("Category winners and specialists", "specialists"),
        ),
    ),
    Analysis(
        "recommendation",
        "regime",
        _analysis("ranking", "recommendation_tables"),
        ("recommendations",),
        (Section("Recommendation per category", "recommendations"),),
    ),
    Analysis(
        "best_layer",
        "run",
        _analysis("evaluation", "best_layer_tables"),
        ("best_layer",),
        (
            Section(
                "Best layer per model and category (relative depth) and its gain over the registry's layer",
                "best_layer",
            ),
        ),
    ),
    Analysis(
        "sensitivity",
        "run",
        _analysis("evaluation", "sensitivity_tables"),
        ("sensitivity", "sensitivity_leaderboard"),
        (
            Section(
                "How much of a ranking is the protocol: each evaluation choice against the reference", "sensitivity"
            ),
        ),
    ),
    Analysis(
        "pretraining_gain",
        "run",
        _analysis("controls", "pretraining_gain_tables"),
        ("pretraining_gain",),
        (Section("Does pretraining help: each model minus its random-init twin", "pretraining_gain"),),
    ),
    Analysis(
        "finetune_vs_probe",
        "run",
        _analysis("controls", "finetune_vs_probe_tables"),
        ("finetune_vs_probe",),
        (Section("Does the probe ranking survive fine-tuning (finetune-lora)", "finetune_vs_probe", by=("regime",)),),
    ),
]


def analyses() -> tuple[Analysis, ...]:
    """The registered analyses, in registry order."""
    return tuple(_ANALYSES)


def analysis_tables() -> tuple[str, ...]:
    """Every table the registered analyses write (results/tables/{name}.parquet), in registry order."""
    return tuple(t for a in _ANALYSES for t in a.tables)


def report_sections() -> tuple[Section, ...]:
    """The report's "Analysis tables" sections, in registry order."""
    return tuple(s for a in _ANALYSES for s in a.sections)


#: tables of the `leaderboard` rule (results/tables/{name}.parquet)
LEADERBOARD_TABLES: tuple[str, ...] = ("leaderboard", "leaderboard_tasks", "contamination", "rank_separability")

__all__ = ["LEADERBOARD_TABLES", "all_tables", "analysis_tables"]


def all_tables() -> tuple[str, ...]:
    """The leaderboard tables, then every registered analysis table (what `run.run_analyses` returns)."""
    return LEADERBOARD_TABLES + analysis_tables()
