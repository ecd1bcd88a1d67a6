"""The checks the run plan makes of a configuration before any job: the schema (defaults filled in), one
spelling per local path, task and model ids, the caps note, the analysis exclusion lists, and the pre-flight of
every selected model and task source. `geneb.run.plan.plan_run` calls them in order; each raises with one message
naming the mistake and its fix."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb.core.paths import SCHEMA_DIR, schema_problems, validate_with_defaults
from geneb.registry.load import load_locked_registry, not_runnable, read_merged
from geneb.registry.registry import Registry, RegistryError, model_spec, write_merged_sheet
from geneb.run.preflight import PreflightError, format_problems, preflight
from geneb.run.rerun import canonical_path
from geneb.run.task_sources import format_source_problems, source_problems
from geneb.tasks.catalogue import CatalogueError, task_row


def default_schema_files() -> dict[str, Path]:
    """{"config" | "tasks" | "models": workflow/schemas/<name>.schema.yaml of this checkout}."""
    return {name: SCHEMA_DIR / f"{name}.schema.yaml" for name in ("config", "tasks", "models")}


def read_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def check_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`config` validated against the config schema and its defaults filled in, in place (as Snakemake's
    `validate`). Returns `config`. Raises ValueError listing every problem, one short line each (key path and
    what is wrong), not jsonschema's dump of the whole schema."""
    problems = schema_problems(config, schema)
    if problems:
        raise ValueError(
            f"the configuration does not match workflow/schemas/config.schema.yaml ({len(problems)} problem(s)):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return validate_with_defaults(config, schema)


def canonical_config_paths(config: dict[str, Any]) -> None:
    # the sheets are rule inputs, and `config/x` vs `/abs/config/x` would rerun them
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = canonical_path(config[key])
    config["registry_extra"] = [canonical_path(os.path.expanduser(p)) for p in config["registry_extra"]]
    config["model_weights"] = {m: canonical_path(os.path.expanduser(p)) for m, p in config["model_weights"].items()}
    published = config["analysis"]["published"]
    for key in ("dir", "registry", "claims"):
        published[key] = canonical_path(published[key])


def check_task_ids(config: dict[str, Any], task_sheet: pd.DataFrame) -> None:
    for task in config["tasks"]:
        task_row(task_sheet, task)  # unknown task ids fail here, with close matches
    for task in config["caps"].get("per_task") or {}:  # a misspelled id would cap nothing, silently
        try:
            task_row(task_sheet, task)
        except CatalogueError as err:
            raise ValueError(f"caps.per_task: {err}") from None


def caps_default_line(config: dict[str, Any]) -> str | None:
    # caps.default applies to every configured task, added ones too: say so once, when the run is planned
    default_caps = {k: v for k, v in (config["caps"].get("default") or {}).items() if v is not None}
    by_default = [t for t in config["tasks"] if t not in (config["caps"].get("per_task") or {})]
    if not default_caps or not by_default:
        return None
    return (
        f"caps.default {default_caps} applies to {len(by_default)} task(s) without caps.per_task: "
        f"{', '.join(by_default)} (keep one whole with caps.per_task.<task>: {{max_train: null, max_test: null}})"
    )


def load_run_registry(
    config: dict[str, Any], schema: dict[str, Any], *, resolve: bool, source: str
) -> tuple[Registry, list[str], str]:
    """`geneb.registry.load.load_locked_registry` for the run's config (model_sheet, model_revisions, the selected
    models, model_weights, execution.weights_dir, registry_extra; `resolve`: pin what is unpinned), an unknown model
    named with its setting in the config file(s) `source` (`model_settings`); then, with registry_extra files, the
    merged registry made the config's model_sheet (`use_merged_sheet`). Returns what load_locked_registry returns;
    raises what it raises."""
    out = load_locked_registry(
        config["model_sheet"],
        schema,
        config["model_revisions"],
        config["models"],
        resolve=resolve,
        weights=config["model_weights"],
        weights_dir=config["execution"]["weights_dir"],
        extra=config["registry_extra"],
        where=model_settings(config, source),
    )
    use_merged_sheet(config)  # jobs and analyses read the one merged file
    return out


def use_merged_sheet(config: dict[str, Any]) -> None:
    """With `registry_extra` files: write the merged registry (`geneb.registry.registry.write_merged_sheet`, under
    results_dir) and make it the config's model_sheet (registry_extra then empty), in place, so every job and
    analysis reads the same entries. Call after the registry loaded, so errors name the user's files."""
    if config["registry_extra"]:
        data = read_merged(config["model_sheet"], config["registry_extra"])
        config["model_sheet"] = canonical_path(write_merged_sheet(data, config["results_dir"]))
        config["registry_extra"] = []


def config_source(config_files: Sequence[str]) -> str:
    """The config files a run was read from, for an error about a setting: each once, in the order first read
    (Snakemake lists the Snakefile's default `configfile:` as an absolute path and again when it is
    also given on the command line), in its shortest spelling; "the config" when there is none."""
    seen: dict[str, str] = {}
    for name in config_files:
        key = os.path.realpath(name)
        seen[key] = min(seen.get(key, name), name, key=len)
    return " + ".join(seen.values()) or "the config"


def model_settings(config: dict[str, Any], source: str) -> dict[str, str]:
    """{model: the setting of the config (file(s) `source`) that names it}: "models_extra: entry 1" for a model
    models_extra adds, else "models: entry 3"; the prefix of its error when it is not in the registry."""
    where: dict[str, str] = {}
    # `models` already holds models_extra's additions (plan_run): the models_extra entry, read last, names them
    for key in ("models", "models_extra"):
        for i, model in enumerate(config[key]):
            where[model] = f"{source}: {key}: entry {i + 1}"
    return where


def check_exclusion_lists(config: dict[str, Any], registry: Registry, source: str = "the config") -> None:
    """Every model id of the analysis exclusion lists is in the registry; else ValueError naming the config file(s)
    `source`, the setting and its entry (a misspelled id would silently exclude nothing)."""
    analysis = config["analysis"]
    for where, scale in (
        ("analysis.scale", analysis["scale"]),
        ("analysis.published.scale", analysis["published"].get("scale", {})),
    ):
        for key, items in (
            ("rho_exclusions", scale.get("rho_exclusions") or []),
            ("in_domain.exclude_models", (scale.get("in_domain") or {}).get("exclude_models") or []),
        ):
            for i, item in enumerate(items):
                try:
                    model_spec(registry, item["model"])
                except RegistryError as err:
                    raise ValueError(f"{source}: {where}.{key}: entry {i + 1}: {err}") from None


def preflight_or_stop(
    config: dict[str, Any],
    registry: Registry,
    not_runnable_message: str,
    *,
    conda_deploys: bool,
    task_sheet: pd.DataFrame,
    prepared: Callable[[str], bool] | None = None,
) -> list[str]:
    """The pre-flight of every selected model (geneb.run.preflight) and task source (geneb.run.task_sources):
    returns the problems of this interpreter on the conda route without --sdm conda. Raises PreflightError listing
    every other problem at once, each with its fix (the models that cannot run at all first, `not_runnable_message`
    from load_locked_registry, then the others' env problems, then the tasks whose source cannot give them), so no
    job starts for a model or task that cannot run and nothing is retried. prepared: whether a task is prepared
    under this config (its remote source is then not asked; `geneb.run.task_sources.source_problems`)."""
    sources = format_source_problems(source_problems(config, task_sheet, prepared=prepared))
    blocked = not_runnable(registry, config["models"]) if not_runnable_message else {}
    problems, here = preflight(
        registry,
        [m for m in config["models"] if m not in blocked],
        env_route=config["execution"]["env_route"],
        conda_deploys=conda_deploys,
        env_cache=config["execution"]["env_dir"],
    )
    if not_runnable_message or problems or sources:
        report = [format_problems(problems + here)] if problems else []
        parts = [not_runnable_message, *report, sources]
        raise PreflightError("\n".join(part for part in parts if part))
    return here
