"""Pre-flight through the workflow: on the conda route without --sdm conda every job would run in this
interpreter, so a model whose transformers range excludes it stops the real run before anything is submitted,
while a dry run (planning a --sdm conda run elsewhere) reports it and plans on; and the extraction rule's conda
env is the model's. Fast: nothing is extracted."""

from __future__ import annotations

import contextlib
import shutil

import pytest
import yaml
from snakemake.exceptions import WorkflowError

from workflow_support import dry_run, run_snakemake, write_run_config

TASK = "gue_prom_core_all"
OLD = "mistral-dna-1m-ft-prom"


@pytest.fixture
def run(tmp_path, repo, shared):
    """A run folder whose registry gives the Mistral-DNA checkpoint a transformers 4 range (and env)."""
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    entry = doc["models"][OLD]
    entry["source"]["path"] = str(shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom")
    entry.update(env="transformers4", load={"transformers": "<5"})
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    folder = tmp_path / "run"
    write_run_config(folder, mirror, [TASK], ["kmer-3", OLD])
    config = yaml.safe_load((folder / "config/config.yaml").read_text())
    config["model_sheet"] = str(tmp_path / "models.yaml")
    (folder / "config/config.yaml").write_text(yaml.safe_dump(config))
    return folder


def test_a_real_run_stops_before_any_job_and_a_dry_run_reports_and_plans(run, caplog):
    """The real run is a subprocess: the pre-flight stop is the `onstart` handler of a real run only, and what it
    prints on the console is the point. The dry run is planned in process (`dry_run`, its log captured)."""
    proc = run_snakemake(run)
    assert proc.returncode != 0
    assert "pre-flight: 1 problem(s) of this interpreter" in proc.stdout, proc.stdout[-3000:]
    assert "pre-flight: 1 problem(s); nothing was submitted" in proc.stdout, proc.stdout[-3000:]
    assert f"model {OLD} (env transformers4): load.transformers '<5', but this interpreter" in proc.stdout
    assert "run with --sdm conda, or set execution.env_route: venv" in proc.stdout
    assert not (run / "resources").exists() and not (run / "logs").exists()

    caplog.clear()
    jobs = dry_run(run)  # raises if the plan refuses: a dry run plans on
    assert "pre-flight: 1 problem(s) of this interpreter" in caplog.text
    assert "nothing was submitted" not in caplog.text
    assert "extract_embeddings" in {job["rule"] for job in jobs}


def test_the_extraction_rule_takes_its_conda_env_from_the_model(tmp_path, repo, shared, caplog):
    """`snakemake --containerize` hashes the conda env file of every job of the DAG (it needs no conda for that):
    the default env for everything but extraction, and each model's own env for its extraction job. Run in process
    on the DAG `dry_run` plans (Snakemake's own containerize function, its log captured); as with the command, its
    exit after the hashing (no conda to ask for the Dockerfile's commands) is not what is checked."""
    from snakemake.deployment.containerize import containerize

    from workflow_support import in_process_dag

    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    hyena = doc["models"]["hyenadna-tiny-1k-ft-anticapt"]
    hyena["source"]["path"] = str(shared / "models" / "hyenadna-tiny-1k-ft-anticapt")
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(doc))
    folder = tmp_path / "run"
    write_run_config(folder, mirror, [TASK], ["kmer-3", "hyenadna-tiny-1k-ft-anticapt"])
    config = yaml.safe_load((folder / "config/config.yaml").read_text())
    config["model_sheet"] = str(tmp_path / "models.yaml")
    (folder / "config/config.yaml").write_text(yaml.safe_dump(config))
    caplog.clear()
    with in_process_dag(folder) as dag, contextlib.suppress(WorkflowError):
        containerize(dag.workflow, dag)  # after hashing it asks conda for its version (conda may be absent)
    hashed = {
        (folder / line.split("Hashing conda environment ")[1].rstrip(".")).resolve()
        for line in caplog.messages
        if "Hashing conda environment" in line
    }
    assert hashed == {repo / "envs/geneb.yaml", repo / "envs/hyena.yaml"}, caplog.text[-3000:]


def test_a_dry_run_of_the_paper_tasks_offline_stops_naming_every_task_and_the_fix(tmp_path, repo):
    """The paper's 100 tasks with one local model, no network: the plan (a dry run) stops at once, every task named,
    with `paper_task_source` / GENEB_PAPER_TASK_SOURCE as the fix, instead of planning the jobs and failing in the
    first prepare_task job. Planned in process (`dry_run`): the refusal is the workflow's WorkflowError, whose
    message is what the console shows."""
    paper = yaml.safe_load((repo / "config/paper.yaml").read_text())
    run = tmp_path / "run"
    write_run_config(run, tmp_path / "unused-mirror", paper["tasks"], ["kmer-3"])
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "GENEB_PAPER_TASK_SOURCE": ""}
    with pytest.raises(WorkflowError) as err:
        dry_run(run, env=env)
    text = str(err.value)
    assert "100 selected task(s) cannot be read from their source, so nothing was planned:" in text
    assert "- 100 from hf:DeepPavlov/geneb-tasks@4edd705be573e48c585c2cf79dc320f9f43c7b04: offline" in text
    assert all(task in text for task in paper["tasks"])
    assert "`paper_task_source:`" in text and "$GENEB_PAPER_TASK_SOURCE" in text
    assert "Job stats" not in text and not (run / "resources").exists()
    # the fix named: a local copy; one that is not there is named in turn
    with pytest.raises(WorkflowError) as err:
        dry_run(run, env=env | {"GENEB_PAPER_TASK_SOURCE": str(tmp_path / "copy")})
    assert f"the mirror folder {tmp_path / 'copy'} does not exist" in str(err.value)
