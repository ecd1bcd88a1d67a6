"""The run plan: everything the workflow decides when Snakemake parses it, in one function, without Snakemake.

`plan_run` takes the configuration of the run (its config files composed by `geneb.run.overlays`: overlays' models and
tasks joined, `--config` applied; `plan_workflow` composes the files Snakemake was given) and returns a
`RunPlan`: the validated config with the schema's defaults filled in, the task catalogue, the model registry with
its pins, the extraction settings and settings hash of every selected model, and what planning did on the way
(lockfile lines, pre-flight warnings, partial embedding files moved aside). Every mistake in the config stops here,
before any job, with one message naming it. workflow/rules/common.smk calls it once and hands its parts to the
rules; the input and params functions of the rules are methods of the plan and of its parts, so they are tested
here too.

The plan holds its parts as objects, each in the module of its stage and each reading of the plan only what its
Protocol names: `layout` (the resources/ paths and their hashes, `geneb.run.layout.ResourceLayout`), `resources`
(the scheduler resources of extraction jobs, `geneb.run.layout.ExtractionResources`), `zeroshot` (the zero-shot
stage, `geneb.zeroshot.plan.ZeroShotPlan`), `finetune` (the finetune-lora protocol,
`geneb.finetune.plan.FineTunePlan`) and `trusted` (the files a later step trusts, `geneb.run.integrity.TrustedFiles`).
What stays on the plan itself: the settings and the rerun keys the parts hash (`task_params`, `shot_draw_params`),
the extraction and probe params, and the run's targets.

Planning is torch-free (tests/run/test_torch_free.py): Snakemake parses the workflow in every job process too.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

import geneb.run.partial as partial_run
from geneb.core.provenance import check_hash, params_hash, stable_params
from geneb.finetune.plan import FineTunePlan
from geneb.probe.shots import DRAW_KEYS as SHOT_DRAW_KEYS
from geneb.probe.shots import NESTED_DRAW_KEY
from geneb.registry.families import with_twins
from geneb.registry.load import extraction_hash, extraction_settings
from geneb.registry.python_entry import PRECOMPUTED, precomputed_inputs
from geneb.registry.registry import Registry, model_spec
from geneb.registry.spec import model_depth
from geneb.run.checks import (
    canonical_config_paths,
    caps_default_line,
    check_config,
    check_exclusion_lists,
    check_task_ids,
    config_source,
    default_schema_files,
    format_problems,
    load_run_registry,
    plan_views,
    preflight_or_stop,
    probed_views,
    read_yaml,
    task_prepared,
)
from geneb.run.integrity import BadFile, TrustedFiles, check_before_dag
from geneb.run.layout import ExtractionResources, ResourceLayout, report_config
from geneb.run.overlays import Composition, workflow_composition
from geneb.tasks.catalogue import lock_identity, read_catalogue, read_lock, source_string, task_row, validate_catalogue
from geneb.tasks.prepare import CATALOGUE_COLUMNS_USED
from geneb.tasks.sources import source_identity
from geneb.zeroshot.plan import ZeroShotPlan

#: the default task_checks (config schema): left out of the prepare_task rerun key
_TASK_CHECK_DEFAULTS = {"conflicting_labels": "keep", "no_base_rows": "keep", "single_class_test": "error"}

#: the default targets of `snakemake`, under the run's `results_dir`: the score table, the leaderboard, the
#: measured cost table (geneb.tables.cost) and its quality-versus-cost front (geneb.analysis.pareto), the heatmap
#: and the report (`RunPlan.final_outputs`)
_FINAL_OUTPUTS = (
    "tables/scores.parquet",
    "tables/leaderboard.parquet",
    "tables/cost.parquet",
    "tables/pareto.parquet",
    "figures/heatmap.png",
    "report/geneb_report.html",
)

#: the published results' reference files, {name: file under config analysis.published.dir}
_PUBLISHED_FILE_NAMES = {
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
    """What `plan_run` decided for one run, and its parts (`layout`, `resources`, `zeroshot`, `finetune`, `trusted`:
    the module docstring), each built once per plan when first used.

    config: the validated configuration, schema defaults filled, every mapping sorted (`stable_params`), local
    paths in one spelling (`canonical_path`), `tasks` restricted to the completed ones in a partial run.
    task_sheet: the task catalogue (one row per task id, `geneb.tasks.catalogue`). registry: the model registry
    with the lockfile's pins and the config's `model_weights` applied. extraction_settings / extraction_hashes:
    {model: the resolved output-affecting extraction settings (the extraction rerun key)} and {model: their
    12-hex hash, the embedding cache folder}. preflight_here: the pre-flight problems of this interpreter on the
    conda route without --sdm conda (a real run stops on them in `onstart`; a dry run plans on). set_aside:
    (old, new) paths of the partial embedding files moved aside. lock_log: the lockfile lines (models pinned now
    or run at locked commits). partial: the failures file of a partial run (`geneb.run.partial`), None otherwise;
    partial_file: its path. task_lock: the task lock's entries as planned (`geneb.tasks.catalogue.read_lock`).
    composition: how the config files were composed (`geneb.run.overlays.Composition`: which file added which
    model, task and protocol), None for a config given as one mapping.
    """

    config: dict[str, Any]
    task_sheet: pd.DataFrame
    registry: Registry
    extraction_settings: Mapping[str, dict[str, Any]]
    extraction_hashes: Mapping[str, str]
    preflight_here: tuple[str, ...] = ()
    set_aside: tuple[tuple[Path, Path], ...] = ()
    bad_files: tuple[BadFile, ...] = ()
    lock_log: tuple[str, ...] = ()
    partial: dict[str, Any] | None = None
    partial_file: str | None = None
    task_lock: Mapping[str, Any] = field(default_factory=dict)
    composition: Composition | None = None
    #: task_params per task, computed once per process (a mirror folder's files are hashed for it)
    _task_params: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        """`FineTunePlan.check_config` whenever a plan with extraction settings is made (`plan_run`)."""
        if self.extraction_settings:
            self.finetune.check_config()

    # ---- the parts -------------------------------------------------------------------------------------------

    @cached_property
    def layout(self) -> ResourceLayout:
        """The resources/ paths of the run: prepared tasks, audits, shot draws, embeddings."""
        return ResourceLayout(self)

    @cached_property
    def resources(self) -> ExtractionResources:
        """What each model's extraction jobs ask of the scheduler (fine-tune and zero-shot jobs ask the same GPU)."""
        return ExtractionResources(self)

    @cached_property
    def zeroshot(self) -> ZeroShotPlan:
        """The zero-shot stage: its tasks, models, scorers and paths ([] of everything without one)."""
        return ZeroShotPlan(self)

    @cached_property
    def finetune(self) -> FineTunePlan:
        """The finetune-lora protocol: the cells it covers, its jobs' inputs, rerun keys and resources."""
        return FineTunePlan(self)

    @cached_property
    def trusted(self) -> TrustedFiles:
        """The files of the run a later step trusts (checked by content before the DAG is built)."""
        return TrustedFiles(self)

    @property
    def tasks(self) -> list[str]:
        """The configured task ids, in config order."""
        return list(self.config["tasks"])

    @property
    def models(self) -> list[str]:
        """The configured model ids, in config order (`models:` then the `models_extra:` not already in it)."""
        return list(self.config["models"])

    @property
    def results_dir(self) -> str:
        """The folder this run writes its tables, figures and report to (config `results_dir`, default results)."""
        return str(self.config["results_dir"])

    def results_path(self, path: str) -> str:
        """`path` (relative, e.g. "tables/scores.parquet", wildcards allowed) under the run's results_dir."""
        return f"{self.results_dir}/{path}"

    def final_outputs(self) -> list[str]:
        """The default targets (FINAL_OUTPUTS) under the run's results_dir, and the zero-shot stage's when configured."""
        return [self.results_path(p) for p in _FINAL_OUTPUTS] + self.zeroshot.outputs()

    def failures_file(self) -> str:
        """Where a partial run's failed tasks are recorded (`geneb.run.partial.FAILURES_FILE` under results_dir)."""
        return self.results_path(partial_run.FAILURES_FILE)

    # ---- tasks -----------------------------------------------------------------------------------------------

    def task_params(self, task: str, thash: str | None = None) -> dict[str, Any]:
        """Everything that decides a prepared task's content (the prepare_task rerun key, and `layout.task_hash` its
        folder): the catalogue columns it uses, the source's content identity (file digests for a mirror folder, so
        an edited file reruns the task and a moved mirror with the same files does not; the pinned source string
        otherwise, plus the task lock's generation once re-locked to new data: `geneb.tasks.catalogue.lock_identity`),
        alphabet policy and caps. Where the data is read from is resolved again in the job (config +
        environment), outside the key. thash: the `{thash}` of the path asking (ValueError when it is not this
        config's). Raises CatalogueError for a task not in the catalogue."""
        if task not in self._task_params:
            row = task_row(self.task_sheet, task)
            caps = self.config["caps"]
            task_checks = self.config["task_checks"]
            self._task_params[task] = stable_params(
                {
                    "catalogue_row": {key: row.get(key, "") for key in CATALOGUE_COLUMNS_USED},
                    "source_identity": lock_identity(
                        source_identity(source_string(row, self.config), task), self.task_lock.get(task)
                    ),
                    "alphabet": self.config["alphabet"],
                    "caps": {**caps["default"], **caps["per_task"].get(task, {})},
                    "cap_seed": caps["seed"],
                    # only when not the default, so the rerun key of every task prepared before the key existed holds
                    **({"task_checks": task_checks} if task_checks != _TASK_CHECK_DEFAULTS else {}),
                }
            )
        params = self._task_params[task]
        if thash is not None:
            check_hash(f"task {task}", thash, params_hash(params))
        return params

    # ---- extraction ------------------------------------------------------------------------------------------

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
        running together would leave a core waiting (docs/hpc.md, "One model load per node")."""
        models, tasks = self.models, self.tasks
        rank = tasks.index(task) * len(models) + models.index(model)
        return len(models) * len(tasks) - rank

    def probe_views(self, protocol: str, model: str) -> dict[str, Any]:
        """The fit_probes param of (protocol, model): {"n_layers": the model's block count when known while
        planning, else None (`registry.views.model_depth`; the score rows of the registry's view name its absolute
        layer)}, plus {"views": [view id]} when `views.protocols` leaves `protocol` with the registry view only
        (`run.views.probed_views`)."""
        settings = self.extraction_settings[model]
        views = probed_views(self.config, settings, protocol)
        return {"n_layers": model_depth(settings), **({"views": views} if views is not None else {})}

    def extraction_inputs(self, model: str, task: str) -> list[str]:
        """Files an extraction job reads besides the task: a precomputed model's vectors of the task (a changed
        file reruns that task's job and its probes), else none."""
        settings = self.extraction_settings[model]
        return precomputed_inputs(settings, task) if settings["family"] == PRECOMPUTED else []

    # ---- probes ----------------------------------------------------------------------------------------------

    def probe_settings(self, protocol: str) -> dict[str, Any]:
        """The probe settings of `protocol` (config probe.<protocol>): the fit_probes rerun key."""
        return self.config["probe"][protocol]

    def shot_draw_params(self, protocol: str, dhash: str | None = None) -> dict[str, Any]:
        """The part of the protocol's settings that decides the shot draws: the write_shot_indices rerun key.
        dhash: the `{dhash}` of the path asking (ValueError when it is not this config's)."""
        settings = self.probe_settings(protocol)
        params = {key: settings[key] for key in SHOT_DRAW_KEYS}
        if settings["draw"] == "nested":  # the nested draw's key rule: a shot file drawn under an older one is redrawn
            params["nested_draw_key"] = NESTED_DRAW_KEY
        if dhash is not None:
            check_hash(f"protocol {protocol} draws", dhash, params_hash(params))
        return params

    def probe_tables(self, tasks: list[str] | None = None, *, kind: str = "probes") -> list[str]:
        """Every results/<kind>/<protocol>/<model>/<task>.parquet of `tasks` (default: every configured task),
        protocols outermost and tasks innermost (Snakemake's `expand` order). kind: probes (score tables) or
        predictions."""
        # finetune-lora: the fine-tunable models only
        every = self.finetune.protocol_cells(self.tasks if tasks is None else tasks)
        combos = partial_run.kept_cells(every, self.partial)  # a partial run's failed (model, task) cells left out
        return [self.results_path(f"{kind}/{protocol}/{model}/{task}.parquet") for protocol, model, task in combos]

    # ---- aggregation, analyses and the report ----------------------------------------------------------------

    def failure_files(self) -> list[str]:
        """[the failures file] in a partial run (geneb.run.partial), else []: an input of aggregate_scores."""
        return [self.partial_file] if self.partial is not None and self.partial_file else []

    def report_config(self) -> dict[str, Any]:
        """The configuration shown in the report (`geneb.run.layout.report_config` of the validated config)."""
        return report_config(self.config)

    def published_files(self) -> dict[str, str]:
        """{name: path} of the published results' reference files (config analysis.published.dir)."""
        folder = self.config["analysis"]["published"]["dir"]
        return {name: f"{folder}/{file}" for name, file in _PUBLISHED_FILE_NAMES.items()}

    def submission_files(self) -> list[str]:
        """One leaderboard submission file (schema 1.0) per configured model."""
        return [self.results_path(f"submissions/{model}.json") for model in self.models]

    def wildcard_constraints(self) -> dict[str, str]:
        """The workflow's wildcard constraints: the config's task, model and probing-protocol ids (finetune-lora's
        tables come from rule finetune_lora), its zero-shot tasks ("(?!)", nothing, when there are none), the
        splits and the 12-hex settings hashes."""
        c = self.config

        def one_of(ids: Sequence[str]) -> str:
            return "|".join(map(re.escape, ids))

        hashes = dict.fromkeys(("xhash", "thash", "dhash", "ahash", "zthash", "shash", "bhash"), "[0-9a-f]{12}")
        return {
            "task": one_of(c["tasks"]),
            "model": one_of(c["models"]),
            "protocol": one_of([p for p in c["protocols"] if p != "finetune-lora"]),
            "split": "train|test",
            "zstask": one_of(c["zeroshot"]["tasks"]) or "(?!)",
            **hashes,
        }

    def coverage_notes(self) -> dict[str, dict[str, str]]:
        """{protocol: {model: reason}} of the models a protocol of the run skips ({} when none skips one)."""
        notes = self.finetune.coverage()
        return {"finetune-lora": notes} if notes else {}


