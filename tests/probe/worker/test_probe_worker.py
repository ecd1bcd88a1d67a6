"""The probe worker (geneb.probe.worker): a probe job run in a child forked by the node's warm worker
writes the same tables as the job run in its own process, concurrent jobs share one worker, an error comes back
under its own class, and a job that goes away leaves nothing under its output names."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pandas as pd
import pytest
from test_job import TASK, _run, _shots

from extraction_support import stop_servers
from geneb.extract.cache import CacheKeyMismatchError
from geneb.probe.fit import _PROBE_THREADS
from geneb.probe.worker import _fit_probes_via_worker, run_fit_probes_job
from geneb.tables.scores import probe_threads

PROTOCOL = "geneb-paper"


def _args(stage, probe_config, out: Path, **over) -> dict:
    root, task_dir = stage
    args = dict(
        train=str(task_dir / "train.parquet"),
        test=str(task_dir / "test.parquet"),
        card=str(task_dir / "card.json"),
        embeddings=str(root / "kmer-3.h5"),
        shots=str(_shots(stage, probe_config, PROTOCOL)),
        scores_out=str(out / "scores.parquet"),
        predictions_out=str(out / "predictions.parquet"),
        task=TASK,
        model="kmer-3",
        protocol=PROTOCOL,
        settings=probe_config[PROTOCOL],
        threads=1,
        hdf5_locking="auto",
    )
    args.update(over)
    return args


def _worker_pids(log: Path) -> set[str]:
    return {
        line.split("pid ")[1].split()[0] for line in log.read_text().splitlines() if "run by probe worker pid" in line
    }


def test_a_job_in_the_worker_writes_the_tables_of_a_job_in_its_own_process(
    stage, probe_config, tmp_path, private_model_servers
):
    direct, direct_args = _run(stage, probe_config, PROTOCOL)
    log = tmp_path / "job.log"
    args = _args(stage, probe_config, tmp_path / "worker", threads=2)
    _fit_probes_via_worker(args, log=log, hdf5_locking="auto", idle_s=30)
    served = pd.read_parquet(args["scores_out"])
    volatile = ["created_at", "seconds", "geneb_dirty", "geneb_commit"]
    keep = [c for c in direct.columns if c not in volatile]
    pd.testing.assert_frame_equal(served[keep], direct[keep])
    pd.testing.assert_frame_equal(
        pd.read_parquet(args["predictions_out"]), pd.read_parquet(direct_args["predictions_out"])
    )
    child = _worker_pids(log)
    assert len(child) == 1 and int(next(iter(child))) != os.getpid()
    assert not list((tmp_path / "worker").glob(".tmp-*"))  # only the final names
    # the forked child's fits ran on one thread per BLAS / OpenMP pool, recorded as the direct job's are
    (record,) = probe_threads(args["scores_out"])
    assert record == probe_threads(str(direct_args["scores_out"]))[0]
    assert all(pool["num_threads"] == _PROBE_THREADS for pool in record["pools"])


def _job_process(args: dict, log: str) -> multiprocessing.Process:
    """A probe job in a process of its own, as Snakemake runs one (its target is the library's function, so the
    spawned process never imports this test module)."""
    kwargs = {"log": log, "hdf5_locking": "auto", "idle_s": 30}
    return multiprocessing.get_context("spawn").Process(target=_fit_probes_via_worker, args=(args,), kwargs=kwargs)


def test_concurrent_jobs_share_one_worker_and_each_runs_in_its_own_child(
    stage, probe_config, tmp_path, private_model_servers
):
    _shots(stage, probe_config, PROTOCOL)
    jobs = [(_args(stage, probe_config, tmp_path / f"j{i}"), str(tmp_path / f"j{i}.log")) for i in range(3)]
    procs = [_job_process(*job) for job in jobs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    tables = [pd.read_parquet(args["scores_out"])["value"] for args, _ in jobs]
    assert all(t.equals(tables[0]) for t in tables)
    children = set().union(*(_worker_pids(Path(log)) for _, log in jobs))
    assert len(children) == 3  # one forked child per job
    worker_logs = list(private_model_servers.glob("*.log"))
    assert len(worker_logs) == 1  # ... of one worker
    assert "ready on" in worker_logs[0].read_text()


def test_an_error_of_the_job_comes_back_under_its_own_class_and_writes_nothing(
    stage, probe_config, tmp_path, private_model_servers
):
    root, task_dir = stage
    card = (task_dir / "card.json").read_text().replace('"data_hash": "', '"data_hash": "f')
    other = tmp_path / "card.json"
    other.write_text(card)
    args = _args(stage, probe_config, tmp_path / "out", card=str(other))
    log = tmp_path / "job.log"
    with pytest.raises(CacheKeyMismatchError, match="task_data_hash"):
        _fit_probes_via_worker(args, log=log, hdf5_locking="auto", idle_s=30)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    assert "Traceback" in log.read_text()  # the child's traceback is in the job's log


def test_a_job_that_goes_away_leaves_no_output(stage, probe_config, tmp_path, private_model_servers):
    slow = {**probe_config[PROTOCOL], "bootstrap": {**probe_config[PROTOCOL]["bootstrap"], "n_resamples": 400_000}}
    args = _args(stage, probe_config, tmp_path / "out", settings=slow)
    log = tmp_path / "job.log"
    proc = _job_process(args, str(log))
    proc.start()
    deadline = time.monotonic() + 60
    while not log.exists() or "run by probe worker pid" not in log.read_text():
        assert time.monotonic() < deadline and proc.is_alive()
        time.sleep(0.05)
    child = int(next(iter(_worker_pids(log))))
    time.sleep(0.5)
    proc.kill()  # the job is cancelled while its child fits
    proc.join()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:  # the child ends with its job
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    proc.join()
    out = tmp_path / "out"
    assert not out.exists() or not list(out.iterdir())


def test_with_the_worker_off_the_job_runs_in_its_own_process(stage, probe_config, tmp_path, private_model_servers):
    args = _args(stage, probe_config, tmp_path / "out")
    run_fit_probes_job(args, log=tmp_path / "job.log", execution={"probe_worker": False})
    assert Path(args["scores_out"]).exists()
    assert not list(private_model_servers.glob("*.sock"))
    stop_servers(private_model_servers)
