"""Figure and table captions: the `workflow/report/*.rst` files are their one source, read by
`snakemake --report` (the rules' `report(caption=...)`) and, through `report_captions`, by the HTML report.
"""

from __future__ import annotations

from pathlib import Path

from geneb.figures.registry import figures
from geneb.tables.scores import AnalysisInputError

#: the caption of the leaderboard table (the report's Leaderboard section; the leaderboard rule's report entry)
LEADERBOARD_CAPTION = "leaderboard.rst"
#: the caption of the reproduce_paper table (the published report's "Reproducing the paper" section)
REPRODUCE_CAPTION = "reproduce_paper.rst"


def read_caption(folder: str | Path, file: str) -> str:
    """The caption text of `folder/file` (surrounding whitespace stripped). Raises AnalysisInputError when the
    file does not exist."""
    path = Path(folder) / file
    if not path.is_file():
        raise AnalysisInputError(f"caption file {path} not found")
    return path.read_text(encoding="utf-8").strip()


def report_captions(folder: str | Path) -> dict[str, str]:
    """{caption file: text} for every caption the HTML report shows: the leaderboard's and every registered
    figure's, read from `folder` (workflow/report). Raises AnalysisInputError for a missing file."""
    files = [LEADERBOARD_CAPTION, REPRODUCE_CAPTION, *(f.caption for f in figures())]
    return {file: read_caption(folder, file) for file in files}
