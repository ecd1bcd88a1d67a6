"""Pinned hub revisions: the commit every hub model is loaded at (case B24).

`config/models.yaml` is generated from reference facts that carry no commit hashes, so its hub models are
`source.kind: hub-unpinned` and refused. Pins live in their own reviewed file, `config/model_revisions.yaml`
(config key `model_revisions`):

    schema_version: 1
    revisions:
      DNABERT-S:
        hub_id: zhihan1996/DNABERT-S
        revision: 0123...(40 hex)
        resolved_from: main          # the ref that was resolved
        resolved_at: 2026-11-30T10:00:00+00:00

`apply_pins` turns each pinned entry into `source.kind: hub` with that revision (the hub id must match, so a
pin can never move to another repository). `resolve_revisions` asks the Hugging Face hub API which commit a
ref points to now (`HfApi.model_info(repo, revision=ref).sha`; the endpoint follows HF_ENDPOINT), which is how
a user with network access pins models once, on a login node, before running offline compute jobs.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import yaml

from geneb.atomic import write_text_atomic
from geneb.provenance import REVISION

PINS_SCHEMA_VERSION = 1


class PinError(ValueError):
    """A pins file or a pin that cannot be applied (the message names the model)."""


def read_pins(path: str | Path) -> dict[str, dict[str, Any]]:
    """The `revisions` mapping of a pins file; {} when the file does not exist. Raises PinError for a bad
    file or a revision that is not a 40-hex commit."""
    path = Path(path)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if data.get("schema_version") != PINS_SCHEMA_VERSION or not isinstance(data.get("revisions", {}), dict):
        raise PinError(f"{path}: expected schema_version {PINS_SCHEMA_VERSION} and a `revisions` mapping")
    pins = data.get("revisions") or {}
    for model, pin in pins.items():
        if not isinstance(pin, dict) or not REVISION.match(str(pin.get("revision", ""))) or not pin.get("hub_id"):
            raise PinError(f"{path}: model {model}: a pin needs hub_id and a 40-hex commit revision, got {pin!r}")
    return pins


def apply_pins(registry: dict[str, Any], pins: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Return `registry` with every pinned model turned into `source.kind: hub` at its pinned revision.

    Raises PinError when a pin names a model not in the registry, a model that is not a hub model, or a hub id
    other than the entry's."""
    models = registry["models"]
    for model, pin in pins.items():
        if model not in models:
            raise PinError(f"pinned model {model!r} is not in the registry")
        src = dict(models[model].get("source") or {})
        if src.get("kind") not in ("hub", "hub-unpinned"):
            raise PinError(f"model {model}: pinned, but its source is {src.get('kind')!r}, not a hub model")
        if src.get("hub_id") != pin["hub_id"]:
            raise PinError(
                f"model {model}: pin is for hub id {pin['hub_id']!r}, the registry says {src.get('hub_id')!r}"
            )
        src.update(kind="hub", revision=pin["revision"])
        models[model] = {**models[model], "source": src}
    return registry


def resolve_revisions(
    registry: Any,
    models: list[str],
    *,
    ref: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Ask the hub which commit `ref` of each model's repository is now; returns pins (see module docstring).
    registry: the typed `geneb.models.registry.Registry` (`load_registry`).

    Raises PinError naming the model for a non-hub model or a failed lookup (missing repository, no network,
    no permission)."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    pins: dict[str, dict[str, Any]] = {}
    for model in models:
        spec = registry.models.get(model)
        if spec is None:
            raise PinError(f"model {model!r} is not in the registry")
        src = spec.source
        if src.kind not in ("hub", "hub-unpinned") or not src.hub_id:
            raise PinError(f"model {model}: source {src.kind!r} has no hub id to pin")
        try:
            sha = api.model_info(src.hub_id, revision=ref).sha
        except Exception as exc:  # network, 404, 401: all mean "not pinned"
            raise PinError(f"model {model}: cannot resolve {src.hub_id}@{ref} on {api.endpoint}: {exc}") from exc
        if not sha or not REVISION.match(sha):
            raise PinError(
                f"model {model}: the hub answered revision {sha!r} for {src.hub_id}@{ref}, not a 40-hex commit"
            )
        pins[model] = {"hub_id": src.hub_id, "revision": sha, "resolved_from": ref, "resolved_at": now}
    return pins


def write_pins(path: str | Path, pins: dict[str, dict[str, Any]]) -> None:
    """Merge `pins` into the pins file at `path` (created if missing), atomically, models in name order."""
    merged = {**read_pins(path), **pins}
    text = (
        "# Pinned hub revisions (geneb pin-revisions); merged into config/models.yaml at load time.\n"
        + yaml.safe_dump(
            {"schema_version": PINS_SCHEMA_VERSION, "revisions": dict(sorted(merged.items()))}, sort_keys=False
        )
    )
    write_text_atomic(path, text)
