# Validation of config and sheets, wildcard constraints, and every input/params function of the workflow.
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml
from snakemake.logging import logger
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

from geneb.run import resources as job_resources
from geneb.run.rerun import canonical_path, stable_params
from geneb.run.set_aside import set_aside_partial
from geneb.run import partial as partial_run
from geneb.core.logs import failure_lines
from geneb.registry.families import family as model_family
from geneb.registry.extraction import extraction_hash, extraction_settings
from geneb.registry.load import load_locked_registry
from geneb.registry.registry import RegistryError, model_spec
from geneb.registry.runnable import not_runnable
from geneb.run.preflight import PreflightError, format_problems, preflight
from geneb.probe.sampling import NESTED_DRAW_KEY
from geneb.core.schemas import schema_problems
from geneb.probe.shots import DRAW_KEYS as SHOT_DRAW_KEYS
from geneb.tables.scores import SCHEMA_VERSION as SCORE_SCHEMA_VERSION
from geneb.tasks.catalogue import CatalogueError, read_catalogue, source_string, task_row, validate_catalogue
from geneb.tasks.prepare import CATALOGUE_COLUMNS_USED
from geneb.tasks.sources import missing_splits, source_identity

#: when this run was planned: `report_job_errors` shows the one-line errors of logs written since then
RUN_STARTED = time.time()

# a config that breaks the schema: one short line per problem (key path and what is wrong), not jsonschema's
# dump of the whole schema; Snakemake's validate then fills in the defaults
_config_problems = schema_problems(config, yaml.safe_load(open(workflow.source_path("../schemas/config.schema.yaml"))))
if _config_problems:
    raise ValueError(
        f"the configuration does not match workflow/schemas/config.schema.yaml ({len(_config_problems)} problem(s)):\n"
        + "\n".join(f"  - {p}" for p in _config_problems)
    )
validate(config, "../schemas/config.schema.yaml")
# a partial run (geneb.run.partial: started by the onerror handler of a --keep-going run in which tasks failed)
# builds the tables from the tasks that completed; the failed ones are recorded, never silently missing
PARTIAL = partial_run.read_partial(os.environ.get(partial_run.PARTIAL_ENV))
if PARTIAL is not None:
    config["tasks"] = [task for task in config["tasks"] if task in PARTIAL["tasks"]]
# Params are rerun keys, compared by repr: sort every mapping, so that the key order of a YAML file never
# reruns a job (case B44; geneb.run.rerun.stable_params).
config.update(stable_params(config))
# One spelling per local path: the sheets are rule inputs, and `config/x` vs `/abs/config/x` would rerun them.
for _key in ("task_sheet", "model_sheet", "model_revisions"):
    config[_key] = canonical_path(config[_key])
config["model_weights"] = {_m: canonical_path(os.path.expanduser(_p)) for _m, _p in config["model_weights"].items()}
for _key in ("dir", "registry", "claims"):
    config["analysis"]["published"][_key] = canonical_path(config["analysis"]["published"][_key])

TASK_SHEET = read_catalogue(config["task_sheet"])
validate_catalogue(TASK_SHEET, yaml.safe_load(open(workflow.source_path("../schemas/tasks.schema.yaml"))))
for _task in config["tasks"]:
    task_row(TASK_SHEET, _task)  # unknown task ids fail here, with close matches
for _task in config["caps"].get("per_task") or {}:  # a misspelled id would cap nothing, silently
    try:
        task_row(TASK_SHEET, _task)
    except CatalogueError as _err:
        raise ValueError(f"caps.per_task: {_err}") from None
# caps.default applies to every configured task, added ones too: say so once, when the run is planned
_default_caps = {k: v for k, v in (config["caps"].get("default") or {}).items() if v is not None}
_by_default = [t for t in config["tasks"] if t not in (config["caps"].get("per_task") or {})]
if workflow.is_main_process and _default_caps and _by_default:
    logger.info(
        f"caps.default {_default_caps} applies to {len(_by_default)} task(s) without caps.per_task: "
        f"{', '.join(_by_default)} (keep one whole with caps.per_task.<task>: {{max_train: null, max_test: null}})"
    )
