"""Names of the analysis, figure and report outputs: the contract between the library and the workflow
rules (workflow/rules/{analysis,figures,report}.smk build their output lists from these). Importing this
module loads nothing heavy.
"""

#: tables of the `leaderboard` rule (results/tables/{name}.parquet)
LEADERBOARD_TABLES: tuple[str, ...] = ("leaderboard", "leaderboard_tasks", "contamination")
#: tables of the `analyses` rule, in report order (results/tables/{name}.parquet)
ANALYSIS_TABLES: tuple[str, ...] = (
    "models",
    "rank_intervals",
    "category_kendall",
    "scale",
    "in_domain",
    "reversals",
    "matched_pairs",
    "fewshot_drops",
    "fewshot_inverse",
    "fewshot_regimes",
    "near_random",
    "task_variance",
    "specialists",
    "recommendations",
)
#: figures of the `paper_figures` rule (results/figures/{name}.png and .pdf)
FIGURES: tuple[str, ...] = ("heatmap", "scale", "rank_bump", "fewshot", "matched_pairs", "task_variance")
