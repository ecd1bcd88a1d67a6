"""The run plan: everything the workflow decides when Snakemake parses it, in one function, without Snakemake.

`plan_run` takes the configuration as Snakemake loaded it (config files merged, `--config` applied) and returns a
`RunPlan`: the validated config with the schema's defaults filled in, the task catalogue, the model registry with
its pins, the extraction settings and settings hash of every selected model, and what planning did on the way
(lockfile lines, pre-flight warnings, partial embedding files moved aside). Every mistake in the config stops here,
before any job, with one message naming it. workflow/rules/common.smk calls it once and hands its parts to the
rules; the input and params functions of the rules are methods of the plan, so they are tested here too.

Planning is torch-free (tests/run/test_torch_free.py): Snakemake parses the workflow in every job process too.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd
import yaml

from geneb.core.schemas import SCHEMA_DIR, schema_problems, validate_with_defaults
from geneb.probe.sampling import NESTED_DRAW_KEY
from geneb.probe.shots import DRAW_KEYS as SHOT_DRAW_KEYS
from geneb.registry.families import family as model_family
from geneb.registry.registry import (
    Registry,
    RegistryError,
    extraction_hash,
    extraction_settings,
    load_locked_registry,
    model_spec,
    not_runnable,
)
from geneb.registry.views import model_depth
from geneb.run import partial as partial_run
from geneb.run import resources as job_resources
from geneb.run.preflight import PreflightError, format_problems, preflight
from geneb.run.rerun import canonical_path, stable_params
from geneb.run.set_aside import set_aside_partial
from geneb.run.views import plan_views
from geneb.tasks.catalogue import CatalogueError, read_catalogue, source_string, task_row, validate_catalogue
from geneb.tasks.prepare import CATALOGUE_COLUMNS_USED
from geneb.tasks.sources import missing_splits, source_identity

#: the default task_checks (config schema): left out of the prepare_task rerun key
TASK_CHECK_DEFAULTS = {"single_class_test": "error"}

#: the default targets of `snakemake`: the score table, the leaderboard, the heatmap and the report
FINAL_OUTPUTS = (
    "results/tables/scores.parquet",
    "results/tables/leaderboard.parquet",
    "results/figures/heatmap.png",
    "results/report/geneb_report.html",
)

#: the published results' reference files, {name: file under config analysis.published.dir}
PUBLISHED_FILE_NAMES = {
    "results": "per_task_results.tsv",
    "spec": "benchmark_spec.json",
    "models": "models.tsv",
}


class PlanLog(Protocol):
    """Where planning says what it did: Snakemake's logger in the workflow, any `logging.Logger`, a test double."""

    def info(self, msg: str) -> object: ...

    def warning(self, msg: str) -> object: ...