# the one reader of the model registry: pins applied, validated against the schema, then typed (ModelSpec).
# The process that plans the run first pins, once, every selected hub model without a pin (the hub's `main`,
# written to the model_revisions lockfile); later runs use exactly the locked commits. Unknown model ids fail
# here; every selected model that cannot run (what it needs: network for a pin, an adapter, weights from outside
# the hub) below, at once. The config's `model_weights` paths are merged in here too (geneb.registry.weights).
REGISTRY, _lock_log, _NOT_RUNNABLE = load_locked_registry(
    config["model_sheet"],
    yaml.safe_load(open(workflow.source_path("../schemas/models.schema.yaml"))),
    config["model_revisions"],
    config["models"],
    resolve=workflow.is_main_process,
    weights=config["model_weights"],
    weights_dir=config["execution"]["weights_dir"],
)
for _line in _lock_log:
    logger.info(_line)
# a misspelled id in an analysis exclusion list would silently exclude nothing: fail here too
for _where, _scale in (
    ("analysis.scale", config["analysis"]["scale"]),
    ("analysis.published.scale", config["analysis"]["published"].get("scale", {})),
):
    for _key, _items in (
        ("rho_exclusions", _scale.get("rho_exclusions") or []),
        ("in_domain.exclude_models", (_scale.get("in_domain") or {}).get("exclude_models") or []),
    ):
        for _item in _items:
            try:
                model_spec(REGISTRY, _item["model"])
            except RegistryError as _err:
                raise ValueError(f"{_where}.{_key}: {_err}") from None

# a task folder missing from a local mirror fails here, in a dry run too, not in its prepare job
if workflow.is_main_process:
    for _task in config["tasks"]:
        _source = source_string(task_row(TASK_SHEET, _task), config)
        _missing = missing_splits(_source, _task)
        if _missing:
            raise ValueError(
                f"task {_task!r}: no {'/'.join(_missing)} split ({{split}}.csv.gz or {{split}}.csv) under "
                f"{_source}/{_task}; add the task's files there or point task_source / GENEB_TASK_SOURCE at "
                "the mirror that has them (docs/adding-a-task.md)"
            )

# Pre-flight (geneb.run.preflight): before any job is submitted, every selected model must be able to run where its
# extraction will run (runnable entry: a pin, an adapter, its weights; the HF cache when offline; packages and
# transformers range in its env). Every problem is listed at once, each with its fix (the models that cannot
# run at all first, from load_locked_registry, then the others' env problems), and the run stops here: no job
# starts for a model that cannot run, so nothing is retried. Main process only, dry runs too. The problems of this interpreter on the
# conda route without --sdm conda (every job would run here) stop the run in `onstart`, before the first job:
# a dry run, which may plan a --sdm conda run elsewhere, lists them and plans on.
PREFLIGHT_HERE = []
if workflow.is_main_process:
    _blocked = not_runnable(REGISTRY, config["models"]) if _NOT_RUNNABLE else {}
    _problems, PREFLIGHT_HERE = preflight(
        REGISTRY,
        [m for m in config["models"] if m not in _blocked],
        env_route=config["execution"]["env_route"],
        conda_deploys=DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method,
        env_cache=config["execution"]["env_dir"],
    )
    if _NOT_RUNNABLE or _problems:
        _report = [format_problems(_problems + PREFLIGHT_HERE)] if _problems else []
        raise PreflightError("\n".join([_NOT_RUNNABLE, *_report] if _NOT_RUNNABLE else _report))
    if PREFLIGHT_HERE:
        logger.warning(format_problems(PREFLIGHT_HERE, here=True))


# The resolved, output-affecting extraction settings per model, and their hash (the cache folder name);
# `dtype: auto` is resolved for the run's device class here, so the hash says which dtype runs.
EXTRACTION_SETTINGS = {
    m: stable_params(extraction_settings(REGISTRY, m, config["alphabet"], device=config["execution"]["device"]))
    for m in config["models"]
}
EXTRACTION_HASH = {m: extraction_hash(s) for m, s in EXTRACTION_SETTINGS.items()}

