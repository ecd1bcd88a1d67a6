"""The marks of the report's leaderboard: per model the audit flags, excluded tasks and why a row is not ranked, and
the notes under the table (categories no task of which completed, flagged tasks with their reasons, the tasks
the ranking leaves out; docs/analyses.md, "Flagged tasks on the leaderboards")."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from geneb.analysis.ranking.leaderboard import EXCLUDE_FLAGGED_ATTR, TASK_FLAGS_ATTR


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def board_marks(board: pd.DataFrame, attrs: dict[str, Any], protocol: str, regime: str) -> pd.DataFrame:
    """Per model of the leaderboard's (`protocol`, `regime`): its macro row's `flags` (the audit flags of the
    tasks it is made of), `excluded_tasks` and `not ranked because` (`incomplete_reason`), the columns the
    report's leaderboard adds to the wide view. Empty for a table written before those columns existed."""
    need = {"flags", "excluded_tasks", "incomplete_reason"}
    if not need <= set(board.columns):
        return pd.DataFrame()
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime) & (board["category"] == "macro")]
    out = b.set_index("model")[["flags", "excluded_tasks", "incomplete_reason"]].fillna("")
    return out.rename(columns={"incomplete_reason": "not ranked because"})


def board_notes(board: pd.DataFrame, attrs: dict[str, Any], protocol: str, regime: str) -> list[str]:
    """HTML notes under the report's leaderboard: the categories no task of which completed, each flagged task
    with its reason (the leaderboard's metadata, `leaderboard.TASK_FLAGS_ATTR`), and the tasks the ranking
    leaves out (`leaderboard.EXCLUDE_FLAGGED_ATTR`, config `leaderboard.exclude_flagged`)."""
    parts = []
    b = board[(board["protocol"] == protocol) & (board["regime"] == regime)]
    if "incomplete_reason" in b.columns:
        empty = b[b["incomplete_reason"].fillna("").str.startswith("no task of this category completed")]
        for category, g in empty.groupby("category", observed=True, sort=True):
            parts.append(
                f"<p class='warn'>⚠ {html.escape(str(category))}: not ranked for any model, "
                f"{html.escape(str(g['incomplete_reason'].iloc[0]))}; the macro and micro rows are not ranked.</p>"
            )
    flags = attrs.get(TASK_FLAGS_ATTR) or {}
    if flags:
        items = "".join(
            f"<li><b>{html.escape(t)}</b>: "
            + "; ".join(f"{html.escape(k)}: {html.escape(str(why))}" for k, why in sorted(kinds.items()))
            + "</li>"
            for t, kinds in sorted(flags.items())
        )
        parts.append(
            f"<p class='warn'>⚑ {_plural(len(flags), 'task')} fail the task audit (config `leaderboard:` thresholds); "
            f"every row such a task feeds names it in the parquet's flagged_tasks and flags columns, here the "
            f"flags column:</p><ul>{items}</ul>"
        )
    excluded = attrs.get(EXCLUDE_FLAGGED_ATTR) or []
    if excluded:
        left = sorted(t for t, kinds in flags.items() if set(kinds) & set(excluded))
        parts.append(
            f"<p class='warn'>Ranked without the tasks flagged {html.escape(', '.join(excluded))} (config "
            f"leaderboard.exclude_flagged): {html.escape(', '.join(left) or 'none')}.</p>"
        )
    return parts