@dataclass(frozen=True, eq=False)
class RunPlan:
    """What `plan_run` decided for one run.

    config: the validated configuration, schema defaults filled, every mapping sorted (`stable_params`), local
    paths in one spelling (`canonical_path`), `tasks` restricted to the completed ones in a partial run.
    task_sheet: the task catalogue (one row per task id, `geneb.tasks.catalogue`). registry: the model registry
    with the lockfile's pins and the config's `model_weights` applied. extraction_settings / extraction_hashes:
    {model: the resolved output-affecting extraction settings (the extraction rerun key)} and {model: their
    12-hex hash, the embedding cache folder}. preflight_here: the pre-flight problems of this interpreter on the
    conda route without --sdm conda (a real run stops on them in `onstart`; a dry run plans on). set_aside:
    (old, new) paths of the partial embedding files moved aside. lock_log: the lockfile lines (models pinned now
    or run at locked commits). partial: the failures file of a partial run (`geneb.run.partial`), None otherwise;
    partial_file: its path.
    """

    config: dict[str, Any]
    task_sheet: pd.DataFrame
    registry: Registry
    extraction_settings: Mapping[str, dict[str, Any]]
    extraction_hashes: Mapping[str, str]
    preflight_here: tuple[str, ...] = ()
    set_aside: tuple[tuple[Path, Path], ...] = ()
    lock_log: tuple[str, ...] = ()
    partial: dict[str, Any] | None = None
    partial_file: str | None = None

    @property
    def tasks(self) -> list[str]:
        """The configured task ids, in config order."""
        return list(self.config["tasks"])

    @property
    def models(self) -> list[str]:
        """The configured model ids, in config order."""
        return list(self.config["models"])

    # ---- tasks -----------------------------------------------------------------------------------------------

    def task_params(self, task: str) -> dict[str, Any]:
        """Everything that decides a prepared task's content (the prepare_task rerun key): the catalogue columns
        it uses, the source's content identity (file digests for a mirror folder, so an edited file reruns the task
        and a moved mirror with the same files does not; the pinned source string otherwise), alphabet policy and
        caps. Where the data is read from is resolved again in the job (config + environment), outside the key.
        Raises CatalogueError for a task not in the catalogue."""
        row = task_row(self.task_sheet, task)
        caps = self.config["caps"]
        task_checks = self.config["task_checks"]
        return stable_params(  # type: ignore[no-any-return]
            {
                "catalogue_row": {key: row.get(key, "") for key in CATALOGUE_COLUMNS_USED},
                "source_identity": source_identity(source_string(row, self.config), task),
                "alphabet": self.config["alphabet"],
                "caps": {**caps["default"], **caps["per_task"].get(task, {})},
                "cap_seed": caps["seed"],
                # only when not the default, so the rerun key of every task prepared before the key existed holds
                **({"task_checks": task_checks} if task_checks != TASK_CHECK_DEFAULTS else {}),
            }
        )

    def task_cards(self) -> list[str]:
        """The task cards of every configured task (they record caps, which make a task not the paper's split)."""
        return [f"resources/tasks/{task}/card.json" for task in self.tasks]

    # ---- extraction ------------------------------------------------------------------------------------------

    def embedding_file(self, model: str, task: str) -> str:
        """The HDF5 cache of (model, task) under the model's current settings hash. Raises KeyError for a model
        that is not configured."""
        return f"resources/embeddings/{model}/{self.extraction_hashes[model]}/{task}.h5"

    def task_embedding_files(self, task: str) -> list[str]:
        """The embedding files of one task (every model, current settings): its probes can run when all exist."""
        return [self.embedding_file(model, task) for model in self.models]

    def extraction_params(self, model: str, settings_hash: str) -> dict[str, Any]:
        """The model's resolved extraction settings (the extract_embeddings rerun key). Raises ValueError for a
        path whose settings hash is not the current one."""
        if self.extraction_hashes[model] != settings_hash:
            raise ValueError(
                f"embedding path for {model} has settings hash {settings_hash}, "
                f"current settings hash is {self.extraction_hashes[model]}"
            )
        return self.extraction_settings[model]

    def extraction_env(self, model: str) -> str | None:
        """The conda env file of the model's extraction, relative to the rule files: envs/<env>.yaml of its
        registry entry (`env:`, default geneb); None on the venv route (execution.env_route: venv), where
        geneb.extract.job runs the extraction with the model's venv instead."""
        if self.config["execution"]["env_route"] == "venv":
            return None
        return f"../../envs/{model_spec(self.registry, model).env_name}.yaml"

    def extraction_priority(self, model: str, task: str) -> int:
        """Scheduling order of extraction jobs (never part of any output), higher first: task by task, and within
        a task the models in config order, so the jobs running at once are mostly of different models. Each
        model's jobs go through one model server that embeds one task at a time, so two jobs of one model
        running together would leave a core waiting (docs/job_resources.md, "One model load per node")."""
        models, tasks = self.models, self.tasks
        rank = tasks.index(task) * len(models) + models.index(model)
        return len(models) * len(tasks) - rank

    def model_depth(self, model: str) -> dict[str, Any]:
        """{"n_layers": the model's block count when known while planning, else None} (`registry.views.model_depth`):
        a fit_probes param, so that the score rows of the registry's view name its absolute layer."""
        return {"n_layers": model_depth(self.extraction_settings[model])}

    def extraction_gpus(self, model: str) -> int:
        """1 GPU for a torch model when execution.device is cuda/auto, else 0 (k-mer models, device cpu)."""
        uses_torch = model_family(self.extraction_settings[model]["family"]).uses_torch
        return job_resources.extraction_gpus(uses_torch, self.config["execution"]["device"])

    def extraction_mem_mb(self, model: str, attempt: int) -> int:
        """Host memory (MB) of one extraction job: base + weights (registry `params`), doubled on each retry."""
        return job_resources.extraction_mem_mb(model_spec(self.registry, model).params, attempt)

    # ---- probes ----------------------------------------------------------------------------------------------

    def probe_settings(self, protocol: str) -> dict[str, Any]:
        """The probe settings of `protocol` (config probe.<protocol>): the fit_probes rerun key."""
        return self.config["probe"][protocol]  # type: ignore[no-any-return]

    def shot_draw_params(self, protocol: str) -> dict[str, Any]:
        """The part of the protocol's settings that decides the shot draws: the write_shot_indices rerun key."""
        settings = self.probe_settings(protocol)
        params = {key: settings[key] for key in SHOT_DRAW_KEYS}
        if settings["draw"] == "nested":  # the nested draw's key rule: a shot file drawn under an older one is redrawn
            params["nested_draw_key"] = NESTED_DRAW_KEY
        return params

    def probe_tables(self, tasks: list[str] | None = None, *, kind: str = "probes") -> list[str]:
        """Every results/<kind>/<protocol>/<model>/<task>.parquet of `tasks` (default: every configured task),
        protocols outermost and tasks innermost (Snakemake's `expand` order). kind: probes (score tables) or
        predictions."""
        combos = itertools.product(self.config["protocols"], self.models, self.tasks if tasks is None else tasks)
        return [f"results/{kind}/{protocol}/{model}/{task}.parquet" for protocol, model, task in combos]

    # ---- aggregation, analyses and the report ----------------------------------------------------------------

    def failure_files(self) -> list[str]:
        """[the failures file] in a partial run (geneb.run.partial), else []: an input of aggregate_scores."""
        return [self.partial_file] if self.partial is not None and self.partial_file else []

    def report_config(self) -> dict[str, Any]:
        """The configuration shown in the report, without the execution knobs and the `model_weights` paths (they
        never change a result: the weights' content is in each model's settings hash; so they must not rerun the
        report either), every mapping sorted."""
        shown = {key: value for key, value in self.config.items() if key not in ("execution", "model_weights")}
        for key in ("tasks", "models", "protocols"):  # their order changes no result
            shown[key] = sorted(shown[key])
        return stable_params(shown)  # type: ignore[no-any-return]

    def published_files(self) -> dict[str, str]:
        """{name: path} of the published results' reference files (config analysis.published.dir)."""
        folder = self.config["analysis"]["published"]["dir"]
        return {name: f"{folder}/{file}" for name, file in PUBLISHED_FILE_NAMES.items()}

    def submission_files(self) -> list[str]:
        """One leaderboard submission file (schema 1.0) per configured model."""
        return [f"results/submissions/{model}.json" for model in self.models]