def plan_run(
    config: Mapping[str, Any],
    *,
    schema_files: Mapping[str, str | os.PathLike[str]] | None = None,
    main_process: bool,
    conda_deploys: bool,
    partial_file: str | None,
    log: PlanLog,
    dry_run: bool = False,
    config_files: Sequence[str] = (),
    composition: Composition | None = None,
) -> RunPlan:
    """Plan one run of the workflow from `config` (not changed: the plan holds a copy).

    schema_files: {"config" | "tasks" | "models": the path of that JSON schema}; default: workflow/schemas/ of this
    checkout (the workflow passes Snakemake's copies, `workflow.source_path`); config_files: the files it was read
    from; composition: how they were composed (`geneb.run.overlays.compose`; `config` is its config): the plan keeps
    it, and an unknown model is named with the file that added it. The caller logs the composition's lines.

    In order, each step stopping the run with its own message: the config against the config schema (every problem
    listed, then the defaults filled in); a partial run's task list (`partial_file`, $GENEB_PARTIAL_RUN); mappings
    sorted and local paths in one spelling (stable rerun keys); the task catalogue against the tasks schema and
    every task id (configured and in caps.per_task) in it; the registry (models schema) with pins, every selected
    hub model without one pinned first in the main process; the model ids of the analysis exclusion lists; then, in
    the main process only (Snakemake parses the workflow in every job too): the pre-flight of every selected model
    (`conda_deploys`: Snakemake deploys conda envs, --sdm conda) and of every task's source (a local mirror's split
    files; a remote source, for tasks not prepared yet, reachable: geneb.run.checks), reported together. Then
    the extraction settings and hash per model (`dtype: auto` resolved for the run's device class), and, in the main
    process, every configured embedding file that is not complete moved aside so Snakemake schedules it again (a
    failed job's partial output).
    Last, the plan's trusted files (`TrustedFiles.files`) are checked by content and the bad ones moved aside, to be
    rebuilt in this run (`geneb.run.integrity.check_before_dag`; dry_run, `snakemake -n`: nothing moved).

    log: gets the caps.default line and the lockfile lines (info), the pre-flight problems of this interpreter and
    each file moved aside (warning), as they happen.

    Raises ValueError (config, task ids, caps.per_task, exclusion lists; the catalogue's CatalogueError and the
    registry's RegistryError are ValueErrors too) and PreflightError (a selected model cannot run, a task's source
    cannot give it), each naming what to fix.
    """
    schemas = {name: Path(path) for name, path in (schema_files or default_schema_files()).items()}
    config = check_config(copy.deepcopy(dict(config)), read_yaml(schemas["config"]))
    # an overlay's `models:` replaces the list; `models_extra:` adds to it (a model listed twice is added once)
    config["models"] = [*config["models"], *(m for m in config["models_extra"] if m not in config["models"])]
    # a partial run (a --keep-going run with failed tasks) tables the tasks that completed; the failed are recorded
    partial = partial_run.read_partial(partial_file)
    if partial is not None:
        config["tasks"] = [task for task in config["tasks"] if task in partial["tasks"]]
    # params are rerun keys, compared by repr: sorted mappings, so the key order of a YAML file never reruns a job
    config.update(stable_params(config))
    canonical_config_paths(config)

    task_sheet = read_catalogue(config["task_sheet"])
    validate_catalogue(task_sheet, read_yaml(schemas["tasks"]))
    check_task_ids(config, task_sheet)
    caps_line = caps_default_line(config)
    if main_process and caps_line:
        log.info(caps_line)
    # the one reader of the registry: the main process pins unpinned hub models once (lockfile); jobs use the pins
    if composition is not None:
        config_files = composition.files
    source = config_source(config_files)  # named by an error about a setting
    registry, lock_log, not_runnable_message = load_run_registry(
        config,
        read_yaml(schemas["models"]),
        resolve=main_process,
        source=source,
        entries={**composition.entries("models"), **composition.entries("models_extra")} if composition else None,
    )
    if config["twins"]:  # a twin reads its model's configuration at its model's pin: nothing more to pin or check
        config["models"], twin_lines = with_twins(config["models"], registry.raw["models"])
        lock_log = [*lock_log, *twin_lines]
    for line in lock_log:
        log.info(line)
    check_exclusion_lists(config, registry, source)

    here: list[str] = []
    task_params: dict[str, dict[str, Any]] = {}  # each task's params computed once (a mirror's files are hashed)
    task_lock = read_lock(config["task_lock"])  # part of each task's params: read before anything derives a path
    if main_process:
        tasks_only = RunPlan(
            config=config,
            task_sheet=task_sheet,
            registry=registry,
            extraction_settings={},
            extraction_hashes={},
            task_lock=task_lock,
            _task_params=task_params,
        )
        here = preflight_or_stop(
            config,
            registry,
            not_runnable_message,
            conda_deploys=conda_deploys,
            task_sheet=task_sheet,
            # prepared under this config (else prepare_task says)
            prepared=lambda task: task_prepared(tasks_only.layout.task_dir(task)),
        )
        if here:
            log.warning(format_problems(here, here=True))

    settings = {
        m: stable_params(extraction_settings(registry, m, config["alphabet"], device=config["execution"]["device"]))
        for m in config["models"]
    }
    settings = {m: stable_params(s) for m, s in plan_views(config, settings).items()}  # views: the settings name them
    hashes = {m: extraction_hash(s) for m, s in settings.items()}

    plan = RunPlan(
        config=config,
        task_sheet=task_sheet,
        registry=registry,
        extraction_settings=settings,
        extraction_hashes=hashes,
        preflight_here=tuple(here),
        lock_log=tuple(lock_log),
        partial=partial,
        partial_file=partial_file,
        task_lock=task_lock,
        composition=composition,
        _task_params=task_params,
    )
    plan.zeroshot.check_config()
    if not main_process:
        return plan
    bad, _ = check_before_dag(
        plan.trusted.files(), log=log, dry_run=dry_run, hdf5_locking=config["execution"]["hdf5_locking"]
    )
    aside = tuple((b.path, b.aside) for b in bad if b.aside is not None)
    return dataclasses.replace(plan, set_aside=aside, bad_files=tuple(bad))


