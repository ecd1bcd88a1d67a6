# Validation of config and sheets, wildcard constraints, and every input/params function of the workflow.
import re

import yaml
from snakemake.utils import validate

from geneb.models.registry import extraction_hash, extraction_settings, load_registry, model_spec
from geneb.tasks.catalogue import read_catalogue, source_string, task_row, validate_catalogue


validate(config, "../schemas/config.schema.yaml")

TASK_SHEET = read_catalogue(config["task_sheet"])
validate_catalogue(TASK_SHEET, yaml.safe_load(open(workflow.source_path("../schemas/tasks.schema.yaml"))))
for _task in config["tasks"]:
    task_row(TASK_SHEET, _task)  # unknown task ids fail here, with close matches

REGISTRY = load_registry(config["model_sheet"])
validate(REGISTRY, "../schemas/models.schema.yaml")
for _model in config["models"]:
    model_spec(REGISTRY, _model)  # unknown model ids fail here, with close matches

# The resolved, output-affecting extraction settings per model, and their hash (the cache folder name).
EXTRACTION_SETTINGS = {m: extraction_settings(REGISTRY, m, config["alphabet"]) for m in config["models"]}
EXTRACTION_HASH = {m: extraction_hash(s) for m, s in EXTRACTION_SETTINGS.items()}


wildcard_constraints:
    task="|".join(map(re.escape, config["tasks"])),
    model="|".join(map(re.escape, config["models"])),
    xhash="[0-9a-f]{12}",
    protocol="|".join(map(re.escape, config["protocols"])),
    split="train|test",


# ---- tasks --------------------------------------------------------------------------------------------


def task_params(wildcards):
    """Everything that decides a prepared task's content: catalogue row, source string, policy, caps."""
    row = task_row(TASK_SHEET, wildcards.task)
    caps = config["caps"]
    return {
        "catalogue_row": row,
        "source": source_string(row, config),
        "alphabet": config["alphabet"],
        "caps": {**caps["default"], **caps["per_task"].get(wildcards.task, {})},
        "cap_seed": caps["seed"],
    }


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


# ---- aggregation and targets --------------------------------------------------------------------------


def probe_tables(wildcards=None):
    """Every per-(protocol, model, task) probe table of this config."""
    return expand(
        "results/probes/{protocol}/{model}/{task}.parquet",
        protocol=config["protocols"],
        model=config["models"],
        task=config["tasks"],
    )


def final_outputs():
    """The default targets of `snakemake`: the score table, the leaderboard and the heatmap."""
    return [
        "results/tables/scores.parquet",
    ]