def default_schema_files() -> dict[str, Path]:
    """{"config" | "tasks" | "models": workflow/schemas/<name>.schema.yaml of this checkout}."""
    return {name: SCHEMA_DIR / f"{name}.schema.yaml" for name in ("config", "tasks", "models")}


def _read_yaml(path: Path) -> Any:
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


def _canonical_config_paths(config: dict[str, Any]) -> None:
    # the sheets are rule inputs, and `config/x` vs `/abs/config/x` would rerun them (case B44)
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = canonical_path(config[key])
    config["model_weights"] = {m: canonical_path(os.path.expanduser(p)) for m, p in config["model_weights"].items()}
    published = config["analysis"]["published"]
    for key in ("dir", "registry", "claims"):
        published[key] = canonical_path(published[key])


def _check_task_ids(config: dict[str, Any], task_sheet: pd.DataFrame) -> None:
    for task in config["tasks"]:
        task_row(task_sheet, task)  # unknown task ids fail here, with close matches
    for task in config["caps"].get("per_task") or {}:  # a misspelled id would cap nothing, silently
        try:
            task_row(task_sheet, task)
        except CatalogueError as err:
            raise ValueError(f"caps.per_task: {err}") from None


def _caps_default_line(config: dict[str, Any]) -> str | None:
    # caps.default applies to every configured task, added ones too: say so once, when the run is planned
    default_caps = {k: v for k, v in (config["caps"].get("default") or {}).items() if v is not None}
    by_default = [t for t in config["tasks"] if t not in (config["caps"].get("per_task") or {})]
    if not default_caps or not by_default:
        return None
    return (
        f"caps.default {default_caps} applies to {len(by_default)} task(s) without caps.per_task: "
        f"{', '.join(by_default)} (keep one whole with caps.per_task.<task>: {{max_train: null, max_test: null}})"
    )