# An embedding file that GENEB's reader would refuse (no `complete` attribute) is moved aside before the DAG
# is built, so Snakemake schedules its extraction again instead of trusting it (case B41). Main process only:
# jobs on cluster nodes parse this file too.
if workflow.is_main_process:
    for _old, _new in set_aside_partial(
        (f"resources/embeddings/{m}/{EXTRACTION_HASH[m]}/{t}.h5" for m in config["models"] for t in config["tasks"]),
        hdf5_locking=config["execution"]["hdf5_locking"],
    ):
        logger.warning(f"{_old} is not a complete embedding file (moved to {_new.name}); it will be extracted again")


wildcard_constraints:
    task="|".join(map(re.escape, config["tasks"])),
    model="|".join(map(re.escape, config["models"])),
    xhash="[0-9a-f]{12}",
    protocol="|".join(map(re.escape, config["protocols"])),
    split="train|test",


def report_job_errors():
    """The `onerror` handler: print the one-line GENEB error of every job of this run that failed in GENEB
    code (the last line of its log, geneb.core.logs), so it reaches the console also where job stderr does not
    (Slurm; the 2 s margin covers a shared file system's clock). Then, in a --keep-going run of the default
    target in which some tasks completed, build the tables, analyses and report from those (geneb.run.partial)."""
    errors = failure_lines(Path("logs").rglob("*.log"), RUN_STARTED - 2)
    for line in errors:
        logger.error(line)
    targets = [job.rule.name for job in workflow.dag.targetjobs]
    if PARTIAL is not None or not workflow.execution_settings.keep_going or targets != ["all"]:
        return
    failed_now = partial_run.tasks_failed_in_run(config["tasks"], "logs", RUN_STARTED - 2)
    # the jobs that make a task's results per model (its shot draws run for every task, blocked or not)
    started_now = [
        t
        for root in ("logs/extract_embeddings", "logs/fit_probes")
        for t in partial_run.tasks_started_in_run(config["tasks"], root, RUN_STARTED - 2)
    ]
    done, failed = partial_run.split_tasks(
        config["tasks"], task_probe_tables, failed_now, task_embedding_files, started_now
    )
    if not done or not failed:
        return
    errors = partial_run.task_errors(failed, "logs", RUN_STARTED - 2)
    record = {t: {"category": task_row(TASK_SHEET, t)["category"], "error": errors[t]} for t in failed}
    partial_run.write_failures(partial_run.FAILURES_FILE, done, record)
    logger.error(
        f"{len(failed)} task(s) failed ({', '.join(failed)}); building the tables, analyses and report from the "
        f"{len(done)} that completed (failed tasks listed in {partial_run.FAILURES_FILE}, scores.parquet, the "
        "leaderboard and the report); this run still ends with an error"
    )
    subprocess.run(
        partial_run.partial_command(sys.argv[1:]),
        cwd=workflow.workdir_init,
        env=partial_run.partial_env(partial_run.FAILURES_FILE),
        check=False,
    )
    for line in errors:  # once more, after the partial run's output, where the user looks last
        logger.error(line)


def preflight_onstart():
    """The `onstart` handler (real runs only, before the first job): stop the run when a model cannot run in this
    interpreter, where the conda route without --sdm conda runs every job (geneb.run.preflight)."""
    if PREFLIGHT_HERE:
        raise PreflightError(format_problems(PREFLIGHT_HERE))


def clear_failure_record():
    """The `onsuccess` handler: a run that built everything from every task leaves no failure record of an
    earlier partial run behind (a partial run's own record stays: its tables list the failed tasks)."""
    if PARTIAL is None:
        Path(partial_run.FAILURES_FILE).unlink(missing_ok=True)


# ---- tasks --------------------------------------------------------------------------------------------


#: the default task_checks (config schema): left out of the prepare_task rerun key
TASK_CHECK_DEFAULTS = {"single_class_test": "error"}


def task_params(wildcards):
    """Everything that decides a prepared task's content: the catalogue columns it uses, the source's content identity
    (file digests for a mirror folder, so an edited file reruns the task and a moved mirror with the same
    files does not; the pinned source string otherwise), alphabet policy and caps. Where the data is read
    from is resolved again in the job (config + environment), outside the rerun key."""
    row = task_row(TASK_SHEET, wildcards.task)
    caps = config["caps"]
    return stable_params(
        {
            "catalogue_row": {key: row.get(key, "") for key in CATALOGUE_COLUMNS_USED},
            "source_identity": source_identity(source_string(row, config), wildcards.task),
            "alphabet": config["alphabet"],
            "caps": {**caps["default"], **caps["per_task"].get(wildcards.task, {})},
            "cap_seed": caps["seed"],
            # only when not the default, so the rerun key of every task prepared before the key existed holds
            **({"task_checks": config["task_checks"]} if config["task_checks"] != TASK_CHECK_DEFAULTS else {}),
        }
    )


