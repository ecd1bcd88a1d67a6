"""The site's page shell and the table specs for its JavaScript.

The HTML of the site's pages: the shell every page shares (navigation, style sheet, script) and the small
static parts (definition lists, notes); the tables are specs drawn by assets/site.js (`geneb.site.pages`).
Every text from a table or a card is HTML escaped.

Table specs for the site's JavaScript (assets/site.js): a frame's rows as JSON-safe records with the column
kinds, filters, default selection and sort the page's table starts with, and the HTML that embeds one in a page.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: the site's top-level pages: (file, navigation label)
_NAV = (
    ("index.html", "Leaderboard"),
    ("tasks.html", "Tasks and audit"),
    ("models.html", "Models"),
    ("figures.html", "Figures"),
    ("runs.html", "Runs"),
)


def esc(value: Any) -> str:
    """`value` as escaped HTML text ("–" for None)."""
    return "–" if value is None else html.escape(str(value))


def page(title: str, body: Iterable[str], *, depth: int = 0, generated: str = "") -> str:
    """A whole page: `title`, the navigation, `body` and the footer; `depth` is how many folders below the site's
    root the page lies (the relative path to the style sheet, script and other pages)."""
    up = "../" * depth
    nav = "".join(f'<a href="{up}{file}">{esc(label)}</a>' for file, label in _NAV)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            f"<title>{esc(title)}</title>",
            f"<link rel='stylesheet' href='{up}site.css'>",
            f"<script src='{up}site.js' defer></script>",
            f"</head><body><nav>{nav}</nav><main><h1>{esc(title)}</h1>",
            *body,
            f"<p class='note'>{esc(generated)}</p>" if generated else "",
            "</main></body></html>",
        ]
    )


#: decimals of a score or any other fractional number on the site (the report's and the CLI's too)
DIGITS = 3


def _fact(v: Any) -> Any:
    """A card value as shown: a whole float as an integer with thousands separators (parameter counts), any other
    float with DIGITS decimals (never a float's full repr such as 0.7028712500000001)."""
    if isinstance(v, (float, np.floating)) and v == v:
        if float(v).is_integer():
            return f"{int(v):,}" if abs(v) >= 1000 else str(int(v))
        return f"{float(v):.{DIGITS}f}"
    return v


def column_words(column: str) -> str:
    """A column name in words for a header: `largest_clean_difference_model` -> "largest clean difference model"
    (the name itself stays the sort key and the tooltip's first word)."""
    return column.replace("_", " ")


@functools.cache
def column_help() -> dict[str, str]:
    """{column: its meaning} from docs/data-dictionary.md of the checkout (its table rows whose first cell names
    columns in backticks; the meaning is the last cell), without markdown backticks, at most 300 characters; {} outside a checkout (a header then has no
    tooltip beyond its name)."""
    from geneb.core.paths import repo_root

    try:
        text = (repo_root() / "docs" / "data-dictionary.md").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        meaning = cells[-1].replace("`", "")
        meaning = meaning if len(meaning) <= 300 else meaning[:299] + "…"
        for name in re.findall(r"`([A-Za-z_][\w]*)`", cells[0]):
            out.setdefault(name, meaning)
    return out


def card(facts: Mapping[str, Any]) -> str:
    """A definition list of `facts` (label: value), leaving out empty values."""
    items = [
        f"<dt>{esc(k)}</dt><dd>{esc(_fact(v))}</dd>"
        for k, v in facts.items()
        if v is not None and v != "" and not (isinstance(v, float) and v != v)
    ]
    return "<dl class='card'>" + "".join(items) + "</dl>" if items else "<p class='note'>(nothing recorded)</p>"


def note(text: str, cls: str = "note") -> str:
    """A paragraph of escaped `text` with class `cls` (note, warn)."""
    return f"<p class='{cls}'>{esc(text)}</p>"


def heading(text: str, level: int = 2, anchor: str | None = None) -> str:
    """An escaped heading, with an id when `anchor` is given."""
    ident = f" id='{esc(anchor)}'" if anchor else ""
    return f"<h{level}{ident}>{esc(text)}</h{level}>"


def figure(src: str, name: str, caption: str) -> str:
    """A figure: the image file `src` (relative to the page) and its caption."""
    return (
        f"<figure id='fig-{esc(name)}'><img src='{esc(src)}' alt='{esc(name)} figure' loading='lazy'>"
        f"<figcaption><b>{esc(name)}</b>. {esc(caption)}</figcaption></figure>"
    )


def slug(name: str) -> str:
    """A file name for a model or task id: its letters, digits, '-', '_' and '.', anything else as '_'
    (ids are already such names; a leading dot is replaced so the file is never hidden)."""
    out = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name))
    return "_" + out[1:] if out.startswith(".") else out or "_"