def _check_exclusion_lists(config: dict[str, Any], registry: Registry) -> None:
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


def _check_task_files(config: dict[str, Any], task_sheet: pd.DataFrame) -> None:
    # a task folder missing from a local mirror fails here, in a dry run too, not in its prepare job
    for task in config["tasks"]:
        source = source_string(task_row(task_sheet, task), config)
        missing = missing_splits(source, task)
        if missing:
            raise ValueError(
                f"task {task!r}: no {'/'.join(missing)} split ({{split}}.csv.gz or {{split}}.csv) under "
                f"{source}/{task}; add the task's files there or point task_source / GENEB_TASK_SOURCE at "
                "the mirror that has them (docs/adding-a-task.md)"
            )


def _preflight(
    config: dict[str, Any], registry: Registry, not_runnable_message: str, *, conda_deploys: bool
) -> list[str]:
    """The pre-flight of every selected model (geneb.run.preflight): returns the problems of this interpreter on the
    conda route without --sdm conda. Raises PreflightError listing every other problem at once, each with its fix
    (the models that cannot run at all first, `not_runnable_message` from load_locked_registry, then the others'
    env problems), so no job starts for a model that cannot run and nothing is retried."""
    blocked = not_runnable(registry, config["models"]) if not_runnable_message else {}
    problems, here = preflight(
        registry,
        [m for m in config["models"] if m not in blocked],
        env_route=config["execution"]["env_route"],
        conda_deploys=conda_deploys,
        env_cache=config["execution"]["env_dir"],
    )
    if not_runnable_message or problems:
        report = [format_problems(problems + here)] if problems else []
        raise PreflightError("\n".join([not_runnable_message, *report] if not_runnable_message else report))
    return here


