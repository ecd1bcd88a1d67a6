"""Place a user's models, run under the `geneb-paper` protocol, beside the paper's 40 published models.

Only tasks whose data is the paper's can be compared: a paper task itself (catalogue `task_set = paper`), or
a mirrored task whose split is the paper's (`same_split_as_geneb = yes`; its `geneb_task_id` names the paper
task). Every other task the user ran is listed with the reason it could not be compared (a subset of the
paper's split, a different split, no paper counterpart), and so is every paper task the user did not run.

The comparison leaderboard is computed over the *common* tasks only, for every model (published and
user), so the numbers are comparable; `n_tasks_paper` says how many tasks the paper's category has. Its
uncertainty (`compare_intervals`) resamples the common tasks within each category (no per-row predictions exist
for the published models, so test rows are not resampled): a percentile CI of every complete model's category and
macro score, its rank interval, and the best model with those it cannot be told apart from (the analyses'
`bootstrap.two_level_replicates`, `ranks.rank_intervals`, `recommend.recommend`), so `geneb leaderboard` and
`geneb recommend` read the comparison table like their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from geneb.analysis.inputs.tables import cell_scores, task_categories, task_matrix
from geneb.analysis.paper.published import PROTOCOL
from geneb.analysis.ranking import leaderboard as lb
from geneb.analysis.ranking.ranks import rank_intervals
from geneb.analysis.ranking.recommend import recommend
from geneb.analysis.stats.bootstrap import two_level_replicates
from geneb.tables.scores import AnalysisInputError
from geneb.tasks.prepare import read_card


def capped_tasks(cards: Iterable[str | Path]) -> dict[str, str]:
    """{task: reason} for the prepared tasks whose card records a cap (config `caps`: a seeded subsample of a
    split), read from their task cards. A capped task is not the paper's split, so its scores must not sit on
    the published leaderboard or go into a submission."""
    out = {}
    for path in cards:
        card = read_card(path)
        cut = [f"{split} {c.n_kept} of {c.n_source} rows" for split, c in card.capped_splits().items()]
        if cut:
            out[card.task] = f"capped by the run's config ({', '.join(cut)}): a subsample, not the paper's split"
    return out


def paper_task_map(task_meta: pd.DataFrame) -> tuple[dict[str, str], dict[str, str]]:
    """({task: paper task id} for comparable tasks, {task: reason} for the others), over the catalogue."""
    ok: dict[str, str] = {}
    why: dict[str, str] = {}
    for key, row in task_meta.iterrows():
        task = str(key)
        if row.get("task_set") == "paper":
            ok[task] = task
        elif row.get("geneb_task_id") and row.get("same_split_as_geneb") == "yes":
            ok[task] = str(row["geneb_task_id"])
        elif row.get("geneb_task_id"):
            split = row.get("same_split_as_geneb") or "unknown"
            kind = "a subset of" if split == "subset" else "not the same split as"
            why[task] = f"same data as paper task {row['geneb_task_id']} but {kind} the paper's split"
        else:
            why[task] = "no paper task has this data"
    return ok, why


def compare_with_published(
    user_scores: pd.DataFrame,
    published_scores: pd.DataFrame,
    task_meta: pd.DataFrame,
    exclude_cells: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset(),
    capped: dict[str, str] | None = None,
    failed: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leaderboard of user + published models over the common paper tasks, and the tasks left out.

    user_scores: validated GENEB score table (its `geneb-paper` rows are used); published_scores: the
    imported published table; task_meta: the catalogue; exclude_cells: (model, task) cells left out and
    listed, e.g. contaminated ones (`contamination.flag_contamination`); capped: {task: reason} of tasks the
    run capped (`capped_tasks`), left out and listed; failed: {task: error} of the user's tasks that failed in a
    partial run (geneb.run.partial), listed with their error in place of "not run by the user". A model that ran both a paper task and a mirror task with
    the same data keeps the paper task's own result (the mirror one is listed). Returns (board, left_out).
    board: leaderboard columns plus n_tasks_paper and `origin` ("user" / "published"); user model ids that
    collide with a published id get the prefix "user:". left_out: task, paper_task, model (user model or "*"),
    reason; every (model, regime) a user model lacks on a common task is listed, a whole missing regime too.
    board.attrs["cells"] holds the per-cell table the board was computed from (`compare_intervals`,
    `task_table`). Raises AnalysisInputError when the user ran no comparable task under geneb-paper.
    """
    user = user_scores[user_scores["protocol"] == PROTOCOL]
    if user.empty:
        raise AnalysisInputError(f"no {PROTOCOL} rows in the user's score table")
    ok, why = paper_task_map(task_meta)
    capped = capped or {}
    left = []
    for task in sorted(set(user["task"])):
        if task not in ok:
            left.append(
                {"task": task, "paper_task": "", "model": "*", "reason": why.get(task, "task not in the catalogue")}
            )
        elif task in capped:
            left.append({"task": task, "paper_task": ok[task], "model": "*", "reason": capped[task]})
    ok = {t: p for t, p in ok.items() if t not in capped}
    for model, task in sorted(exclude_cells):
        if ((user["model"] == model) & (user["task"] == task)).any():
            left.append(
                {
                    "task": task,
                    "paper_task": ok.get(task, ""),
                    "model": model,
                    "reason": "left out: the model was trained on this task",
                }
            )
    drop = pd.Series(
        [(m, t) in exclude_cells for m, t in zip(user["model"], user["task"])], index=user.index, dtype=bool
    )
    user = user[~drop & user["task"].isin(ok)].copy()
    if user.empty:
        raise AnalysisInputError(
            "none of the user's geneb-paper tasks has the paper's data and split; nothing to compare"
        )
    # the same paper task reached twice by one model (the paper task and a same-split mirror): keep the paper's own
    user["paper_task"] = user["task"].map(ok)
    dup = user.groupby(["model", "paper_task"])["task"].transform("nunique") > 1
    shadowed = user[dup & (user["task"] != user["paper_task"])]
    for (model, task), g in shadowed.groupby(["model", "task"]):
        left.append(
            {
                "task": task,
                "paper_task": g["paper_task"].iloc[0],
                "model": model,
                "reason": "the model also ran the paper task itself; that result is used",
            }
        )
    user = user.drop(index=shadowed.index)
    user["task"] = user.pop("paper_task")
    published_ids = set(published_scores["model"])
    user["model"] = [f"user:{m}" if m in published_ids else m for m in user["model"]]
    user["source"] = "geneb"
    common = sorted(set(user["task"]))
    failed_paper = {ok[t]: f"failed in this run ({err})" for t, err in (failed or {}).items() if t in ok}
    for task in sorted(set(published_scores["task"]) - set(common)):
        reason = failed_paper.get(task, "paper task not run by the user")
        left.append({"task": task, "paper_task": task, "model": "*", "reason": reason})
    # a user model that ran only some of the common tasks: list what it misses
    excluded = {(m, ok.get(t, t)) for m, t in exclude_cells}
    regimes = sorted(set(published_scores["regime"]) | set(user["regime"]))
    for model, g in user.groupby("model"):
        for regime in regimes:
            gr = g[g["regime"] == regime]
            for task in sorted(set(common) - set(gr["task"]) - {t for m, t in excluded if m == model}):
                left.append(
                    {"task": task, "paper_task": task, "model": model, "reason": f"no {regime} result for this model"}
                )
    pub = published_scores[published_scores["task"].isin(common)]
    cells = cell_scores(pd.concat([pub, user], ignore_index=True), protocol=PROTOCOL)
    board = lb.leaderboard(cells)
    n_paper = published_scores.drop_duplicates("task").groupby("category")["task"].size()
    board["n_tasks_paper"] = board["category"].map(n_paper)
    board.loc[board["category"].isin(lb.AGGREGATES), "n_tasks_paper"] = published_scores["task"].nunique()
    board["n_tasks_paper"] = board["n_tasks_paper"].astype("Int64")
    board["origin"] = ["user" if m in set(user["model"]) else "published" for m in board["model"]]
    board.attrs["cells"] = cells
    return board, pd.DataFrame(left, columns=["task", "paper_task", "model", "reason"])