def _json_value(v: Any) -> Any:
    """`v` as a JSON value: NaN, NA and None as null, numpy scalars as Python numbers, lists and dicts kept,
    anything else as text."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(float(v)) or math.isinf(float(v)) else float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, Mapping):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_json_value(x) for x in v]
    return str(v)


def _column_kind(series: pd.Series) -> str:
    """ "bool", "int", "num" or "text": how the page shows and sorts a column."""
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_integer_dtype(series):
        return "int"
    if pd.api.types.is_numeric_dtype(series):
        return "num"
    return "text"


def table_spec(
    df: pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    filters: Sequence[str] = (),
    defaults: Mapping[str, Any] | None = None,
    sort: tuple[str, str] | None = None,
    hrefs: Mapping[str, str] | None = None,
    ci: Mapping[str, tuple[str, str]] | None = None,
    flagged: str | None = None,
    digits: int = 3,
) -> dict[str, Any]:
    """The JSON spec of a page table showing `columns` of `df` (default all, those present; the filter and CI
    columns are carried in the rows even when not shown).

    labels: header text per column (default the name in words, `column_words`; the header's tooltip is the name
    and its data-dictionary meaning, `column_help`); filters: the columns with a select (those present);
    defaults: {column: value} selected on load (dropped when the value is not in the column); sort: (column,
    "asc" | "desc") on load; hrefs: {column: link template with {column} fields}; ci: {value column: (low, high)}
    drawn as a bar (only where both are present); flagged: a column whose non-empty values mark the row.
    """
    labels = labels or {}
    ci = {k: v for k, v in (ci or {}).items() if k in df.columns and v[0] in df.columns and v[1] in df.columns}
    shown = [c for c in (columns or list(df.columns)) if c in df.columns]
    cols = []
    for c in shown:
        meaning = column_help().get(c, "")
        col: dict[str, Any] = {
            "key": c,
            "label": labels.get(c, column_words(c)),
            "help": f"{c}: {meaning}" if meaning else c,
            "kind": _column_kind(df[c]),
            "digits": digits,
        }
        if c in ci:
            col.update(kind="ci", low=ci[c][0], high=ci[c][1])
        if hrefs and c in hrefs:
            col["href"] = hrefs[c]
        cols.append(col)
    filters = [f for f in filters if f in df.columns and df[f].nunique() > 1]
    carried = list(dict.fromkeys([*shown, *filters, *(x for pair in ci.values() for x in pair)]))
    for template in (hrefs or {}).values():
        carried += [k for k in df.columns if "{" + k + "}" in template and k not in carried]
    rows = []
    for rec in df[carried].to_dict("records"):
        row = {k: _json_value(v) for k, v in rec.items()}
        if flagged and flagged in df.columns and row.get(flagged):
            row["_flagged"] = True
        rows.append(row)
    keep_defaults = {}
    for k, v in (defaults or {}).items():
        if k in filters and v in set(df[k].dropna().astype(str)):
            keep_defaults[k] = str(v)
    return {
        "columns": cols,
        "rows": rows,
        "filters": filters,
        "defaults": keep_defaults,
        "sort": list(sort) if sort and sort[0] in df.columns else None,
        "search": True,
    }


def embed(table_id: str, spec: Mapping[str, Any]) -> str:
    """The HTML of one page table: its host element and the spec as inline JSON (`</` escaped so the text cannot
    close the script element; read by assets/site.js, so nothing is fetched)."""
    text = json.dumps(spec, ensure_ascii=False, allow_nan=False, separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<div class="table-host" id="{html.escape(table_id)}"></div>'
        f'<script type="application/json" data-table="{html.escape(table_id)}">{text}</script>'
    )
