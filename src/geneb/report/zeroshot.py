"""The report's zero-shot section: the zero-shot leaderboard (macro rows), the rank correlation with the probe
leaderboard, the scorers that did not apply and why, and the zero-shot figure (docs/zeroshot.md)."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from geneb.core import integrity
from geneb.zeroshot.board import MACRO
from geneb.zeroshot.tables import ZEROSHOT_REPORT_INPUTS

#: the caption file of the section and figure (workflow/report/)
ZEROSHOT_CAPTION = "zeroshot.rst"


def zeroshot_section(
    files: Mapping[str, str | Path] | None,
    table: Callable[..., str],
    figure: Callable[[Path, str, str], str],
    caption: str,
) -> list[str]:
    """HTML parts of the "Zero-shot scoring" section, or [] when the run has no zero-shot stage (`files` None).

    files: {key of ZEROSHOT_REPORT_INPUTS: path}; table(df, digits, max_rows) renders a frame; figure(png, name,
    caption) a figure. Raises KeyError naming a missing key (the report rule passes all or none).
    """
    if not files:
        return []
    missing = [k for k in ZEROSHOT_REPORT_INPUTS if k not in files]
    if missing:
        raise KeyError(f"zero-shot report section: inputs {missing} not given")
    board = integrity.read_parquet(files["zeroshot_leaderboard"])
    macro = board[board["task"] == MACRO].sort_values(["rank", "value"], ascending=[True, False], na_position="last")
    per_task = board[board["task"] != MACRO].pivot_table(index=["model", "scorer"], columns="task", values="value")
    wide = macro.set_index(["model", "scorer"])[["value", "rank", "complete", "incomplete_reason"]].join(per_task)
    vs = integrity.read_parquet(files["zeroshot_vs_probe"])
    na = integrity.read_parquet(files["zeroshot_not_applicable"])
    return [
        "<h2 id='zeroshot'>Zero-shot scoring</h2>",
        f"<p>{html.escape(caption)}</p>",
        table(wide.reset_index().rename(columns={"value": "macro"}), 3, 200),
        "<h3>Zero-shot ranking against the probe ranking (Kendall τ-b, bootstrap CI over models)</h3>",
        table(vs.drop(columns=["models"]), 3, 200),
        *(
            [
                "<h3>Not applicable (never scored by a made-up rule)</h3>",
                table(pd.DataFrame(na), 3, 200),
            ]
            if len(na)
            else []
        ),
        figure(Path(files["zeroshot_figure"]), "zeroshot", caption),
    ]