# ---- extraction ---------------------------------------------------------------------------------------


def embedding_file(wildcards):
    """The HDF5 cache of (wildcards.model, wildcards.task) under the model's current settings hash."""
    return f"resources/embeddings/{wildcards.model}/{EXTRACTION_HASH[wildcards.model]}/{wildcards.task}.h5"


def extraction_params(wildcards):
    """The model's resolved extraction settings; refuses a path whose hash is not the current one."""
    if EXTRACTION_HASH[wildcards.model] != wildcards.xhash:
        raise ValueError(
            f"embedding path for {wildcards.model} has settings hash {wildcards.xhash}, "
            f"current settings hash is {EXTRACTION_HASH[wildcards.model]}"
        )
    return EXTRACTION_SETTINGS[wildcards.model]


def extraction_env(wildcards):
    """The conda env file of the model's extraction, envs/<env>.yaml of its registry entry (`env:`, default
    geneb); None on the venv route (execution.env_route: venv), where geneb.extract.job runs the extraction
    with the model's venv instead."""
    if config["execution"]["env_route"] == "venv":
        return None
    return f"../../envs/{model_spec(REGISTRY, wildcards.model).env_name}.yaml"


def extraction_priority(wildcards):
    """Scheduling order of extraction jobs (never part of any output): task by task, and within a task the
    models in config order, so the jobs running at once are mostly of different models. Each model's jobs go
    through one model server that embeds one task at a time, so two jobs of one model running together would
    leave a core waiting (docs/job_resources.md, "One model load per node")."""
    models, tasks = config["models"], config["tasks"]
    rank = tasks.index(wildcards.task) * len(models) + models.index(wildcards.model)
    return len(models) * len(tasks) - rank


# ---- resources (portable: counts, MB, minutes; site values live in profiles/, docs/job_resources.md) ------------


def extraction_gpus(wildcards):
    """1 GPU for a torch model when execution.device is cuda/auto, else 0 (k-mer models, device cpu)."""
    uses_torch = model_family(EXTRACTION_SETTINGS[wildcards.model]["family"]).uses_torch
    return job_resources.extraction_gpus(uses_torch, config["execution"]["device"])


def extraction_mem_mb(wildcards, attempt):
    """Host memory of one extraction job: base + weights (registry `params`), doubled on each retry."""
    return job_resources.extraction_mem_mb(model_spec(REGISTRY, wildcards.model).params, attempt)


def extraction_runtime(wildcards, attempt):
    """Minutes of one extraction job, doubled on each retry."""
    return job_resources.extraction_runtime(attempt)


def probe_settings(wildcards):
    """The probe settings of wildcards.protocol (config probe.<protocol>): the fit_probes rerun key."""
    return config["probe"][wildcards.protocol]


def shot_draw_params(wildcards):
    """The part of the protocol's settings that decides the shot draws: the write_shot_indices rerun key."""
    settings = config["probe"][wildcards.protocol]
    params = {key: settings[key] for key in SHOT_DRAW_KEYS}
    if settings["draw"] == "nested":  # the nested draw's key rule: a shot file drawn under an older one is redrawn
        params["nested_draw_key"] = NESTED_DRAW_KEY
    return params


def probe_mem_mb(wildcards, attempt):
    """Memory of one probe job (all regimes and seeds of a protocol x model x task), doubled on each retry."""
    return job_resources.probe_mem_mb(attempt)


def probe_runtime(wildcards, attempt):
    """Minutes of one probe job, doubled on each retry."""
    return job_resources.probe_runtime(attempt)


# ---- aggregation and targets --------------------------------------------------------------------------


def task_probe_tables(task):
    """The probe tables of one task (every protocol and model): it completed when all exist."""
    return expand(
        "results/probes/{protocol}/{model}/{task}.parquet",
        protocol=config["protocols"],
        model=config["models"],
        task=task,
    )


