"""Shared figure style: a colour-blind-safe palette, paper-column sizes and PNG + PDF output.

Palette: Okabe & Ito (2008), "Color Universal Design", the eight colours distinguishable under the common
colour-vision deficiencies. Sequential maps: `cividis` (Nuñez, Anderton & Renslow 2018), designed to read
the same with and without deuteranopia. Sizes: a single column is 3.35 in (85 mm) wide and a full page width
7.0 in (178 mm), the usual two-column journal and conference layouts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from geneb.core.integrity import atomic_path  # noqa: E402

OKABE_ITO: tuple[str, ...] = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
    "#000000",  # black
)
#: line/marker colours (Okabe-Ito without yellow, which is too faint as a thin line on white)
LINE_COLOURS: tuple[str, ...] = tuple(c for c in OKABE_ITO if c != "#F0E442")
GREY = "#9E9E9E"
SEQUENTIAL = "cividis"
SINGLE_COLUMN = 3.35
DOUBLE_COLUMN = 7.0
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

_RC: dict[RcKeyType, Any] = {
    "font.size": 7,
    "axes.titlesize": 8,
    "axes.labelsize": 7,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "legend.fontsize": 6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,  # embed TrueType: text stays editable and searchable
    "svg.fonttype": "none",
    "savefig.dpi": 300,
    "figure.dpi": 100,
}


@contextmanager
def paper_style() -> Iterator[None]:
    """Context in which matplotlib uses the paper rc settings (fonts 6-8 pt, no top/right spines)."""
    with plt.rc_context(_RC):
        yield


#: the PNG text-chunk key of an `empty_figure`'s message (why the figure does not apply to the run)
NOT_APPLICABLE_KEY = "geneb-not-applicable"
#: the attribute an `empty_figure` carries its message in until `save`
_NOT_APPLICABLE_ATTR = "geneb_not_applicable"


def save(fig: Figure, png_path: str | Path) -> tuple[Path, Path]:
    """Save `fig` as `png_path` (300 dpi) and the same name with `.pdf`, atomically; close the figure.

    Returns (png, pdf) paths. Raises ValueError when png_path does not end in .png.
    """
    png = Path(png_path)
    if png.suffix != ".png":
        raise ValueError(f"figure path must end in .png, got {png}")
    pdf = png.with_suffix(".pdf")
    for path, fmt in ((png, "png"), (pdf, "pdf")):
        with atomic_path(path) as tmp:
            meta = {"Software": "geneb"}
            why = getattr(fig, _NOT_APPLICABLE_ATTR, None)
            if why:
                meta[NOT_APPLICABLE_KEY] = str(why)
            fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=meta if fmt == "png" else None)
    plt.close(fig)
    return png, pdf


def short(label: str, width: int = 28) -> str:
    """Shorten a long model or task label to `width` characters with a middle ellipsis."""
    return label if len(label) <= width else label[: width // 2 - 1] + "…" + label[-(width // 2 - 1) :]


def short_all(labels: list[str], width: int = 28) -> list[str]:
    """`short` for a list of labels that must stay distinct (a legend, an axis): labels that would collide
    after shortening keep more characters, up to their full length."""
    out = [short(x, width) for x in labels]
    w = width
    while len(set(out)) < len(set(labels)) and w < max(len(x) for x in labels):
        w += 4
        clash = {o for o in out if sum(1 for p in out if p == o) > 1}
        out = [short(x, w) if o in clash else o for x, o in zip(labels, out)]
    return out


def empty_figure(message: str, width: float = SINGLE_COLUMN) -> Figure:
    """A small figure that states why there is nothing to plot (an output must still exist); `save` writes
    `message` into the PNG's text chunk NOT_APPLICABLE_KEY, so a report shows that line instead of the figure."""
    fig, ax = plt.subplots(figsize=(width, 1.2))
    setattr(fig, _NOT_APPLICABLE_ATTR, message)  # matplotlib's Figure has no field for it; read back by `save`
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig
