"""Reading the model registry file (config/models.yaml): `load_registry`, its only reader, and
`load_locked_registry`, which pins the hub models a run selects first. Torch-free: Snakemake calls these while it
builds the DAG. Field meanings are in docs/data-dictionary.md ("Inputs: the model registry"); how to add a model
is in docs/adding-a-model.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from geneb.core.envs import ENVS_DIR
from geneb.core.schemas import load_schema, schema_errors
from geneb.registry.checks import check_envs, check_registry
from geneb.registry.extra import merge_extra, sheet_label
from geneb.registry.families import FAMILIES
from geneb.registry.pins import PinError, apply_pins, lock_revisions, read_pins
from geneb.registry.python_entry import resolve_entry_paths
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.runnable import not_runnable, selection_error
from geneb.registry.twins import add_implicit_twins, expand_twin_entries
from geneb.registry.weights import WeightsError, apply_weights

if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:  # the C parser when libyaml is there
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):
    """A safe loader that refuses a key given twice in one mapping: plain YAML keeps the last silently, so a
    model id appended again would replace the first entry without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice (first at line {seen[key].line + 1})", key_node.start_mark
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _parse(path: Path) -> dict[str, Any]:
    """The registry file parsed: a mapping with a `models` mapping of id -> mapping, else RegistryError
    (unparsable YAML with line and column, a key such as a model id given twice, a binary file, another
    shape). OSError if it cannot be read."""
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise RegistryError(f"{path}: not valid YAML ({where}{err.problem or err.context})") from err
    except yaml.YAMLError as err:
        raise RegistryError(f"{path}: not valid YAML ({str(err).strip().splitlines()[0]})") from err
    except UnicodeDecodeError as err:
        raise RegistryError(f"{path}: not a text file ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise RegistryError(f"{path}: expected a mapping with a `models` mapping")
    bad = [str(m) for m, spec in data["models"].items() if not isinstance(spec, dict)]
    if bad:
        raise RegistryError(f"{path}: the entry of each model must be a mapping of fields, not of {', '.join(bad[:5])}")
    return data


def read_merged(path: str | Path, extra: Sequence[str | Path] = ()) -> dict[str, Any]:
    """The registry file `path` parsed, each file of `extra` parsed and its entries added
    (`geneb.registry.extra.merge_extra`), a python entry's file path resolved against the folder of the file that
    declares it. Raises RegistryError naming the file (an id clash: both files), OSError if one cannot be read."""
    data = _parse(Path(path))
    resolve_entry_paths(data, Path(path).parent)
    extras = []
    for file in extra:
        more = _parse(Path(file))
        resolve_entry_paths(more, Path(file).parent)
        extras.append((str(file), more))
    merge_extra(data, path, extras)
    return data


def load_registry(
    path: str | Path,
    schema: dict[str, Any] | None = None,
    *,
    pins: str | Path | None = None,
    envs_dir: str | Path | None = ENVS_DIR,
    weights: Mapping[str, Any] | None = None,
    weights_dir: str | Path | None = None,
    extra: Sequence[str | Path] = (),
) -> Registry:
    """Read config/models.yaml (the only reader of that file; with the entries of each user registry file of
    `extra`, config key `registry_extra`, added by `read_merged`), apply the pinned hub revisions of the file
    `pins` (config key `model_revisions`; geneb.registry.pins) and the weights paths of `weights` (config key
    `model_weights`: {model id: folder, archive or file}; `weights.apply_weights`), expand its random-init twin entries (`twins.expand_twin_entries`), validate the mapping against the JSON schema
    (`schema`, default workflow/schemas/models.schema.yaml), run the cross-field checks of `check_registry`
    and the env checks of `check_envs` against the env files of `envs_dir` (default the repository's envs/;
    None skips them), add the implicit twin `<model>-twin` of every entry that can have one
    (`twins.add_implicit_twins`), and build the typed `Registry` (with `weights_dir`, the cache folder of external archives
    and downloads, default resources/model_weights). Raises RegistryError naming the file, the model and the
    field (for an env: the model, the env and the fix; for `model_weights`: the model)."""
    data = read_merged(path, extra)
    path = sheet_label(path, extra)  # errors name every file
    if pins is not None:
        try:
            apply_pins(data, read_pins(pins))
        except PinError as exc:
            raise RegistryError(f"{pins}: {exc}") from exc
    if weights:
        try:
            apply_weights(data, weights)
        except WeightsError as exc:
            raise RegistryError(str(exc)) from exc
    twin_problems = expand_twin_entries(data.get("models") or {}) if isinstance(data, dict) else []
    if twin_problems:
        raise RegistryError(f"{path}: " + "; ".join(twin_problems))
    errors = schema_errors(data, schema if schema is not None else load_schema("models"))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.path)) or "(top level)"
        raise RegistryError(f"{path}: {where}: {e.message}")
    problems = check_registry(data)
    if envs_dir is not None:
        problems += check_envs(data, envs_dir)
    if problems:
        raise RegistryError(f"{path}: " + "; ".join(problems))
    add_implicit_twins(data["models"])
    try:
        return Registry.from_mapping(data, weights_dir=weights_dir)
    except RegistryError as err:
        raise RegistryError(f"{path}: {err}") from err


