"""Pinned hub revisions: the commit every hub model is loaded at, kept in a lockfile.

`config/models.yaml` is generated from reference facts that carry no commit hashes, so its hub models are
`source.kind: hub-unpinned` and refused. Pins live in their own lockfile, `config/model_revisions.yaml`
(config key `model_revisions`), which the first workflow run with network access fills (`lock_revisions`,
called when the DAG is built; docs/hpc.md, "Pinning the hub models"):

    schema_version: 1
    revisions:
      DNABERT-S:
        hub_id: zhihan1996/DNABERT-S
        revision: 0123...(40 hex)
        resolved_from: main          # the ref that was resolved
        resolved_at: 2026-11-30T10:00:00+00:00

`apply_pins` turns each pinned entry into `source.kind: hub` with that revision (the hub id must match, so a
pin can never move to another repository). `lock_revisions` resolves every selected model that has no pin yet,
once, by asking the Hugging Face hub API which commit `main` points to now (`HfApi.model_info(repo,
revision=ref).sha`; the endpoint follows HF_ENDPOINT), and writes those commits to the lockfile atomically; a
model already in the lockfile is never asked for again, so later runs use exactly the locked commits. Nothing
ever loads a floating revision. `resolve_revisions` is the same lookup for named models (`geneb pin-revisions`,
which moves a pin to the commit a ref points to now).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from geneb.core.atomic import write_text_atomic
from geneb.core.provenance import REVISION

PINS_SCHEMA_VERSION = 1
#: the lockfile's header (its comments are rewritten with every write)
PINS_HEADER = """\
# Pinned hub revisions: a lockfile, merged into config/models.yaml at load time (geneb.registry.pins).
# A hub model runs only at a commit recorded here: loading by name alone would run whatever the hub holds
# today. The first workflow run that selects an unpinned hub model resolves its `main` once, on the
# machine that plans the run (it needs the network then), and writes the commit here; later runs use exactly
# these commits. Commit this file with your results. To move a pin: geneb pin-revisions MODEL [--ref REF].
"""


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


class HubUnreachable(PinError):
    """The hub could not be reached at all (no network, HF_HUB_OFFLINE): no model can be pinned now."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _resolve_one(api: Any, model: str, hub_id: str, ref: str) -> dict[str, Any]:
    """The pin of `model` (hub repository `hub_id`) at the commit `ref` points to now. Raises HubUnreachable
    when no answer came (connection, timeout, offline mode) and PinError when the hub answered with an error
    (missing repository, no permission) or with something that is not a 40-hex commit."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        sha = api.model_info(hub_id, revision=ref).sha
    except HfHubHTTPError as exc:  # the hub answered: 404, 401, 403, 5xx
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise PinError(f"model {model}: cannot resolve {hub_id}@{ref} on {api.endpoint}: {first}") from exc
    except Exception as exc:  # no answer at all: connection refused, DNS, timeout, HF_HUB_OFFLINE
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise HubUnreachable(f"model {model}: cannot reach {api.endpoint} to resolve {hub_id}@{ref}: {first}") from exc
    if not sha or not REVISION.match(sha):
        raise PinError(f"model {model}: the hub answered revision {sha!r} for {hub_id}@{ref}, not a 40-hex commit")
    return {"hub_id": hub_id, "revision": sha, "resolved_from": ref, "resolved_at": _now()}


def resolve_revisions(
    registry: Any,
    models: list[str],
    *,
    ref: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Ask the hub which commit `ref` of each model's repository is now; returns pins (see module docstring).
    registry: the typed `geneb.registry.registry.Registry` (`load_registry`).

    Raises PinError naming the model for a non-hub model or a failed lookup (missing repository, no network
    (HubUnreachable), no permission)."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    pins: dict[str, dict[str, Any]] = {}
    for model in models:
        spec = registry.models.get(model)
        if spec is None:
            raise PinError(f"model {model!r} is not in the registry")
        src = spec.source
        if src.kind not in ("hub", "hub-unpinned") or not src.hub_id:
            raise PinError(f"model {model}: source {src.kind!r} has no hub id to pin")
        pins[model] = _resolve_one(api, model, src.hub_id, ref)
    return pins


@dataclass(frozen=True)
class LockResult:
    """What `lock_revisions` did. pinned: the pins it resolved and wrote now; locked: {model: commit} of the
    selected models whose pin was already in the lockfile (used as they are); failed: {model: why it could not
    be pinned}; unreachable: True when the hub could not be reached at all (the failed models need the network)."""

    pinned: dict[str, dict[str, Any]] = field(default_factory=dict)
    locked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    unreachable: bool = False


def lock_revisions(
    registry: Any,
    models: Iterable[str],
    path: str | Path,
    *,
    pinnable: Iterable[str] | None = None,
    ref: str = "main",
    endpoint: str | None = None,
    token: str | None = None,
) -> LockResult:
    """Pin, once, every model of `models` that is a hub model without a pin (`source.kind: hub-unpinned`) and
    is among `pinnable` (default: all of them; the workflow passes the ones with an adapter, which could run
    once pinned): resolve `ref` on the hub and merge the commits into the lockfile `path` atomically. Models
    already pinned there are not asked for again (`locked`). registry: the typed Registry, loaded with `path`'s
    pins applied.

    Never raises for a failed lookup: a model the hub refuses is in `failed` with the hub's answer; when the hub
    cannot be reached (no network, HF_HUB_OFFLINE=1) the remaining models are not tried and are all in `failed`,
    with `unreachable` set. Raises PinError for a lockfile that cannot be read."""
    models = list(models)
    already = read_pins(path)
    allowed = set(models if pinnable is None else pinnable)
    locked = {m: str(already[m]["revision"]) for m in models if m in already}
    todo = [m for m in models if m in allowed and registry.models[m].source.kind == "hub-unpinned"]
    if not todo:
        return LockResult(locked=locked)
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token)
    pinned: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    unreachable = False
    for model in todo:
        hub_id = str(registry.models[model].source.hub_id)
        if unreachable:
            failed[model] = f"{hub_id}: not tried, the hub was unreachable"
            continue
        try:
            pinned[model] = _resolve_one(api, model, hub_id, ref)
        except HubUnreachable as err:
            unreachable = True
            failed[model] = str(err).removeprefix(f"model {model}: ")
        except PinError as err:
            failed[model] = str(err).removeprefix(f"model {model}: ")
    if pinned:
        write_pins(path, pinned)
    return LockResult(pinned=pinned, locked=locked, failed=failed, unreachable=unreachable)


def write_pins(path: str | Path, pins: dict[str, dict[str, Any]]) -> None:
    """Merge `pins` into the pins file at `path` (created if missing), atomically, models in name order."""
    merged = {**read_pins(path), **pins}
    text = PINS_HEADER + yaml.safe_dump(
        {"schema_version": PINS_SCHEMA_VERSION, "revisions": dict(sorted(merged.items()))}, sort_keys=False
    )
    write_text_atomic(path, text)
