"""The HTML pieces every GENEB report is made of, and the figure and table captions.

Figure and table captions: the `workflow/report/*.rst` files are their one source, read by
`snakemake --report` (the rules' `report(caption=...)`) and, through `report_captions`, by the HTML report.

The HTML pieces every GENEB report is made of: the style sheet, tables that fit a 1280 px window, inlined
figures, and the one line a section that does not apply to the run is reduced to.

Tables fit without horizontal scrolling: headers wrap at word and underscore boundaries, long text cells wrap
(at most `_CELL_EM` em wide), and a table whose estimated width (`_column_widths`, from the longest cell and the
longest header word at the report's font size) exceeds `_TABLE_BUDGET_PX` is split into consecutive column
groups, each repeating the key column (the first), and said so under the first part. Every cell is HTML
escaped (pandas `to_html(escape=True)`).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from geneb.figures.registry import figures
from geneb.tables.scores import AnalysisInputError

#: the caption of the leaderboard table (the report's Leaderboard section; the leaderboard rule's report entry)
LEADERBOARD_CAPTION = "leaderboard.rst"
#: the caption of the reproduce_paper table (the published report's "Reproducing the paper" section)
REPRODUCE_CAPTION = "reproduce_paper.rst"


def _read_caption(folder: str | Path, file: str) -> str:
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
    return {file: _read_caption(folder, file) for file in files}


#: CSS pixels per PNG pixel: figures are saved at 300 dpi; shown at ~135 CSS px per inch of figure
_DISPLAY_SCALE = 0.45
#: the widest a text cell is before it wraps (em of the table's font)
_CELL_EM = 16
#: the width a table may take (CSS px): the page's content width (body max-width 1200 px less its padding)
_TABLE_BUDGET_PX = 1150
#: the table font's em (.8em of 16 px, CSS px), the average width of one of its characters (system-ui), and a
#: cell's padding + border
TABLE_EM_PX, CHAR_PX, CELL_PAD_PX = 12.8, 7.4, 14
#: the same for a (bold) header character
_HEAD_CHAR_PX = 8.2
CSS = f"""
body{{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}}
h1{{font-size:1.6em}}h2{{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}}
table{{border-collapse:collapse;font-size:.8em;margin:.5em 0}}th,td{{border:1px solid #ddd;padding:2px 6px;
text-align:right;max-width:{_CELL_EM}em;overflow-wrap:break-word}}th{{background:#f3f3f3;vertical-align:bottom}}
td:first-child,th:first-child{{text-align:left}}
figure{{margin:1em 0}}figure img{{max-width:100%;height:auto;border:1px solid #eee}}
figcaption{{font-size:.85em;color:#444}}pre{{background:#f7f7f7;padding:.6em;white-space:pre-wrap;font-size:.8em}}
.headline li{{margin:.2em 0}}.note{{color:#666;font-size:.85em}}.na{{color:#555;margin:.4em 0}}
dl.card{{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em;font-size:.85em}}
dl.card dt{{font-weight:600}}dl.card dd{{margin:0;overflow-wrap:anywhere}}
.warn{{background:#fff4e5;border-left:4px solid #e69f00;padding:.4em .6em}}
"""
#: the provenance columns every table carries (`geneb.tables.scores.with_code_revision`); a report states them once,
#: in its provenance section, and leaves them out of every table it shows
PROVENANCE_COLUMNS = ("geneb_commit", "geneb_dirty")


def plural(n: int, word: str) -> str:
    """ "1 model", "2 models": `n` and `word`, with an "s" unless n is 1 (the headlines count what they show)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cell(v: Any, digits: int) -> str:
    if v is None or (not isinstance(v, str) and pd.api.types.is_scalar(v) and pd.isna(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _column_widths(cells: pd.DataFrame) -> list[float]:
    """The estimated rendered width (CSS px) of each column of `cells` (a frame of display strings): the longest
    cell (wrapped at CELL_EM em) or the longest word of the header, whichever is wider, plus padding."""
    cap = _CELL_EM * TABLE_EM_PX
    out = []
    for col in cells.columns:
        longest = max((len(s) for s in cells[col]), default=1)
        head = max((len(w) for w in re.split(r"[\s_/]+", str(col)) if w), default=1)
        word = max((len(w) for s in cells[col] for w in _BREAKS.split(s) if w), default=1)
        out.append(max(min(longest * CHAR_PX, cap), word * CHAR_PX, head * _HEAD_CHAR_PX) + CELL_PAD_PX)
    return out


def _column_groups(widths: list[float], budget: float = _TABLE_BUDGET_PX) -> list[list[int]]:
    """Column indexes in consecutive groups that each fit `budget` px with column 0 (the key) repeated in every
    group, as few groups as fit and of even widths; one group when the whole table fits. A column wider than the
    budget on its own gets its own group."""
    if sum(widths) <= budget or len(widths) < 3:
        return [list(range(len(widths)))]
    fewest = len(_greedy(widths, budget))
    even = (sum(widths) - widths[0]) / fewest + widths[0]
    while len(groups := _greedy(widths, min(even, budget))) > fewest:
        even += 20
    return groups


def _greedy(widths: list[float], budget: float) -> list[list[int]]:
    groups: list[list[int]] = []
    cur, used = [0], widths[0]
    for i in range(1, len(widths)):
        if used + widths[i] > budget and len(cur) > 1:
            groups.append(cur)
            cur, used = [0], widths[0]
        cur.append(i)
        used += widths[i]
    groups.append(cur)
    return groups


#: where a long cell may wrap besides spaces: after these characters (a <wbr> is put there)
_BREAKS = re.compile(r"(?<=[_/,;=-])|\s+")


def _text(v: str) -> str:
    """An escaped cell that may wrap after `_` and `/` (ids and paths have no spaces)."""
    out = html.escape(v)
    return out.replace("_", "_<wbr>").replace("/", "/<wbr>") if len(v) > 16 else out


def _header(col: object) -> str:
    """An escaped header that may wrap after an underscore."""
    return html.escape(str(col)).replace("_", "_<wbr>")


def _table(cells: pd.DataFrame) -> str:
    head = "".join(f"<th>{_header(c)}</th>" for c in cells.columns)
    body = "".join("<tr>" + "".join(f"<td>{_text(v)}</td>" for v in row) + "</tr>" for row in cells.to_numpy())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def table_html(df: pd.DataFrame, digits: int = 3, max_rows: int = 60, *, empty: str | None = None) -> str:
    """`df` as escaped HTML tables that fit the page: its first `max_rows` rows (a note says how many there are),
    numbers with `digits` decimals, without the PROVENANCE_COLUMNS, split into column groups (`_column_groups`)
    when wider than the page. An empty `df`: the note `empty` (default "no rows")."""
    if df is None or df.empty:
        return f'<p class="note">{html.escape(empty or "no rows")}</p>'
    df = df.drop(columns=[c for c in PROVENANCE_COLUMNS if c in df.columns])
    shown = df.head(max_rows)
    cells = pd.DataFrame({c: [_cell(v, digits) for v in shown[c]] for c in shown.columns}, columns=shown.columns)
    cells.columns = [str(c) for c in shown.columns]
    groups = _column_groups(_column_widths(cells))
    out = "".join(_table(cells.iloc[:, g]) for g in groups)
    if len(groups) > 1:
        out += (
            f'<p class="note">a wide table, shown in {len(groups)} parts of its {len(cells.columns)} columns '
            f"(each repeats {html.escape(cells.columns[0])}).</p>"
        )
    if len(df) > max_rows:
        out += f'<p class="note">first {max_rows} of {len(df)} rows; the full table is in the parquet file.</p>'
    return out


def not_applicable(heading: str, why: str, anchor: str | None = None) -> str:
    """The one line a section that does not apply to the run is reduced to: its heading, then why."""
    ident = f" id='{html.escape(anchor)}'" if anchor else ""
    return f"<p class='na'{ident}><b>{html.escape(heading)}</b>: {html.escape(why)}</p>"


def figure_not_applicable(png: Path) -> str | None:
    """Why the figure `png` has nothing to plot (the message `geneb.figures.style.empty_figure` stored in its PNG
    text chunk `NOT_APPLICABLE_KEY`), or None for a figure with content (or one drawn before the key existed)."""
    with Image.open(png) as im:
        text = getattr(im, "text", {}) or {}
    from geneb.figures.style import NOT_APPLICABLE_KEY  # matplotlib: only for a report with figures

    return text.get(NOT_APPLICABLE_KEY) or None


def figure_html(png: Path, name: str, caption: str) -> str:
    """The PNG `png` inlined (base64) as a figure with its escaped `caption`. Raises AnalysisInputError when the
    file does not exist."""
    if not png.exists():
        raise AnalysisInputError(f"report: figure {png} not found; render the figures first")
    raw = png.read_bytes()
    width_px = int.from_bytes(raw[16:20], "big")  # PNG IHDR width
    shown = min(1000, round(width_px * _DISPLAY_SCALE))
    data = base64.b64encode(raw).decode("ascii")
    cap = html.escape(caption)
    return (
        f'<figure id="fig-{name}"><img alt="{html.escape(name)} figure" width="{shown}" src="data:image/png;base64,{data}">'
        f"<figcaption>{cap}</figcaption></figure>"
    )


def facts_html(facts: Mapping[str, Any]) -> str:
    """A definition list of `facts` (label: escaped value), leaving out empty values; a list as its items
    comma-joined; a whole float (a parameter count) as an integer with thousands separators."""
    items = []
    for k, v in facts.items():
        if hasattr(v, "item") and not hasattr(v, "__len__"):  # a numpy scalar
            v = v.item()
        if isinstance(v, (list, tuple)) or hasattr(v, "__array__"):
            v = ", ".join(map(str, list(v))) if len(v) else None
        if v is None or v == "" or (isinstance(v, float) and v != v):
            continue
        if isinstance(v, float) and v.is_integer():
            v = f"{int(v):,}"
        items.append(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>")
    return "<dl class='card'>" + "".join(items) + "</dl>" if items else "<p class='note'>(nothing recorded)</p>"