def plan_run(
    config: Mapping[str, Any],
    *,
    schema_files: Mapping[str, str | os.PathLike[str]] | None = None,
    main_process: bool,
    conda_deploys: bool,
    partial_file: str | None,
    log: PlanLog,
) -> RunPlan:
    """Plan one run of the workflow from `config` (as Snakemake loaded it; not changed: the plan holds a copy).

    schema_files: {"config" | "tasks" | "models": the path of that JSON schema}; default: workflow/schemas/ of this
    checkout (the workflow passes Snakemake's copies, `workflow.source_path`).

    In order, each step stopping the run with its own message: the config against the config schema (every
    problem listed, then the defaults filled in); a partial run's task list (`partial_file`, $GENEB_PARTIAL_RUN);
    mappings sorted and local paths in one spelling (rerun keys, case B44); the task catalogue against the tasks
    schema and every task id (configured and in caps.per_task) in it; the registry (models schema) with pins,
    every selected hub model without one pinned first in the main process; the model ids of the analysis exclusion lists; then, in the main process only (Snakemake
    parses the workflow in every job too): every task's split files in its local mirror, and the pre-flight of
    every selected model (`conda_deploys`: Snakemake deploys conda envs, --sdm conda). Then the extraction settings
    and hash per model (`dtype: auto` resolved for the run's device class), and, in the main process, every
    configured embedding file that is not complete moved aside so Snakemake schedules it again (case B41).

    log: gets the caps.default line and the lockfile lines (info), the pre-flight problems of this interpreter
    and each file moved aside (warning), as they happen.

    Raises ValueError (config, task ids, caps.per_task, exclusion lists, missing splits; the catalogue's
    CatalogueError and the registry's RegistryError are ValueErrors too) and PreflightError (a selected model
    cannot run), each naming what to fix.
    """
    schemas = {name: Path(path) for name, path in (schema_files or default_schema_files()).items()}
    config = check_config(copy.deepcopy(dict(config)), _read_yaml(schemas["config"]))
    # a partial run (started by the onerror handler of a --keep-going run in which tasks failed) builds the
    # tables from the tasks that completed; the failed ones are recorded, never silently missing
    partial = partial_run.read_partial(partial_file)
    if partial is not None:
        config["tasks"] = [task for task in config["tasks"] if task in partial["tasks"]]
    # params are rerun keys, compared by repr: sorted mappings, so the key order of a YAML file never reruns a job
    config.update(stable_params(config))
    _canonical_config_paths(config)

    task_sheet = read_catalogue(config["task_sheet"])
    validate_catalogue(task_sheet, _read_yaml(schemas["tasks"]))
    _check_task_ids(config, task_sheet)
    caps_line = _caps_default_line(config)
    if main_process and caps_line:
        log.info(caps_line)
    # The one reader of the model registry: the main process pins, once, every selected hub model without a pin
    # (written to the model_revisions lockfile); later runs and the jobs use exactly the locked commits. Unknown
    # model ids fail here; the models that cannot run are raised with the pre-flight, all at once.
    registry, lock_log, not_runnable_message = load_locked_registry(
        config["model_sheet"],
        _read_yaml(schemas["models"]),
        config["model_revisions"],
        config["models"],
        resolve=main_process,
        weights=config["model_weights"],
        weights_dir=config["execution"]["weights_dir"],
    )
    for line in lock_log:
        log.info(line)
    _check_exclusion_lists(config, registry)

    here: list[str] = []
    if main_process:
        _check_task_files(config, task_sheet)
        here = _preflight(config, registry, not_runnable_message, conda_deploys=conda_deploys)
        if here:
            log.warning(format_problems(here, here=True))

    settings = {
        m: stable_params(extraction_settings(registry, m, config["alphabet"], device=config["execution"]["device"]))
        for m in config["models"]
    }
    settings = {m: stable_params(s) for m, s in plan_views(config, settings).items()}  # views: the settings name them
    hashes = {m: extraction_hash(s) for m, s in settings.items()}

    moved: list[tuple[Path, Path]] = []
    if main_process:
        moved = set_aside_partial(
            (f"resources/embeddings/{m}/{hashes[m]}/{t}.h5" for m in config["models"] for t in config["tasks"]),
            hdf5_locking=config["execution"]["hdf5_locking"],
        )
        for old, new in moved:
            log.warning(f"{old} is not a complete embedding file (moved to {new.name}); it will be extracted again")

    return RunPlan(
        config=config,
        task_sheet=task_sheet,
        registry=registry,
        extraction_settings=settings,
        extraction_hashes=hashes,
        preflight_here=tuple(here),
        set_aside=tuple(moved),
        lock_log=tuple(lock_log),
        partial=partial,
        partial_file=partial_file,
    )
