"""The self-contained HTML report of a run (`html.build_report`, read it first): its `sections`, the HTML
pieces and captions it shares with `snakemake --report` (`render`), a model's run card (`runcard`) and the
comparison report of `compare_published` (`compare`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "build_compare_report": "geneb.report.compare",
    "build_report": "geneb.report.html",
    "report_captions": "geneb.report.render",
    "extraction_facts": "geneb.report.runcard",
    "recorded_inputs": "geneb.report.runcard",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.report.compare import build_compare_report as build_compare_report
    from geneb.report.html import build_report as build_report
    from geneb.report.render import report_captions as report_captions
    from geneb.report.runcard import extraction_facts as extraction_facts
    from geneb.report.runcard import recorded_inputs as recorded_inputs
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