def pin_owner(registry: Registry, model: str) -> str:
    """The entry whose hub pin `model` uses: a twin's model (its source is copied from it), else `model`."""
    twin = registry.spec(model).twin
    return str(twin["of"]) if twin is not None else model


def load_locked_registry(
    path: str | Path,
    schema: dict[str, Any] | None,
    pins: str | Path,
    models: list[str],
    *,
    resolve: bool,
    endpoint: str | None = None,
    weights: Mapping[str, Any] | None = None,
    weights_dir: str | Path | None = None,
    extra: Sequence[str | Path] = (),
    where: Mapping[str, str] | None = None,
) -> tuple[Registry, list[str], str]:
    """The registry with the lockfile `pins` and the config's `model_weights` paths (`weights`; cache folder
    `weights_dir`, config execution.weights_dir) applied, for a run of `models` (the workflow calls this once,
    when it plans the run). With `resolve` (the process that plans the run, not its jobs), first pins every
    selected hub model that has an adapter and no pin yet (`pins.lock_revisions`: the hub is asked once, the
    lockfile written atomically) and reloads. Returns (registry, log lines saying which models were pinned now
    and which run at commits already locked, the NotRunnableError message listing at once every selected model
    that cannot run and what it needs, "" when all can: `selection_error`; the network for a pin, named when
    the hub was unreachable or HF_HUB_OFFLINE is set, an adapter, or weights from outside the hub: what to fetch,
    from where, and the `model_weights` line). The caller raises it
    after its other checks of the config, so those keep their order.

    extra: the user registry files (config `registry_extra`) merged with `path`; where: {model: the setting that
    names it, e.g. "config.yaml: models: entry 3"}, the prefix of its error when it is not in the registry.

    Raises RegistryError for an unknown model id (with close matches, the setting that names it and the registry
    files) or a lockfile that cannot be used."""
    registry = load_registry(path, schema, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
    for model in models:
        try:
            registry.spec(model)
        except RegistryError as err:
            setting = (where or {}).get(model, "models")
            raise RegistryError(f"{setting}: {err} ({sheet_label(path, extra)})") from None
    lock = None
    log: list[str] = []
    if resolve:
        # a twin reads its model's configuration at its model's pin: the model is pinned, the twin copies it
        pinned = list(dict.fromkeys(pin_owner(registry, m) for m in models))
        with_adapter = [m for m in pinned if FAMILIES[registry.models[m].family].entry is not None]
        try:
            lock = lock_revisions(registry, pinned, pins, pinnable=with_adapter, endpoint=endpoint)
        except PinError as err:
            raise RegistryError(f"{pins}: {err}") from err
        if lock.pinned:
            registry = load_registry(path, schema, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
            log.append(
                f"pinned {len(lock.pinned)} hub model(s) once, written to the lockfile {pins}: "
                + ", ".join(
                    f"{m} {p['hub_id']}@{p['revision']} (from {p['resolved_from']})" for m, p in lock.pinned.items()
                )
            )
        if lock.locked:
            log.append(
                f"{len(lock.locked)} hub model(s) run at the commits locked in {pins}: "
                + ", ".join(f"{m}@{rev[:12]}" for m, rev in lock.locked.items())
            )
    problems = not_runnable(registry, models)
    return registry, log, selection_error(registry, problems, lock, str(pins)) if problems else ""
