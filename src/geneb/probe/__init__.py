"""The probing stage (docs/protocols.md): `protocols` (the two named protocols built from config), `shots`
(k-shot draws and the shot files), `fit` (every regime and seed of one (model, task) in memory), `metrics` (MCC
and friends with bootstrap and seed CIs, the clean subset), `views` (the view columns), `job` (the workflow steps,
file in, file out; read it first) and `worker` (the warm per-node probe worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "Fit": "geneb.probe.fit",
    "score_fits": "geneb.probe.fit",
    "TaskArrays": "geneb.probe.fit",
    "thread_record": "geneb.probe.fit",
    "dedup_scores": "geneb.probe.job",
    "fit_probes": "geneb.probe.job",
    "stamp_rows": "geneb.probe.job",
    "write_shot_indices": "geneb.probe.job",
    "batched_mcc": "geneb.probe.metrics",
    "clean_columns": "geneb.probe.metrics",
    "from_config": "geneb.probe.protocols",
    "Protocol": "geneb.probe.protocols",
    "check_shots": "geneb.probe.shots",
    "DRAW_KEYS": "geneb.probe.shots",
    "NESTED_DRAW_KEY": "geneb.probe.shots",
    "read_shots": "geneb.probe.shots",
    "registry_view": "geneb.probe.views",
    "with_view": "geneb.probe.views",
    "run_fit_probes_job": "geneb.probe.worker",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.probe.fit import Fit as Fit
    from geneb.probe.fit import TaskArrays as TaskArrays
    from geneb.probe.fit import score_fits as score_fits
    from geneb.probe.fit import thread_record as thread_record
    from geneb.probe.job import dedup_scores as dedup_scores
    from geneb.probe.job import fit_probes as fit_probes
    from geneb.probe.job import stamp_rows as stamp_rows
    from geneb.probe.job import write_shot_indices as write_shot_indices
    from geneb.probe.metrics import batched_mcc as batched_mcc
    from geneb.probe.metrics import clean_columns as clean_columns
    from geneb.probe.protocols import Protocol as Protocol
    from geneb.probe.protocols import from_config as from_config
    from geneb.probe.shots import DRAW_KEYS as DRAW_KEYS
    from geneb.probe.shots import NESTED_DRAW_KEY as NESTED_DRAW_KEY
    from geneb.probe.shots import check_shots as check_shots
    from geneb.probe.shots import read_shots as read_shots
    from geneb.probe.views import registry_view as registry_view
    from geneb.probe.views import with_view as with_view
    from geneb.probe.worker import run_fit_probes_job as run_fit_probes_job
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
