"""Results bundles and merging (docs/pooling.md): one archive per run (`bundle`: scores, provenance, model
cards, a manifest of sha256 digests), and one results folder built from several (`merge`), refusing rows that are
not comparable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "BundleError": "geneb.pool.bundle",
    "read_bundle": "geneb.pool.bundle",
    "write_bundle": "geneb.pool.bundle",
    "build_tables": "geneb.pool.merge",
    "merge_bundles": "geneb.pool.merge",
    "merged_outputs": "geneb.pool.merge",
    "MergeError": "geneb.pool.merge",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.pool.bundle import BundleError as BundleError
    from geneb.pool.bundle import read_bundle as read_bundle
    from geneb.pool.bundle import write_bundle as write_bundle
    from geneb.pool.merge import MergeError as MergeError
    from geneb.pool.merge import build_tables as build_tables
    from geneb.pool.merge import merge_bundles as merge_bundles
    from geneb.pool.merge import merged_outputs as merged_outputs
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
