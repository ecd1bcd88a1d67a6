"""The figures of a run (docs/analyses.md): `registry` (every figure, the tables it reads, its caption, and
rendering them to files; read it first), `style` (the shared look), and the drawings grouped by what they show:
`leaderboard`, `paper`, `evaluation`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "render": "geneb.figures.evaluation",
    "rank_figure": "geneb.figures.paper",
    "choose_protocol": "geneb.figures.registry",
    "figure_names": "geneb.figures.registry",
    "figures": "geneb.figures.registry",
    "render_figures": "geneb.figures.registry",
    "NOT_APPLICABLE_KEY": "geneb.figures.style",
    "paper_style": "geneb.figures.style",
    "save": "geneb.figures.style",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.figures.evaluation import render as render
    from geneb.figures.paper import rank_figure as rank_figure
    from geneb.figures.registry import choose_protocol as choose_protocol
    from geneb.figures.registry import figure_names as figure_names
    from geneb.figures.registry import figures as figures
    from geneb.figures.registry import render_figures as render_figures
    from geneb.figures.style import NOT_APPLICABLE_KEY as NOT_APPLICABLE_KEY
    from geneb.figures.style import paper_style as paper_style
    from geneb.figures.style import save as save
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
