"""Place a user's models, run under the `geneb-paper` protocol, beside the paper's 40 published models.

Only tasks whose data is the paper's can be compared: a paper task itself (catalogue `task_set = paper`), or
a mirrored task whose split is the paper's (`same_split_as_geneb = yes`; its `geneb_task_id` names the paper
task). Every other task the user ran is listed with the reason it could not be compared (a subset of the
paper's split, a different split, no paper counterpart), and so is every paper task the user did not run.

The comparison leaderboard is computed over the *common* tasks only, for every model (published and
user), so the numbers are comparable; `n_tasks_paper` says how many tasks the paper's category has.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from geneb.analysis import leaderboard as lb
from geneb.analysis.published import PROTOCOL
from geneb.analysis.tables import cell_scores
from geneb.tables.scores import AnalysisInputError
from geneb.tasks.card import read_card


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
    ok, why = {}, {}
    for task, row in task_meta.iterrows():
        if row.get("task_set") == "paper":
            ok[task] = task
        elif row.get("geneb_task_id") and row.get("same_split_as_geneb") == "yes":
            ok[task] = row["geneb_task_id"]
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
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leaderboard of user + published models over the common paper tasks, and the tasks left out.

    user_scores: validated GENEB score table (its `geneb-paper` rows are used); published_scores: the
    imported published table; task_meta: the catalogue; exclude_cells: (model, task) cells left out and
    listed, e.g. contaminated ones (`contamination.flag_contamination`); capped: {task: reason} of tasks the
    run capped (`capped_tasks`), left out and listed. A model that ran both a paper task and a mirror task with
    the same data keeps the paper task's own result (the mirror one is listed). Returns (board, left_out).
    board: leaderboard columns plus n_tasks_paper and `origin` ("user" / "published"); user model ids that
    collide with a published id get the prefix "user:". left_out: task, paper_task, model (user model or "*"),
    reason; every (model, regime) a user model lacks on a common task is listed, a whole missing regime too.
    Raises AnalysisInputError when the user ran no comparable task under geneb-paper.
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
    for task in sorted(set(published_scores["task"]) - set(common)):
        left.append({"task": task, "paper_task": task, "model": "*", "reason": "paper task not run by the user"})
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
    return board, pd.DataFrame(left, columns=["task", "paper_task", "model", "reason"])
