"""A per-node probe worker: one warm process with the probing stack imported forks a child per probe job.

What a probe worker and its jobs agree on: the worker's identity (its key) and files.

A worker is keyed by the interpreter (the software environment), a fingerprint of GENEB's own source files
and the HDF5 locking mode (set before h5py is imported), so a job never runs in a process of other code or
settings. Its files are those of a model server (`geneb.core.ipc.ServerPaths`), in the same private
per-user folder on the node, under a key no model server has (the spec's `kind`).

What a probe job calls: run `geneb.probe.job.fit_probes` in a child forked by the node's probe worker
(geneb.probe.worker), starting the worker when none runs, so no probe job pays the probing stack's
imports after the first.

The job connects under the worker's lock (the worker stops when idle only under it, so no job is lost to a
stopping worker), sends its arguments and waits; the child appends its log to the job's log and answers with
success or the error, which is raised here under its own class (ProbeInputError, CacheError, ...). A worker
child that dies without an answer is a RuntimeError naming the job's log.

The probe worker: one process per node imports the probing stack once (pandas, scikit-learn, scipy, h5py:
about 1.3 s of every probe job's 2 s on a quiet 2-core machine, more under load) and forks a child for each
probe job a `fit_probes` shim sends it. The child is a copy of the warm process, so it starts in
milliseconds, runs `geneb.probe.job.fit_probes` and answers on the job's own connection; the server itself only
accepts and forks, so a node's concurrent probe jobs run in parallel, each in its own process, exactly as
before, with no import left to pay.

Started by `client.fit_probes_via_worker` as `python -m geneb.probe.worker <spec.json>`, detached, in the
job's interpreter. A child appends its log (records and stderr) to the job's log file. It writes its outputs
under temporary names and renames them to their final names only while the job still waits; a watcher thread
ends the child at once, removing what it wrote, when the job goes away (cancelled or killed), so a stopped job
never leaves a file a later run trusts. The server stops after `idle_s` seconds without a job.

A per-node probe worker: one warm process with the probing stack imported forks a child per probe job.
`client.fit_probes_via_worker` is what a probe job calls; `server.serve` is the process it starts when none runs
for its interpreter and code; `spec` is what both agree on.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from geneb.core import integrity
from geneb.core.ipc import (
    ServerPaths,
    code_fingerprint,
    error_message,
    held,
    listen,
    rebuild_error,
    receive,
    send,
    server_dir,
    stopped_when_idle,
)
from geneb.core.provenance import stable_hash
from geneb.extract.server import connect, spawn


@dataclass(frozen=True)
class WorkerSpec:
    """python: the interpreter; code: `geneb.core.ipc.code_fingerprint()`; hdf5_locking: auto |
    on | off; idle_s: seconds without a job after which the worker stops (not in the key)."""

    python: str
    code: str
    hdf5_locking: str
    idle_s: float
    kind: str = "probe-worker"

    def key(self) -> str:
        """16-hex key of the worker (everything but idle_s)."""
        return stable_hash({k: v for k, v in asdict(self).items() if k != "idle_s"}, length=16)


def _start(spec: WorkerSpec, paths: ServerPaths) -> socket.socket:
    """Start the worker of `spec` and return a connection once it listens. Raises RuntimeError (naming the
    worker's log) when it exits first."""
    conn, proc = spawn("geneb.probe.worker", spec.python, paths, spec.__dict__, None)
    if conn is None:
        raise RuntimeError(
            f"the probe worker exited with status {proc.returncode} before it was ready; its log: {paths.log}"
        )
    return conn


def _fit_probes_via_worker(kwargs: dict[str, Any], *, log: str | Path, hdf5_locking: str, idle_s: float = 60.0) -> None:
    """Run `fit_probes(**kwargs)` (geneb.probe.job; JSON-able arguments: paths as str) in the node's probe
    worker for this interpreter, code and `hdf5_locking`, starting it when needed; the child appends to the job's
    `_log`. idle_s: seconds the worker waits for its next job before it stops.

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
        _fit_probes_via_worker(
            kwargs, log=log, hdf5_locking=kwargs["hdf5_locking"], idle_s=execution.get("probe_worker_idle_s", 60)
        )
        return
    from geneb.probe.job import fit_probes

    fit_probes(**kwargs)


_log = logging.getLogger("geneb.probe.worker")
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _temporary(path: str) -> Path:
    out = Path(path)
    return out.with_name(f".tmp-{out.name}.worker-{os.getpid()}")  # a name no reader takes for a result


def _watch(conn: socket.socket, temporaries: list[Path]) -> None:
    """Block until the job closes its connection (it sends nothing after its request), then end this child,
    removing its temporary outputs: the job was cancelled and nobody waits for the result."""
    try:
        while conn.recv(1 << 10, socket.MSG_PEEK):
            time.sleep(0.05)  # never expected: a job sends one request and then only reads
    except OSError:
        pass
    for tmp in temporaries:
        integrity.discard(tmp)
    os._exit(1)


def _child(conn: socket.socket, request: dict[str, Any]) -> None:
    """Run one probe job in this forked child and answer on `conn`; never returns."""
    status = 1
    try:
        with open(request["log"], "ab", buffering=0) as log_file:
            os.dup2(log_file.fileno(), 1)
            os.dup2(log_file.fileno(), 2)  # the library warnings of the fit reach the job's log, as before
        sys.stdout = os.fdopen(1, "w", buffering=1)
        sys.stderr = os.fdopen(2, "w", buffering=1)
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=_LOG_FORMAT, force=True)
        logging.captureWarnings(True)
        os.chdir(request["cwd"])
        kwargs = dict(request["kwargs"])
        finals = {key: kwargs[key] for key in ("scores_out", "predictions_out")}
        temporaries = [_temporary(path) for path in finals.values()]
        threading.Thread(target=_watch, args=(conn, temporaries), daemon=True).start()
        _log.info(
            "probe job %s / %s: run by probe worker pid %d (forked)", kwargs["model"], kwargs["task"], os.getpid()
        )
        from geneb.probe.job import fit_probes

        kwargs.update(zip(finals, map(str, temporaries)))
        try:
            fit_probes(**kwargs)
        except Exception as err:  # the job re-raises it under its own class
            _log.exception("probe job failed")
            for tmp in temporaries:
                integrity.discard(tmp)
            send(conn, error_message(err))
        else:
            for tmp, final in zip(temporaries, finals.values()):
                # the job is still connected: the watcher would have ended us otherwise; the digest goes along
                integrity.replace(tmp, final)
            send(conn, {"ok": True})
            status = 0
        sys.stderr.flush()
    finally:
        os._exit(status)


def _serve(spec_path: str | Path) -> int:
    """Run the worker described by the spec file at `spec_path` (`WorkerSpec` as JSON) until idle; returns 0."""
    spec = WorkerSpec(**json.loads(Path(spec_path).read_text(encoding="utf-8")))
    paths = ServerPaths(Path(spec_path).parent, spec.key())
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=_LOG_FORMAT, force=True)
    from geneb.extract.cache import configure_hdf5_locking

    configure_hdf5_locking(spec.hdf5_locking)  # before h5py is imported (NFS/Lustre lock refusals)
    import geneb.probe.job  # noqa: F401  (the point of the worker: every child starts with it imported)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished children are reaped by the kernel: no zombies
    listener = listen(paths)
    _log.info("probe worker %s ready on %s (idle stop after %g s)", spec.key(), paths.socket, spec.idle_s)
    served, last = 0, time.monotonic()
    while True:
        if stopped_when_idle(listener, paths, spec.idle_s - (time.monotonic() - last)):
            _log.info("probe worker %s: idle for %g s after %d jobs; stopping", spec.key(), spec.idle_s, served)
            return 0
        conn, _ = listener.accept()
        request = receive(conn)
        if request is None or request.get("op") != "fit":
            if request is not None and request.get("op") == "stop":
                with held(paths.lock):
                    paths.socket.unlink(missing_ok=True)
                listener.close()
                conn.close()
                _log.info("probe worker %s: asked to stop after %d jobs", spec.key(), served)
                return 0
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the job's own subprocesses are waited for as usual
            listener.close()
            _child(conn, request)
        conn.close()  # the child answers on its copy
        served += 1
        last = time.monotonic()


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1]))
