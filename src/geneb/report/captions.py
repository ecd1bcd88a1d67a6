"""Figure and table captions, shared by the HTML report and `workflow/report/*.rst` (`snakemake --report`).

A test checks that every `workflow/report/{name}.rst` holds exactly `CAPTIONS[name]`, so the two reports say
the same thing.
"""

from __future__ import annotations

CAPTIONS: dict[str, str] = {
    "heatmap": (
        "MCC of every model (rows, best macro MCC on top) in each of the 13 functional categories and the macro "
        "mean over categories (last column), full training data. A category score is the mean over its tasks of "
        "the per-task MCC averaged over probe seeds. Colour scale: cividis (colour-blind safe)."
    ),
    "scale": (
        "Parameter count (log scale) against macro MCC. Spearman's rho with a percentile bootstrap CI (at the configured `analysis.confidence`) over "
        "models, for all models and again without the models excluded in the configuration (crosses, with the "
        "reasons in the scale table). Triangles: models whose pretraining domain does not match the benchmark's "
        "organisms (left out of the reversal count)."
    ),
    "rank_bump": (
        "Each model's rank (1 = best) in each category and on macro MCC. Crossing lines are rank changes: the "
        "aggregate order does not hold category by category. The best models by macro MCC are coloured."
    ),
    "fewshot": (
        "(a) Macro MCC with the full training split, 10 and 1 training examples per class (k-shot probes on the "
        "same frozen embeddings). (b) Full-data macro MCC against the absolute drop to 10-shot, with Spearman's "
        "rho: a positive rho means the strongest models lose the most."
    ),
    "matched_pairs": (
        "Matched pairs: models that differ in one factor (architecture, tokenizer or pretraining data) with the "
        "others equal. MCC(a) - MCC(b) per category with a paired-bootstrap CI at the configured confidence level (same test rows and same tasks "
        "for both models); filled markers are significant after Benjamini-Hochberg correction over all tests."
    ),
    "task_variance": (
        "Spread of MCC across models on every task (bar from the lowest to the highest model, dot at the median), "
        "grouped by category. Orange: high-variance tasks (the tasks that separate models); blue: near-random "
        "tasks, where even the best model's CI stays below the MCC threshold (dashed line)."
    ),
    "leaderboard": (
        "Leaderboard: per-category MCC, macro (mean over categories) and micro (mean over tasks) MCC, rank by "
        "macro MCC and MTEB-style Borda rank over tasks."
    ),
}
