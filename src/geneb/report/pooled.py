"""The report of a merged results folder (`geneb merge`, docs/pooling.md): the "Pooled from" block near the top
(the bundles from tables/pool.json: name, sha256, score rows; the rule for a cell two bundles held and the
--prefer bundle) and the one line of each section a merged folder cannot have (task cards, zero-shot scoring),
naming the folder."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.report.render import not_applicable, table_html
from geneb.tables.scores import AnalysisInputError

#: the keys of the pool record (tables/pool.json) the block reads
RECORD_KEYS = ("bundles", "rule", "prefer", "rows", "deduplicated", "preferred")


def merged_parts(record: Mapping[str, Any] | None, folder: str | Path) -> dict[str, list[str]]:
    """HTML parts of the report of the merged folder `folder` from its pool record `record` (tables/pool.json):
    {"top": the "Pooled from" block, "cards": the task cards' line, "zeroshot": the zero-shot section's line};
    every list empty when `record` is None (a run's own report). Raises AnalysisInputError naming a key the
    record lacks."""
    if record is None:
        return {"top": [], "cards": [], "zeroshot": []}
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        raise AnalysisInputError(f"report: the pool record of {folder} has no {missing} (tables/pool.json)")
    name = Path(folder).name or str(folder)
    bundles = pd.DataFrame(
        [{"bundle": b["name"], "sha256": b["sha256"], "score rows": b["rows"]} for b in record["bundles"]]
    )
    prefer = record["prefer"]
    top = [
        "<h2 id='pooled'>Pooled from</h2>",
        f"<p class='warn'>This is the merged results folder {html.escape(name)} (geneb merge, docs/pooling.md): "
        f"{len(bundles)} bundles pooled into {record['rows']} score rows. Rule: {html.escape(str(record['rule']))}; "
        f"{len(record['deduplicated'])} cell(s) held twice with identical rows kept once, "
        f"{len(record['preferred'])} settled by --prefer "
        f"({html.escape(str(prefer)) if prefer else 'none given'}).</p>",
        table_html(bundles, 3, 200),
        "<p class='note'>The workflow configuration below is the config given to geneb merge: its analysis and "
        "leaderboard settings built these tables; its task and model lists are not the bundles' (those are the "
        "score table's).</p>",
    ]
    why = f"not in the merged folder {name}: bundles carry no {{}}; see each run's own report"
    return {
        "top": top,
        "cards": [
            not_applicable(
                "Task cards",
                why.format("task cards, so which tasks were capped subsamples is not stated here"),
                "task-cards",
            )
        ],
        "zeroshot": [not_applicable("Zero-shot scoring", why.format("zero-shot tables"), "zeroshot")],
    }
