"""The checks the run plan makes of a configuration before any job: the schema (defaults filled in), one
spelling per local path, task and model ids, the caps note, the analysis exclusion lists, and the pre-flight of
every selected model and task source. `geneb.run.plan.plan_run` calls them in order; each raises with one message
naming the mistake and its fix."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb.core.schemas import SCHEMA_DIR, schema_problems, validate_with_defaults
from geneb.registry.registry import Registry, RegistryError, model_spec
from geneb.registry.runnable import not_runnable
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
    # the sheets are rule inputs, and `config/x` vs `/abs/config/x` would rerun them (case B44)
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = canonical_path(config[key])
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


def check_exclusion_lists(config: dict[str, Any], registry: Registry) -> None:
    # a misspelled id in an analysis exclusion list would silently exclude nothing
    analysis = config["analysis"]
    for where, scale in (
        ("analysis.scale", analysis["scale"]),
        ("analysis.published.scale", analysis["published"].get("scale", {})),
    ):
        for key, items in (
            ("rho_exclusions", scale.get("rho_exclusions") or []),
            ("in_domain.exclude_models", (scale.get("in_domain") or {}).get("exclude_models") or []),
        ):
            for item in items:
                try:
                    model_spec(registry, item["model"])
                except RegistryError as err:
                    raise ValueError(f"{where}.{key}: {err}") from None


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
