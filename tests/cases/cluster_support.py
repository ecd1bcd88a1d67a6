"""What the workflow/cluster tests share (tests/cases/test_workflow_cluster.py and test_workflow_slurm.py): the
shared small run's tasks and models, the real `snakemake` command in a run folder and its dry-run job listing,
score-table comparisons and the paths of a run's cache files."""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

from geneb.core.provenance import CODE_REVISION_KEYS
from workflow_support import (
    SMALL_MODELS,
    SMALL_TASKS,
    write_small_config,
)

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
#: the shared finished run's tasks and models (conftest `finished_run`, workflow_support.write_small_config)
TASKS = SMALL_TASKS
MODELS = SMALL_MODELS
SCORES = "results/tables/scores.parquet"
#: a task of long sequences: kmer-6 extraction and probing each take a few seconds, long enough to kill midway
KILL_TASK = "pgb_lncrna_solanum_lycopersicum__testonly_resplit"
SLURM_DIR = Path(os.environ.get("GENEB_SLURM_DIR", "/tmp/geneb-slurm"))


# ---- helpers ---------------------------------------------------------------------------------------------


def repo_registry() -> dict:
    """A copy of the repository registry's mapping, read by the one reader (`load_registry`), to edit."""
    from geneb.registry.load import load_registry

    return copy.deepcopy(dict(load_registry(REPO / "config" / "models.yaml").raw))


