"""The execution knobs of an extraction as one typed object: `ExecutionOptions`, built from the config's
`execution:` section.

Every default is the config schema's (`workflow/schemas/config.schema.yaml`, `properties.execution`), read
through `geneb.core.schemas.load_schema`: no default is repeated here, so a knob's default changes in one place.
Execution knobs never change a vector (README, "Other configurations"), so none of them is in the cache key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from geneb.core.schemas import load_schema, schema_problems


def execution_schema() -> dict[str, Any]:
    """The JSON schema of the config's `execution:` section (a copy; every property carries its default)."""
    return dict(load_schema("config")["properties"]["execution"])


@dataclass(frozen=True)
class ExecutionOptions:
    """How extraction jobs run (docs/hpc.md): one field per property of the schema's `execution` section.

    device: cpu, cuda or auto. batch_size: chunks per forward pass; batch_tokens: padded tokens per forward
    pass instead ("by_device", the default: the fixed budget of the device class, geneb.extract.batch_plan.DEVICE_BUDGETS;
    None: batch_size; "auto": measured once per model on a CPU, geneb.extract.batch_plan). threads: torch intra-op
    threads. hdf5_locking: auto, on or off.
    env_route: conda or venv; env_dir: where the venvs are (None: $GENEB_ENV_DIR, else .geneb/envs).
    weights_dir: the cache of weights from outside the hub. model_server / model_server_idle_s (seconds): one
    model load per node and model. probe_worker / probe_worker_idle_s (seconds): the warm probe worker.
    load_checks: record or every_load (geneb.extract.step.load_model).
    """

    device: str
    batch_size: int
    batch_tokens: int | str | None
    threads: int
    hdf5_locking: str
    env_route: str
    env_dir: str | None
    weights_dir: str
    model_server: bool
    probe_worker: bool
    probe_worker_idle_s: float
    load_checks: str
    model_server_idle_s: float

    @classmethod
    def from_config(cls, execution: Mapping[str, Any] | None = None) -> ExecutionOptions:
        """The options of a config's `execution:` mapping (None or {}: every default), absent keys taking the
        schema's defaults. Raises ValueError listing every problem the schema finds (an unknown knob, a value of
        the wrong type or outside its enum)."""
        schema = execution_schema()
        given = dict(execution or {})
        problems = schema_problems(given, schema)
        if problems:
            raise ValueError("execution options: " + "; ".join(problems))
        defaults = {name: prop["default"] for name, prop in schema["properties"].items()}
        return cls(**{**defaults, **given})

    @classmethod
    def of(cls, execution: ExecutionOptions | Mapping[str, Any] | None) -> ExecutionOptions:
        """`execution` itself when already typed, else `from_config(execution)`."""
        return execution if isinstance(execution, ExecutionOptions) else cls.from_config(execution)

    def as_dict(self) -> dict[str, Any]:
        """The options as the config mapping they came from (JSON-ready; `from_config(as_dict())` == self)."""
        return dataclasses.asdict(self)
