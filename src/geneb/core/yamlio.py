"""The one YAML reader of GENEB: PyYAML's safe loader on libyaml's C parser where PyYAML was built with it (every
PyPI wheel of PyYAML is), the pure-Python parser otherwise. The C parser reads the same YAML 1.1 into the same
objects about ten times faster: config/tasks.lock (37 kB) in 0.04 s instead of 0.36 s, which every `snakemake`
start, every cluster job and every in-process plan pays (docs/performance.md, "Workflow start-up")."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    SafeLoader = yaml.SafeLoader
else:
    #: the safe loader class to subclass (e.g. to refuse duplicate keys): libyaml's when there
    SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """The YAML document in `stream` (text, bytes or an open file) as Python objects, as `yaml.safe_load` reads it.
    Raises yaml.YAMLError (yaml.MarkedYAMLError with the line and column) for text that is not YAML."""
    return yaml.load(stream, Loader=SafeLoader)  # noqa: S506 - a safe loader