def plan_workflow(
    workflow: Any,
    schema_files: Mapping[str, str | os.PathLike[str]],
    *,
    log: PlanLog,
    no_job_run: bool,
) -> RunPlan:
    """The plan of the Snakemake `workflow` being parsed (workflow/rules/common.smk): `plan_run` of the workflow's
    config files composed by GENEB (`geneb.run.overlays.workflow_composition`: the files Snakemake was given, read
    again, overlays' lists joined instead of replaced; its lines logged in the main process, before planning),
    with the workflow's copies of the schemas (`schema_files`, `workflow.source_path` in the rule file), its process
    and deployment method, and the partial run's task list ($GENEB_PARTIAL_RUN). no_job_run: the command line runs
    no job (`handlers.dry_run_requested`); -n counts too (Snakemake sets `workflow.dryrun` only when execution
    starts, after parsing; its output settings have -n already). Raises ValueError for a mistake in the config
    (common.smk raises it again as Snakemake's WorkflowError, from the rule file: shown as its message, not under a
    stack of GENEB's frames)."""
    from snakemake.settings.types import DeploymentMethod

    composition = workflow_composition(workflow)
    if workflow.is_main_process:
        composition.log(log)
    return plan_run(
        composition.config,
        composition=composition,
        schema_files=schema_files,
        main_process=workflow.is_main_process,
        conda_deploys=DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method,
        partial_file=os.environ.get(partial_run.PARTIAL_ENV),
        log=log,
        dry_run=bool(workflow.output_settings and workflow.output_settings.dryrun) or no_job_run,
    )
