# GENEB: frozen embeddings -> logistic-regression probes -> MCC tables, figures and report.
# Rules live in workflow/rules (one file per stage); logic in the geneb package (src/geneb).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/tasks.smk"
include: "workflow/rules/extract.smk"
include: "workflow/rules/probe.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/zeroshot.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/site.smk"


onstart:
    handlers.stop_on_preflight_here(PLAN)


onerror:
    handlers.on_error(PLAN, workflow, run_started=RUN_STARTED, log=logger)


onsuccess:
    handlers.clear_failure_record(PLAN)


rule all:
    default_target: True
    input:
        final_outputs(),
