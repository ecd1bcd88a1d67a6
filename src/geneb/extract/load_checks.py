"""The load-time checks record: a model's load-time probes pass once, and every later load of the same model
under the same settings takes the record instead of running them again.

A token-level encoder probes its model when it loads (geneb.encoders.engine.token_checks: vocabulary, maximum
length, padding invariance). The record of a pass is stored atomically beside the model's embeddings,
`resources/embeddings/<model>/<settings hash>/load_checks.json`. The folder is the settings hash, which
holds the model's identity (a hub commit, or a local folder's content fingerprint) and every extraction
setting, so a changed model or setting has no record and probes again. Within the folder a record counts
only when the loaded encoder's identity (special tokens, maximum length, padding, dtypes: what the probes
depend on) and the versions of the packages that tokenize and run it are the ones that passed; otherwise
the probes run again and the record is replaced. A failed probe raises and writes nothing. Every HDF5
file records the sha256 of the record it relied on (`load_checks_sha256`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from geneb.core.atomic import write_text_atomic
from geneb.core.provenance import canonical_json, package_versions, stable_hash

log = logging.getLogger(__name__)

#: the record's file name, in the folder of the model's embeddings under one settings hash
FILENAME = "load_checks.json"
#: the record's layout version; a record of another layout is probed again
SCHEMA_VERSION = 1
#: packages whose versions a record is bound to (tokenization and the forward pass)
CHECKED_PACKAGES = ("torch", "transformers", "tokenizers")


@dataclass(frozen=True)
class LoadChecksRecord:
    """A passed set of load-time probes.

    model, settings_hash: the registry entry and its extraction-settings hash. identity_sha256: 12-hex hash
    of the loaded encoder's `identity()`. packages: versions of CHECKED_PACKAGES. checks: the probes that
    ran and passed, in order (empty for a family without load-time probes, e.g. k-mer counts).
    """

    model: str
    settings_hash: str
    identity_sha256: str
    packages: dict[str, str]
    checks: tuple[str, ...]
    schema_version: int = SCHEMA_VERSION

    def as_json(self) -> str:
        """The record as canonical JSON (sorted keys), the form its sha256 is taken of."""
        return canonical_json({**asdict(self), "checks": list(self.checks)})

    def sha256(self) -> str:
        """12-hex sha256 of `as_json()`; HDF5 files record it as `load_checks_sha256`."""
        return stable_hash(json.loads(self.as_json()))


def expected(model: str, settings_hash: str, identity: dict[str, Any], checks: tuple[str, ...]) -> LoadChecksRecord:
    """The record a load of `model` under `settings_hash` with encoder `identity` would need (or write)."""
    versions = package_versions(CHECKED_PACKAGES)
    return LoadChecksRecord(
        model=model,
        settings_hash=settings_hash,
        identity_sha256=stable_hash(identity),
        packages={name: versions[name] for name in CHECKED_PACKAGES},
        checks=tuple(checks),
    )


def read_record(path: str | Path) -> LoadChecksRecord | None:
    """The record at `path`, or None when there is none. A file that is not a record of this layout (edited
    by hand, another GENEB version) is logged and treated as absent, so the probes run again and replace it."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw["checks"] = tuple(raw["checks"])
        record = LoadChecksRecord(**raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as err:
        log.warning("load-checks record %s is not readable (%s); the load-time probes run again", path, err)
        return None
    if record.schema_version != SCHEMA_VERSION:
        log.warning("load-checks record %s has layout %s; the probes run again", path, record.schema_version)
        return None
    return record


def write_record(path: str | Path, record: LoadChecksRecord) -> None:
    """Write `record` to `path` atomically (a killed write leaves no record under the final name)."""
    write_text_atomic(path, json.dumps(json.loads(record.as_json()), indent=1, sort_keys=True) + "\n")