def task_embedding_files(task):
    """The embedding files of one task (every model, current settings): its probes can run when all exist."""
    return [f"resources/embeddings/{m}/{EXTRACTION_HASH[m]}/{task}.h5" for m in config["models"]]


def failure_files(wildcards=None):
    """[the failures file] in a partial run (geneb.run.partial), else []: an input of aggregate_scores."""
    return [os.environ[partial_run.PARTIAL_ENV]] if PARTIAL is not None else []


def probe_tables(wildcards=None):
    """Every per-(protocol, model, task) probe table of this config."""
    return expand(
        "results/probes/{protocol}/{model}/{task}.parquet",
        protocol=config["protocols"],
        model=config["models"],
        task=config["tasks"],
    )


def report_config(wildcards=None):
    """The configuration shown in the report, without the execution knobs and the `model_weights` paths (they
    never change a result: the weights' content is in each model's settings hash; so they must not rerun the
    report either), every mapping sorted."""
    shown = {key: value for key, value in config.items() if key not in ("execution", "model_weights")}
    for key in ("tasks", "models", "protocols"):  # their order changes no result
        shown[key] = sorted(shown[key])
    return stable_params(shown)


def task_cards():
    """The task cards of every configured task (they record caps, which make a task not the paper's split)."""
    return [f"resources/tasks/{task}/card.json" for task in config["tasks"]]


def final_outputs():
    """The default targets of `snakemake`: the score table, the leaderboard, the heatmap and the report."""
    return [
        "results/tables/scores.parquet",
        "results/tables/leaderboard.parquet",
        "results/figures/heatmap.png",
        "results/report/geneb_report.html",
    ]


# ---- analyses, figures, report (issue 5; analysis rules in analysis.smk, figures.smk, report.smk) --------
# Tables, figures and captions come from the registries (geneb.analysis.registry, geneb.figures.registry); the
# protocol of the published results from geneb.analysis.published: no rule names one.

from geneb.analysis.outputs import analysis_tables
from geneb.analysis.published import PROTOCOL as PUBLISHED_PROTOCOL
from geneb.figures.registry import figure_names, figures
from geneb.report.captions import report_captions

#: the caption files of `report()` and the HTML report (workflow/report/*.rst), relative to the rule files
CAPTION_FOLDER = "../report"
CAPTION_DIR = Path(workflow.current_basedir.get_path_or_uri(secret_free=True)) / CAPTION_FOLDER

#: the published results' reference files (config analysis.published.dir)
PUBLISHED_FILES = {
    name: f"{config['analysis']['published']['dir']}/{file}"
    for name, file in (
        ("results", "per_task_results.tsv"),
        ("spec", "benchmark_spec.json"),
        ("models", "models.tsv"),
    )
}
#: the reference registry the published view takes pretraining domains from (config analysis.published.registry)
PUBLISHED_REGISTRY = config["analysis"]["published"]["registry"]


def prediction_tables(wildcards=None):
    """Every per-(protocol, model, task) prediction table of this config (the paired bootstraps read them)."""
    return expand(
        "results/predictions/{protocol}/{model}/{task}.parquet",
        protocol=config["protocols"],
        model=config["models"],
        task=config["tasks"],
    )


def submission_files():
    """One leaderboard submission file (schema 1.0) per configured model."""
    return expand("results/submissions/{model}.json", model=config["models"])


def analysis_table_files(pattern):
    """`pattern` (e.g. "results/tables/{name}.parquet") for every table of the analysis registry."""
    return expand(pattern, name=analysis_tables())


def figure_files(pattern):
    """`pattern` (e.g. "results/figures/{name}.pdf") for every figure of the figure registry."""
    return expand(pattern, name=figure_names())


def figure_reports(pattern, category):
    """{figure name: `pattern` with the name, flagged for `snakemake --report` with the figure's caption file
    and `category`} for every registered figure: the named outputs of a figures rule."""
    return {
        f.name: report(pattern.format(name=f.name), caption=f"{CAPTION_FOLDER}/{f.caption}", category=category)
        for f in figures()
    }


def caption_texts():
    """{caption file: text} of the captions the HTML report shows, read from workflow/report (a params of the
    report rules, so an edited caption rebuilds the report)."""
    return report_captions(CAPTION_DIR)
