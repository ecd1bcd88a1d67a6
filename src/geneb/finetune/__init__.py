"""Beside the probes: parameter-efficient fine-tuning (`finetune-lora`; docs/protocols.md): `recipe` (the
protocol and its errors), `plan` (the protocol's part of the run plan: its cells, rerun keys and resources,
torch-free), `train` (one cell's network and training) and `job` (the workflow step, read it first)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from geneb._exports import lazy_exports

#: what the package exports (its `__all__`): the names other GENEB packages use and those docs/api.md documents,
#: each with the module that defines it (only docs/api.md's are promised to users; geneb._exports)
_EXPORTS = {
    "finetune_task": "geneb.finetune.job",
    "FineTunePlan": "geneb.finetune.plan",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # the same names, for mypy and editors
    from geneb.finetune.job import finetune_task as finetune_task
    from geneb.finetune.plan import FineTunePlan as FineTunePlan
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
