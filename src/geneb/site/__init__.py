"""The static leaderboard site of one or more runs (`geneb site`, rule `site`; docs/site.md): `build.build_site`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "build_site": "geneb.site.build",
    "site_summary": "geneb.site.build",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.site.build import build_site as build_site
    from geneb.site.build import site_summary as site_summary
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
