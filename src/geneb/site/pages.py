"""The HTML of the site's pages: the shell every page shares (navigation, style sheet, script) and the small
static parts (definition lists, notes); the tables are specs drawn by assets/site.js (`geneb.site.spec`).
Every text from a table or a card is HTML escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

#: the site's top-level pages: (file, navigation label)
NAV = (
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
    nav = "".join(f'<a href="{up}{file}">{esc(label)}</a>' for file, label in NAV)
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


def _fact(v: Any) -> Any:
    """A card value as shown: a whole float as an integer with thousands separators (parameter counts)."""
    if isinstance(v, float) and v == v and v.is_integer() and abs(v) >= 1000:
        return f"{int(v):,}"
    return v


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
