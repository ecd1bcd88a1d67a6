"""The extraction stage: one (model, task) -> one HDF5 embedding file (`step`, read it first), the job that
runs it in the model's env (`job`), the per-node model server and its client (`server`), the HDF5 embedding cache
(`cache`), the batch plan with the execution options and the load-checks record (`batch_plan`), and vectors
computed elsewhere (`precomputed`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "ExecutionOptions": "geneb.extract.batch_plan",
    "CacheError": "geneb.extract.cache",
    "configure_hdf5_locking": "geneb.extract.cache",
    "list_views": "geneb.extract.cache",
    "read_embeddings": "geneb.extract.cache",
    "read_key": "geneb.extract.cache",
    "read_view": "geneb.extract.cache",
    "read_whole": "geneb.extract.cache",
    "model_interpreter": "geneb.extract.job",
    "run_rule_job": "geneb.extract.job",
    "import_task": "geneb.extract.precomputed",
    "connect": "geneb.extract.server",
    "spawn": "geneb.extract.server",
    "build_encoder": "geneb.extract.step",
    "embed_with_rc": "geneb.extract.step",
    "extract_task": "geneb.extract.step",
    "load_model": "geneb.extract.step",
    "LoadedModel": "geneb.extract.step",
    "model_inputs": "geneb.extract.step",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.extract.batch_plan import ExecutionOptions as ExecutionOptions
    from geneb.extract.cache import CacheError as CacheError
    from geneb.extract.cache import configure_hdf5_locking as configure_hdf5_locking
    from geneb.extract.cache import list_views as list_views
    from geneb.extract.cache import read_embeddings as read_embeddings
    from geneb.extract.cache import read_key as read_key
    from geneb.extract.cache import read_view as read_view
    from geneb.extract.cache import read_whole as read_whole
    from geneb.extract.job import model_interpreter as model_interpreter
    from geneb.extract.job import run_rule_job as run_rule_job
    from geneb.extract.precomputed import import_task as import_task
    from geneb.extract.server import connect as connect
    from geneb.extract.server import spawn as spawn
    from geneb.extract.step import LoadedModel as LoadedModel
    from geneb.extract.step import build_encoder as build_encoder
    from geneb.extract.step import embed_with_rc as embed_with_rc
    from geneb.extract.step import extract_task as extract_task
    from geneb.extract.step import load_model as load_model
    from geneb.extract.step import model_inputs as model_inputs
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
