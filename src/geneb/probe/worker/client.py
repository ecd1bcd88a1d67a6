"""What a probe job calls: run `geneb.probe.job.fit_probes` in a child forked by the node's probe worker
(geneb.probe.worker.server), starting the worker when none runs, so no probe job pays the probing stack's
imports after the first.

The job connects under the worker's lock (the worker stops when idle only under it, so no job is lost to a
stopping worker), sends its arguments and waits; the child appends its log to the job's log and answers with
success or the error, which is raised here under its own class (ProbeInputError, CacheError, ...). A worker
child that dies without an answer is a RuntimeError naming the job's log.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from geneb.core.ipc import ServerPaths, code_fingerprint, held, rebuild_error, receive, send, server_dir
from geneb.extract.client import connect, spawn
from geneb.probe.worker.spec import WorkerSpec


def _start(spec: WorkerSpec, paths: ServerPaths) -> socket.socket:
    """Start the worker of `spec` and return a connection once it listens. Raises RuntimeError (naming the
    worker's log) when it exits first."""
    conn, proc = spawn("geneb.probe.worker.server", spec.python, paths, spec.__dict__, None)
    if conn is None:
        raise RuntimeError(
            f"the probe worker exited with status {proc.returncode} before it was ready; its log: {paths.log}"
        )
    return conn


def fit_probes_via_worker(kwargs: dict[str, Any], *, log: str | Path, hdf5_locking: str, idle_s: float = 60.0) -> None:
    """Run `fit_probes(**kwargs)` (geneb.probe.job; JSON-able arguments: paths as str) in the node's probe
    worker for this interpreter, code and `hdf5_locking`, starting it when needed; the child appends to the job's
    `log`. idle_s: seconds the worker waits for its next job before it stops.

    Raises fit_probes' errors under their own class, or RuntimeError when the worker or its child dies first.
    """
    spec = WorkerSpec(python=sys.executable, code=code_fingerprint(), hdf5_locking=hdf5_locking, idle_s=float(idle_s))
    paths = ServerPaths(server_dir(), spec.key())
    job_kwargs = {k: os.fspath(v) if isinstance(v, Path) else v for k, v in kwargs.items()}
    for key in ("scores_out", "predictions_out"):
        job_kwargs[key] = str(Path(job_kwargs[key]).resolve())
    request = {
        "op": "fit",
        "kwargs": job_kwargs,
        "log": str(Path(log).resolve()),
        "cwd": os.getcwd(),  # the child runs in the job's folder: relative inputs resolve as in the job
    }
    sys.stderr.flush()
    with held(paths.lock):
        conn = connect(paths.socket) or _start(spec, paths)
        send(conn, request)
    with conn:
        answer = receive(conn)
    if answer is None:
        raise RuntimeError(
            f"model {kwargs.get('model')}, task {kwargs.get('task')}: the probe worker's child stopped without an "
            f"answer (killed, or out of memory?); see {log} and the worker's log {paths.log}"
        )
    if not answer.get("ok"):
        raise rebuild_error(answer)
    for key in ("scores_out", "predictions_out"):
        os.utime(job_kwargs[key])  # the job's own output time, after its inputs (Snakemake's mtime rule)


def run_fit_probes_job(kwargs: dict[str, Any], *, log: str | Path, execution: dict[str, Any]) -> None:
    """Run one probe job as rule fit_probes does (its shim has called `log_to_file(log)`): in the node's probe
    worker (`execution.probe_worker: true`, the default; `probe_worker_idle_s`) or, with false, in this process
    (geneb.probe.job.fit_probes imported here). kwargs: fit_probes' arguments. Raises what fit_probes raises."""
    if execution.get("probe_worker", True):
        fit_probes_via_worker(
            kwargs, log=log, hdf5_locking=kwargs["hdf5_locking"], idle_s=execution.get("probe_worker_idle_s", 60)
        )
        return
    from geneb.probe.job import fit_probes

    fit_probes(**kwargs)
