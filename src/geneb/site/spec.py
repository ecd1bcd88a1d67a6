"""Table specs for the site's JavaScript (assets/site.js): a frame's rows as JSON-safe records with the column
kinds, filters, default selection and sort the page's table starts with, and the HTML that embeds one in a page.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd


def json_value(v: Any) -> Any:
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
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [json_value(x) for x in v]
    return str(v)


def column_kind(series: pd.Series) -> str:
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

    labels: header text per column (default the column name); filters: the columns with a select (those present);
    defaults: {column: value} selected on load (dropped when the value is not in the column); sort: (column,
    "asc" | "desc") on load; hrefs: {column: link template with {column} fields}; ci: {value column: (low, high)}
    drawn as a bar (only where both are present); flagged: a column whose non-empty values mark the row.
    """
    labels = labels or {}
    ci = {k: v for k, v in (ci or {}).items() if k in df.columns and v[0] in df.columns and v[1] in df.columns}
    shown = [c for c in (columns or list(df.columns)) if c in df.columns]
    cols = []
    for c in shown:
        col: dict[str, Any] = {"key": c, "label": labels.get(c, c), "kind": column_kind(df[c]), "digits": digits}
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
        row = {k: json_value(v) for k, v in rec.items()}
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