#: the columns `compare_intervals` adds to the comparison board
INTERVAL_COLUMNS = (
    "ci_low",
    "ci_high",
    "rank_low",
    "rank_high",
    "p_top1",
    "interval_reason",
    "role",
    "tie_rule",
    "confidence",
    "seed",
)


def compare_intervals(
    board: pd.DataFrame,
    cells: pd.DataFrame,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    tie_rule: str = "overlap",
) -> pd.DataFrame:
    """`board` with the comparison's uncertainty, per (regime, category incl. macro, model), tasks resampled.

    cells: the per-cell table of the comparison (board.attrs["cells"]). For each regime, the macro column over the
    models with every common task, and each category over the models with every task of that category (the
    models the board ranks there; an incomplete model gets no interval), go through
    `bootstrap.two_level_replicates` (tasks drawn with replacement within each category, `n_resamples` draws from
    `seed`, the same draws for a category either way; no test-row level: the published models have no per-row
    predictions). Adds ci_low, ci_high (percentile
    CI of the score at `confidence`; NA for a single-task category, where there is nothing to resample, and for
    a macro over one), rank_low, rank_high, p_top1 (`ranks.rank_intervals`), interval_reason (why an interval is
    NA, "" otherwise), role ("best", "tied" by `tie_rule`, else NA; `recommend.recommend`), tie_rule, confidence
    and seed. Micro rows get no interval. Returns a new frame.
    """
    rows = []
    for (protocol, regime), c in cells.groupby(["protocol", "regime"], observed=True):
        wide, categories = task_matrix(c, str(regime)), task_categories(c)
        # macro over the models with every task; each category over the models with every task of it (its ranked ones)
        subsets = [("macro", wide)] + [(cat, wide[list(g.index)]) for cat, g in categories.groupby(categories)]
        for column, sub in subsets:
            matrix = sub.dropna(how="any")
            if len(matrix) < 2:
                continue
            rep, _ = two_level_replicates(matrix, categories, None, str(regime), n_resamples=n_resamples, seed=seed)
            ri = rank_intervals(rep, confidence)
            ri = ri[ri["category"] == column].drop(columns=["value", "rank", "rows_resampled", "n_resamples"])
            rec = recommend(rep, confidence=confidence, tie_rule=tie_rule)
            ri = ri.merge(
                rec.loc[rec["category"] == column, ["category", "model", "role"]], on=["category", "model"], how="left"
            )
            ri["protocol"], ri["regime"] = protocol, regime
            rows.append(ri)
    keys = ["protocol", "regime", "category", "model"]
    extra = (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(
            columns=[*keys, "rank_low", "rank_high", "p_top1", "interval_reason", "seed", "ci_low", "ci_high", "role"]
        )
    )
    out = board.drop(columns=[c for c in INTERVAL_COLUMNS if c in board.columns]).merge(extra, on=keys, how="left")
    out[["rank_low", "rank_high"]] = out[["rank_low", "rank_high"]].astype("Int64")
    out["tie_rule"], out["confidence"], out["seed"] = tie_rule, float(confidence), int(seed)
    out.attrs = dict(board.attrs)
    return out


def task_table(cells: pd.DataFrame, origin: dict[str, str]) -> pd.DataFrame:
    """The per-task comparison: one row per (protocol, regime, task, model) with category, value (seed-mean
    score), rank within the task (1 = best; `leaderboard.task_leaderboard`), n_models (models with the task),
    and origin ({model: "user" | "published"})."""
    out = lb.task_leaderboard(cells)
    out["n_models"] = out.groupby(["protocol", "regime", "task"], observed=True)["model"].transform("size")
    out["origin"] = out["model"].map(origin).fillna("published")
    keep = ["protocol", "regime", "category", "task", "model", "origin", "value", "rank", "n_models", "source"]
    return out[[c for c in keep if c in out.columns]]
