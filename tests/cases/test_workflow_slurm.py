"""The workflow on a real single-node Slurm (tests/slurm/cluster.sh, started by scripts/test.sh as root; every test
skips without it): the cluster profile runs the workflow and equals a local run, a scancelled job is retried, GPU
requests reach sbatch (and a CPU fallback is refused), `geneb recover` waits for the run's live jobs, a job failing
on a node reaches the console and blocks no other task, a CPU-only python entry runs without a GPU. Apart from
test_workflow_cluster.py so that pytest-xdist runs these (mostly the Slurm executor's status polling) beside it.
Each starts from a copy of the shared finished run (conftest `finished_run`) with the work to redo deleted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import h5py
import pandas as pd
import pytest
from cluster_support import (
    MODELS,
    REPO,
    SCORES,
    SLURM_DIR,
    SNAKEFILE,
    TASKS,
    assert_downstream_newer,
    assert_same_scores,
    drop_extractions,
    embedding_files,
    env_for_tests,
    h5_cell,
    repo_registry,
    snakemake,
    snakemake_command,
    task_folder,
    wait_for,
)

from geneb.core import integrity
from geneb.tables.scores import failed_tasks
from workflow_support import (
    copy_run,
    dry_run,
    run_plan,
    write_small_config,
)

# ---- a real Slurm ----------------------------------------------------------------------------------------------


@pytest.fixture
def slurm_env() -> dict[str, str]:
    """The environment for Slurm clients; skips (first, before other fixtures) when no cluster is up."""
    conf = SLURM_DIR / "slurm.conf"
    if not conf.exists() or shutil.which("sbatch") is None:
        pytest.skip(
            f"no single-node Slurm running (no {conf} or no sbatch); start it with tests/slurm/cluster.sh start"
        )
    status = subprocess.run(
        ["bash", str(REPO / "tests" / "slurm" / "cluster.sh"), "status"],
        capture_output=True,
        text=True,
        env={**os.environ, "GENEB_SLURM_DIR": str(SLURM_DIR)},
    )
    if status.returncode != 0:
        pytest.skip(f"the Slurm of tests/slurm/cluster.sh is not usable: {status.stderr.strip()}")
    return env_for_tests(SLURM_CONF=str(conf))


def _squeue(env, run_id: str) -> list[dict]:
    """Every job (any state, while MinJobAge keeps it) whose name is the plugin's run id."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", f"--name={run_id}", "--format=%i|%T|%P|%k|%b|%Z"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    keys = ("id", "state", "partition", "comment", "tres", "workdir")
    return [dict(zip(keys, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]


# a first `sacct` poll after 2 s, not the profile's 40 s, and every later one 2 s apart (the runs below go through
# snakemake_command(steady_polling=True)): a test cluster's jobs take seconds
SLURM_FAST = ["--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs", "--latency-wait", "10"]


def _running_extraction(env, log: Path):
    """A RUNNING extraction job of the run whose Snakemake console is `log`, or None."""
    m = re.search(r"SLURM run ID: (\S+)", log.read_text())
    if not m:
        return None
    return next(
        (j for j in _squeue(env, m.group(1)) if j["state"] == "RUNNING" and "extract_embeddings" in j["comment"]),
        None,
    )


@pytest.mark.slurm
def test_slurm_profile_runs_the_workflow_on_a_real_cluster_and_retries_a_scancelled_job(
    slurm_env, finished_run, tmp_path
):
    """The small run from scratch under the Slurm profile as shipped equals the finished (local) run, and an
    extraction job cancelled midway on Slurm (scancel) is resubmitted by the profile's retries. Its own run: every
    job of a fresh run (audits, extractions, probes) is to go through Slurm; the cancel rides on the same run
    instead of a second one."""
    env = slurm_env
    run = tmp_path / "run"
    write_small_config(run)
    t0 = time.monotonic()
    # the profile as shipped (device cuda): k-mer models are CPU-only encoders, so their extraction jobs are CPU jobs
    cmd = [*snakemake_command(steady_polling=True), "-s", str(SNAKEFILE), "--profile", str(REPO / "profiles" / "slurm")]
    log = tmp_path / "snakemake.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [*cmd, *SLURM_FAST, SCORES], cwd=run, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        cancelled = wait_for(lambda: _running_extraction(env, log), proc, "a running extraction job", poll=0.2)
        subprocess.run(["scancel", cancelled["id"]], env=env, check=True)
        proc.wait(timeout=600)
    elapsed = time.monotonic() - t0
    out = log.read_text()
    assert proc.returncode == 0, out[-4000:]
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)
    jobs = _squeue(env, run_id)
    # the cancelled extraction was resubmitted: its group's job twice, once CANCELLED, once COMPLETED
    (gone,) = [j for j in jobs if j["id"] == cancelled["id"]]
    assert gone["state"] == "CANCELLED", gone
    jobs = [j for j in jobs if j["id"] != cancelled["id"]]
    assert any(j["comment"] == cancelled["comment"] for j in jobs), "the cancelled extraction was not resubmitted"
    # one sbatch job per model for its extractions and one for its probes (the rules' groups), not one per
    # (model, task), and one task audit (MMseqs2) per task; task preparation and aggregation are local rules.
    # A job's comment names its rule and wildcards: an audit's are the task, its task hash and its audit hash
    # (resources/tasks/<task>/<thash>/audit-<ahash>.json, the paths the run's plan gives)
    plan = run_plan(run)
    audits = [Path(plan.layout.audit_file(t)) for t in TASKS]
    comments = Counter(j["comment"] for j in jobs)
    assert comments == Counter(
        [f"rule_extract_{m}_extract_embeddings" for m in MODELS]
        + [f"rule_probe_{m}_fit_probes" for m in MODELS]
        + [
            f"rule_audit_task_wildcards_{a.parents[1].name}_{a.parent.name}_{a.stem.removeprefix('audit-')}"
            for a in audits
        ]
    ), comments
    assert all(j["state"] == "COMPLETED" for j in jobs), jobs
    assert all(Path(j["workdir"]).resolve() == run.resolve() for j in jobs)
    # k-mer extraction is a CPU job: the CPU partition, without --gpus (sites reject or bill it as GPU time)
    assert {j["partition"] for j in jobs if "extract_" in j["comment"]} == {"cpu"}
    assert not any("gpu" in j["tres"] for j in jobs if "extract_" in j["comment"]), jobs
    assert {j["partition"] for j in jobs if "probe_" in j["comment"]} == {"cpu"}
    for m in MODELS:  # each model was loaded once on the node, for all its tasks (the retried one: once per attempt)
        if f"rule_extract_{m}_" in cancelled["comment"]:
            continue
        loads = set()
        for t in TASKS:
            (h5,) = (run / "resources" / "embeddings" / m).glob(f"*/{t}/*.h5")
            with h5py.File(h5, "r") as f:
                loads.add(f.attrs["model_load_id"])
        assert len(loads) == 1, (m, loads)
    # each Slurm job left its log, named by its job id, under the profile's slurm-logdir
    logged = {p.stem for p in (run / "logs" / "slurm").rglob("*.log")}
    assert {j["id"] for j in jobs} <= logged
    assert_same_scores(run, finished_run)
    assert_downstream_newer(run)
    assert dry_run(run, SCORES) == []
    print(f"slurm workflow run: {len(jobs) + 1} Slurm jobs in {elapsed:.1f} s")


@pytest.mark.slurm
def test_gres_profile_gives_a_neural_job_a_gpu_and_a_cpu_only_entry_none(slurm_env, finished_run, tmp_path):
    """Under the gres profile a neural extraction job is given a GPU by Slurm, and without CUDA it stops instead of
    running on the CPU; beside it a user's CPU-only encoder (`family: python`, `load.cpu_only: true`) asks Slurm for
    no GPU and runs (no CUDA here) to a complete embedding file. One run of both models (their jobs are submitted
    together), on a copy of the finished run without embeddings and results (its task prepared)."""
    env = slurm_env
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the no-fallback check needs a machine without it")
    run = copy_run(finished_run, tmp_path / "run")
    drop_extractions(run)
    registry = repo_registry()
    cnn = REPO / "tests" / "encoders" / "families" / "dilated_cnn.py"
    registry["models"]["my-cnn"] = {
        "family": "python",
        "load": {"entry": f"{cnn}:build", "options": {"channels": 16, "threads": 1}, "cpu_only": True},
    }
    write_small_config(run, tasks=TASKS[:1], models=["random-esm-tiny", "my-cnn"], registry=registry)
    proc = snakemake(
        run,
        "--profile",
        str(REPO / "profiles" / "slurm"),
        "--profile",
        str(REPO / "profiles" / "slurm-gres"),
        *SLURM_FAST,
        "--retries",
        "0",
        "--until",
        "extract_embeddings",
        env=env,
        check=False,
        steady_polling=True,
    )
    assert proc.returncode != 0  # the neural job failed (keep-going: the other ran)
    run_id = re.search(r"SLURM run ID: (\S+)", proc.stdout).group(1)
    jobs = {
        m: [j for j in _squeue(env, run_id) if f"rule_extract_{m}_extract_embeddings" == j["comment"]]
        for m in ("random-esm-tiny", "my-cnn")
    }
    (neural,) = jobs["random-esm-tiny"]
    assert neural["partition"] == "gpu" and "gpu" in neural["tres"], neural
    assert neural["state"] == "FAILED", neural
    detail = subprocess.run(["scontrol", "show", "job", neural["id"]], env=env, capture_output=True, text=True).stdout
    assert "gres/gpu" in detail or "gres:gpu" in detail, detail
    text = "".join(p.read_text() for p in (run / "logs").rglob("*.log"))
    assert "CUDA is not available" in text and "not falling back to CPU" in text, text[-3000:]
    (cpu_only,) = jobs["my-cnn"]
    assert cpu_only["state"] == "COMPLETED" and "gpu" not in cpu_only["tres"], cpu_only
    detail = subprocess.run(["scontrol", "show", "job", cpu_only["id"]], env=env, capture_output=True, text=True).stdout
    assert "gres/gpu" not in detail and "gres:gpu" not in detail, detail
    assert [h5_cell(p)[0] for p in embedding_files(run)] == ["my-cnn"]


@pytest.mark.slurm
def test_recover_refuses_while_slurm_jobs_of_the_run_are_alive(slurm_env, tmp_path, monkeypatch):
    """A hard kill of the main process leaves its Slurm jobs running; recovery must not start a second writer."""
    from geneb.run import recover

    env = slurm_env
    run = tmp_path / "run"
    run.mkdir()
    job = subprocess.run(
        ["sbatch", "--parsable", "-D", str(run), "--output", str(tmp_path / "sleep.log"), "--wrap", "sleep 120"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
        monkeypatch.chdir(run)
        assert recover._active_slurm_jobs(run.resolve()) == [job]
        assert recover.main(["-s", str(SNAKEFILE), "--cores", "1"]) == 3
        assert not (run / ".snakemake").exists()  # it touched nothing
    finally:
        subprocess.run(["scancel", job], env=env, check=True)


@pytest.mark.slurm
def test_a_job_failing_on_a_slurm_node_reaches_the_console_and_blocks_no_other_task(slurm_env, finished_run, tmp_path):
    """On Slurm: an extraction that fails inside its Slurm job (a stray character in a prepared
    split) prints its one-line GENEB error on the Snakemake console, and the other task's scores, the
    leaderboard and the report are still built, listing the failed task; the run exits non-zero. On a copy of
    the finished run (its tasks prepared, the other task's work done) without the failing cell's embedding file
    and probe tables: Slurm runs that cell's extraction and the tables after it, not the whole run again."""
    run = copy_run(finished_run, tmp_path / "run")
    (h5,) = [p for p in embedding_files(run) if h5_cell(p) == ("kmer-3", TASKS[1])]
    cell = [
        run / "results" / kind / "geneb-paper" / "kmer-3" / f"{TASKS[1]}.parquet" for kind in ("probes", "predictions")
    ]
    for path in (h5, *cell):
        path.unlink()
        integrity.digest_path(path).unlink(missing_ok=True)
    write_small_config(run, models=["kmer-3"])
    split = task_folder(run, TASKS[1]) / "train.parquet"
    df = pd.read_parquet(split)
    df.loc[3, "sequence"] = "ACGT!ACGT"
    # written with its digest, as a writer would (a split that fails its content check is set aside and prepared
    # again instead): the stray character is in the data the run trusts, and only the extraction can refuse it
    integrity.write_parquet(df, split)
    proc = snakemake(
        run,
        "--profile",
        str(REPO / "profiles" / "slurm"),
        "--config",
        "execution={device: cpu}",
        *SLURM_FAST,
        # the shipped profile's 2 retries would fail the same stray character twice more (about a minute of polls)
        "--retries",
        "0",
        check=False,
        env=slurm_env,
        steady_polling=True,
    )
    assert proc.returncode != 0
    assert re.search(
        r"GENEB ERROR \(logs/extract_embeddings/kmer-3/\w+/\w+/" + TASKS[1] + r"\.log\): SequenceError: .*"
        r"split 'train', row \d+: character '!'",
        proc.stdout,
    ), proc.stdout[-3000:]
    assert "SLURM run ID" in proc.stdout
    scores = pd.read_parquet(run / SCORES)
    assert set(scores["task"]) == {TASKS[0]}
    assert TASKS[1] in failed_tasks(run / SCORES)
    assert "Failed tasks" in (run / "results" / "report" / "geneb_report.html").read_text()
