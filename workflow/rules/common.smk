# The run plan (geneb.run.plan: config validated, task and model ids checked, registry pinned, pre-flight, settings
# hashes), wildcard constraints, and every input/params function of the rules (their logic is geneb.run's).
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from geneb.analysis.registry import analysis_tables
from geneb.figures.registry import figure_names, figures
from geneb.report.render import report_captions
from geneb.run import handlers
from geneb.run import layout as job_resources
from geneb.run.plan import plan_workflow
from geneb.tables.scores import PUBLISHED_PROTOCOL
from geneb.tables.scores import SCHEMA_VERSION as SCORE_SCHEMA_VERSION

RUN_STARTED = time.time()  # `report_job_errors` shows the one-line errors of logs written since then

SCHEMAS = {n: workflow.source_path(f"../schemas/{n}.schema.yaml") for n in ("config", "tasks", "models")}
# every parse-time decision, in one tested function; a mistake in the config is shown as its message. The config
# files Snakemake was given are composed again by GENEB (geneb.run.overlays: overlays' models and tasks joined, not
# replaced), so `config` below is the plan's, not Snakemake's merge
try:
    PLAN = plan_workflow(workflow, SCHEMAS, log=logger, no_job_run=handlers.dry_run_requested(sys.argv[1:]))
except ValueError as err:
    raise WorkflowError(str(err)) from err
config.clear()
config.update(PLAN.config)  # the validated config, defaults filled, is what the rules and scripts read
CAPTION_FOLDER = "../report"  # the captions of `report()` and the HTML report, relative to the rule files
#: {caption file: text} of workflow/report (a params of the report rules: an edited caption rebuilds it)
CAPTION_TEXTS = report_captions(Path(workflow.current_basedir.get_path_or_uri(secret_free=True)) / CAPTION_FOLDER)
PUBLISHED_FILES = PLAN.published_files()  # the published results' reference files (analysis.published.dir)
#: the reference registry the published view takes pretraining domains from (config analysis.published.registry)
PUBLISHED_REGISTRY = config["analysis"]["published"]["registry"]


wildcard_constraints:
    **PLAN.wildcard_constraints(),


# ---- input, params and resources functions (the logic is RunPlan's, geneb.run.plan) -----------------------------


def task_params(wildcards):
    return PLAN.task_params(wildcards.task, wildcards.thash)


def audit_settings(wildcards):
    return PLAN.layout.audit_settings(wildcards.ahash)


def probe_inputs(wildcards):
    return PLAN.layout.probe_inputs(wildcards.protocol, wildcards.model, wildcards.task)


def extraction_params(wildcards):
    return PLAN.extraction_params(wildcards.model, wildcards.xhash)


def extraction_inputs(wildcards):
    return PLAN.extraction_inputs(wildcards.model, wildcards.task)


def extraction_env(wildcards):
    return PLAN.extraction_env(wildcards.model)


def extraction_priority(wildcards):
    return PLAN.extraction_priority(wildcards.model, wildcards.task)


def extraction_gpus(wildcards):
    return PLAN.resources.extraction_gpus(wildcards.model)


def extraction_mem_mb(wildcards, attempt):
    return PLAN.resources.extraction_mem_mb(wildcards.model, attempt)


def extraction_partition(wildcards):
    return PLAN.resources.extraction_partition(wildcards.model)


def extraction_gres(wildcards):
    return PLAN.resources.extraction_gres(wildcards.model)


def extraction_runtime(wildcards, attempt):
    return job_resources.extraction_runtime(attempt)


def probe_settings(wildcards):
    return PLAN.probe_settings(wildcards.protocol)


def probe_views(wildcards):
    return PLAN.probe_views(wildcards.protocol, wildcards.model)


def shot_draw_params(wildcards):
    return PLAN.shot_draw_params(wildcards.protocol, wildcards.dhash)


def probe_mem_mb(wildcards, attempt):
    return job_resources.probe_mem_mb(attempt)


def probe_runtime(wildcards, attempt):
    return job_resources.probe_runtime(attempt)


def probe_tables(wildcards=None):
    return PLAN.probe_tables()


def prediction_tables(wildcards=None):
    return PLAN.probe_tables(kind="predictions")


def failure_files(wildcards=None):
    return PLAN.failure_files()


def report_config(wildcards=None):
    return PLAN.report_config()


def resource_files(wildcards=None):
    return PLAN.layout.resource_files()


def embedding_files(wildcards=None):
    return PLAN.layout.embedding_files()


def finetune_inputs(wildcards):
    return PLAN.finetune.inputs(wildcards.model, wildcards.task)


def finetune_params(wildcards):
    return PLAN.finetune.params(wildcards.model)


def finetune_mem_mb(wildcards, attempt):
    return PLAN.finetune.mem_mb(wildcards.model, attempt)


def finetune_runtime(wildcards, attempt):
    return PLAN.finetune.runtime(wildcards.model, attempt)


def zeroshot_task_params(wildcards):
    return PLAN.zeroshot.task_params(wildcards.zstask, wildcards.zthash)


def zeroshot_score_params(wildcards):
    return PLAN.zeroshot.score_params(wildcards.model, wildcards.shash)


def zeroshot_baseline_params(wildcards):
    return PLAN.zeroshot.baseline_params(wildcards.zstask, wildcards.bhash)


def zeroshot_baseline_inputs(wildcards):
    return PLAN.zeroshot.baseline_inputs(wildcards.zstask)


def zeroshot_table_inputs(wildcards=None):
    return PLAN.zeroshot.table_inputs()


def zeroshot_table_params(wildcards=None):
    return PLAN.zeroshot.table_params()


def zeroshot_report_inputs(wildcards=None):
    return PLAN.zeroshot.report_inputs()


def final_outputs():
    """The default targets, and every file planning set aside (geneb.run.integrity): this run builds it again."""
    return PLAN.final_outputs() + PLAN.trusted.rebuild_targets()


def results(path):
    """`path` under the run's results_dir (config `results_dir`; tables, figures, report), e.g. "tables/x.parquet"."""
    return PLAN.results_path(path)


def analysis_table_files(pattern):
    """`pattern` (e.g. results("tables/{name}.parquet")) for every table of the analysis registry."""
    return expand(pattern, name=analysis_tables())


def figure_files(pattern):
    """`pattern` (e.g. results("figures/{name}.pdf")) for every figure of the figure registry."""
    return expand(pattern, name=figure_names())


def figure_reports(pattern, category):
    """{figure name: `pattern` with the name, a report() output with its caption and `category`} per figure."""
    return {
        f.name: report(pattern.format(name=f.name), caption=f"{CAPTION_FOLDER}/{f.caption}", category=category)
        for f in figures()
    }
