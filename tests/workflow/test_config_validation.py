"""Config mistakes stop the workflow before any job: ids that would escape their folders, misspelled task ids
in per-task caps."""

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from workflow_support import dry_run


@pytest.mark.parametrize("bad", ["..", ".", ".hidden", "a/b", "a b"])
def test_ids_that_are_not_plain_names_are_refused(repo, bad):
    """`..` as a model id wrote resources/<hash>/t.h5 and results/probes/t.parquet (one file for two protocols)."""
    schema = str(repo / "workflow" / "schemas" / "config.schema.yaml")
    for key in ("models", "tasks"):
        cfg = {"tasks": ["t1"], "models": ["m1"], key: [bad]}
        with pytest.raises(WorkflowError):
            validate(cfg, schema)
    registry = {"schema_version": 1, "models": {bad: {}}}
    with pytest.raises(WorkflowError):
        validate(registry, str(repo / "workflow" / "schemas" / "models.schema.yaml"))
    validate({"tasks": ["t.1"], "models": ["m-1.5"]}, schema)  # dots inside a name are fine


def test_execution_batch_tokens_is_by_device_by_default_a_positive_integer_null_or_auto(repo):
    schema = str(repo / "workflow" / "schemas" / "config.schema.yaml")
    cfg = {"tasks": ["t1"], "models": ["m1"]}
    validate(cfg, schema)
    # by_device by default: a fixed budget per device class (a measured plan, auto, depends on the machine's timing)
    assert cfg["execution"]["batch_tokens"] == "by_device" and cfg["execution"]["batch_size"] == 64
    for good in (65536, None, "auto", "by_device"):
        validate({"tasks": ["t1"], "models": ["m1"], "execution": {"batch_tokens": good}}, schema)
    for bad in (0, -5, "64k", 1.5, "Auto", "cpu"):
        with pytest.raises(WorkflowError):
            validate({"tasks": ["t1"], "models": ["m1"], "execution": {"batch_tokens": bad}}, schema)


def test_a_misspelled_task_in_per_task_caps_stops_the_workflow(repo, tmp_path):
    """Planned in process (`dry_run`: `snakemake -n --configfile c.yaml`): the refusal is the workflow's
    WorkflowError, whose message is what the console shows."""
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    cfg["caps"]["per_task"] = {"gue_prom_core_tatta": {"max_train": 10}}
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        cfg[key] = str(repo / cfg[key])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(WorkflowError) as err:
        dry_run(tmp_path, configfiles=("c.yaml",))
    out = str(err.value)
    assert "caps.per_task: task 'gue_prom_core_tatta' is not in the catalogue " in out
    assert "config/tasks.tsv (the config's task_sheet)" in out and "did you mean ['gue_prom_core_tata'" in out


def test_a_missing_task_folder_is_caught_by_a_dry_run(repo, tmp_path, shared):
    """A catalogued task whose folder is not in the mirror used to plan fine and fail in its prepare job. Planned
    in process (`dry_run`, without $GENEB_TASK_SOURCE): the refusal is the workflow's WorkflowError."""
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        cfg[key] = str(repo / cfg[key])
    mirror = tmp_path / "mirror"
    (mirror / "gue_prom_core_tata").mkdir(parents=True)
    (mirror / "gue_prom_core_tata" / "train.csv").write_text("sequence,label\nACGT,0\n")
    cfg.update(task_source=str(mirror), tasks=["gue_prom_core_tata", "ienhancer2l_strong_vs_weak"], models=["kmer-3"])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(WorkflowError) as err:
        dry_run(tmp_path, configfiles=("c.yaml",))
    out = str(err.value)
    # the plan's task-source pre-flight: every affected task at once, each with what is missing and the fix
    assert "2 selected task(s) cannot be read from their source" in out, out[-3000:]
    assert "no test split" in out and "gue_prom_core_tata" in out and "ienhancer2l_strong_vs_weak" in out
    assert "point `task_source:`" in out


def test_a_misspelled_knob_or_key_is_one_short_line_naming_it(repo):
    """A typo in an execution knob (devise: cuda) would be ignored and the run stay on the CPU; a top-level typo
    used to print the whole schema. Both are refused, one line each, naming the key."""
    import yaml

    from geneb.core.paths import schema_problems

    schema = yaml.safe_load((repo / "workflow" / "schemas" / "config.schema.yaml").read_text())
    lines = schema_problems({"tasks": ["t"], "models": ["m"], "model": ["x"], "execution": {"devise": "cuda"}}, schema)
    assert len(lines) == 2, lines
    assert lines[0].startswith("(top level): Additional properties are not allowed ('model' was unexpected)")
    assert lines[1].startswith("execution: Additional properties are not allowed ('devise' was unexpected)")
    assert all(len(line) < 400 for line in lines)
    # a misspelled key gets the schema's close spellings; a key like none of them gets no guess
    assert lines[0].endswith("did you mean 'model' -> 'models'?") and lines[1].endswith("'devise' -> 'device'?")
    (typo,) = schema_problems({"tasks": ["t"], "models": ["m"], "modles_extra": ["x"], "zzz": 1}, schema)
    assert typo.endswith("; did you mean 'modles_extra' -> 'models_extra'?") and "'zzz' ->" not in typo