def env_for_tests(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GENEB_TASK_SOURCE"}
    env.update(extra)
    return env


STEADY_POLLING = REPO / "tests" / "slurm" / "steady_polling.py"


def snakemake_command(*, steady_polling: bool = False) -> list[str]:
    """`python -m snakemake`, or with steady_polling Snakemake whose Slurm executor polls `sacct` at its initial
    interval throughout instead of backing off by 10 s per poll (tests/slurm/steady_polling.py says why)."""
    return [sys.executable, str(STEADY_POLLING)] if steady_polling else [sys.executable, "-m", "snakemake"]


def snakemake(
    run: Path,
    *args: str,
    check: bool = True,
    snakefile: Path = SNAKEFILE,
    env=None,
    timeout=900,
    steady_polling: bool = False,
):
    """Run `python -m snakemake -s <snakefile> --cores 2 <args>` in `run`; returns the CompletedProcess
    (stdout and stderr together in .stdout). check: raise with the output when it fails. steady_polling: see
    snakemake_command."""
    cmd = [*snakemake_command(steady_polling=steady_polling), "-s", str(snakefile), "--cores", "2", *args]
    proc = subprocess.run(
        cmd,
        cwd=run,
        env=env or env_for_tests(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-6000:]}")
    return proc


JOB_HEADER = re.compile(r"^(?:local)?rule (\S+):$")


def snakemake_n(run: Path, *args: str, snakefile: Path = SNAKEFILE) -> list[dict]:
    """The jobs the real `snakemake -n <args>` (a subprocess) would run: dicts with rule, wildcards, reason,
    output, parsed from Snakemake's own job listing. [] when it reports nothing to be done. For the tests whose
    point is the command line (options, profiles, another Snakefile, a process of its own); the others plan in
    process (workflow_support.dry_run), which test_in_process_plan_agrees_with_snakemake_n holds to this."""
    out = snakemake(run, "-n", *args, snakefile=snakefile).stdout
    jobs: list[dict] = []
    job = None
    for line in out.splitlines():
        # a job's header starts its line, or is indented by 4 under a "Group job" line (a model's jobs are grouped)
        m = JOB_HEADER.match(line.strip()) if len(line) - len(line.lstrip()) in (0, 4) else None
        if m:
            job = {"rule": m.group(1), "wildcards": {}, "reason": "", "output": []}
            jobs.append(job)
            continue
        if job is None or not line.startswith("    "):
            job = None if not line.startswith("    ") else job
            continue
        key, _, value = line.strip().partition(": ")
        if key == "wildcards":
            job["wildcards"] = dict(kv.split("=", 1) for kv in value.split(", "))
        elif key == "reason":
            job["reason"] = value
        elif key == "output":
            job["output"] = value.split(", ")
    if not jobs:
        assert "Nothing to be done" in out, out[-3000:]
    return jobs


def job_keys(jobs: list[dict]) -> Counter:
    """(rule, model or '', task or '') -> count: the shape of a dry run, comparable across runs."""
    return Counter((j["rule"], j["wildcards"].get("model", ""), j["wildcards"].get("task", "")) for j in jobs)


def reason_kinds(reason: str) -> frozenset[str]:
    """The kinds of a job's reason ("Missing output files", "Params have changed since last execution", ...):
    each `;`-separated part up to its first colon, without the files it names."""
    return frozenset(part.split(":", 1)[0].strip() for part in reason.split(";") if part.strip())


def scores(run: Path) -> pd.DataFrame:
    df = pd.read_parquet(run / SCORES)
    return df.sort_values(["protocol", "model", "task", "regime", "seed", "metric"]).reset_index(drop=True)


def assert_same_scores(a: Path, b: Path) -> None:
    """The score tables of runs `a` and `b` are equal, exactly, but for the code revision that wrote them
    (CODE_REVISION_KEYS: provenance, which differs when a commit lands, or the tree changes, between the two
    runs); both tables record one."""
    left, right = scores(a), scores(b)
    for table in (left, right):
        assert set(CODE_REVISION_KEYS) <= set(table.columns), table.columns
    revision = list(CODE_REVISION_KEYS)
    pd.testing.assert_frame_equal(left.drop(columns=revision), right.drop(columns=revision), check_exact=True)


def embedding_files(run: Path) -> list[Path]:
    """Every embedding file of `run`: resources/embeddings/<model>/<settings hash>/<task>/<task hash>.h5."""
    return sorted((run / "resources" / "embeddings").glob("*/*/*/*.h5"))


def drop_extractions(run: Path) -> None:
    """Delete every embedding file and every result of `run` (a copy of the finished run): the extractions and all
    after them are to do again (Snakemake makes a missing file again only for a job that must run); its prepared
    tasks, shot draws and audits stay."""
    shutil.rmtree(run / "resources" / "embeddings")
    shutil.rmtree(run / "results")


def h5_cell(h5: Path) -> tuple[str, str]:
    """(model, task) of an embedding file's path."""
    return h5.parents[2].name, h5.parent.name


def task_folder(run: Path, task: str) -> Path:
    """The one prepared folder of `task` in `run` (resources/tasks/<task>/<task hash>/)."""
    (card,) = (run / "resources" / "tasks" / task).glob("*/card.json")
    return card.parent


def shot_file(run: Path, task: str) -> Path:
    """The one geneb-paper shot file of `task` in `run` (resources/shots/geneb-paper/<draw hash>/<task>/<task hash>.json)."""
    (path,) = (run / "resources" / "shots" / "geneb-paper").glob(f"*/{task}/*.json")
    return path


def assert_downstream_newer(run: Path) -> None:
    """Every probe table is newer than its embedding file, and the score table newer than every probe table
    (no output older than an input it was rebuilt from)."""
    table = (run / SCORES).stat().st_mtime
    for h5 in embedding_files(run):
        model, task = h5_cell(h5)
        probes = list((run / "results" / "probes").glob(f"*/{model}/{task}.parquet"))
        assert probes, f"no probe table reads {h5}"
        for probe in probes:
            assert probe.stat().st_mtime >= h5.stat().st_mtime, f"{probe} is older than its input {h5}"
            assert table >= probe.stat().st_mtime, f"{SCORES} is older than {probe}"


def write_kill_config(run: Path) -> dict:
    """The configuration the SIGKILL tests interrupt: KILL_TASK x kmer-6, uncapped, under the geneb-strict
    protocol as configured (inner CV over its C grid, 10 seeds), so that extraction writes for a moment and
    probing fits for seconds."""
    probe = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["probe"]

    def strict(config: dict) -> None:
        config.update(protocols=["geneb-strict"], default_protocol="geneb-strict", probe=probe)

    return write_small_config(run, tasks=[KILL_TASK], models=["kmer-6"], caps=(None, None), edit=strict)


def wait_for(condition, proc: subprocess.Popen, what: str, timeout: float = 300.0, poll: float = 0.002):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = condition()
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended (exit {proc.returncode}) before {what}")
        time.sleep(poll)
    kill_group(proc)
    raise AssertionError(f"timed out waiting for {what}")


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL Snakemake and its job processes (its process group): no chance to clean up."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
