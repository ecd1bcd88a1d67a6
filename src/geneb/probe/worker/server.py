"""The probe worker: one process per node imports the probing stack once (pandas, scikit-learn, scipy, h5py:
about 1.3 s of every probe job's 2 s on a quiet 2-core machine, more under load) and forks a child for each
probe job a `fit_probes` shim sends it. The child is a copy of the warm process, so it starts in
milliseconds, runs `geneb.probe.job.fit_probes` and answers on the job's own connection; the server itself only
accepts and forks, so a node's concurrent probe jobs run in parallel, each in its own process, exactly as
before, with no import left to pay.

Started by `client.fit_probes_via_worker` as `python -m geneb.probe.worker.server <spec.json>`, detached, in the
job's interpreter. A child appends its log (records and stderr) to the job's log file. It writes its outputs
under temporary names and renames them to their final names only while the job still waits; a watcher thread
ends the child at once, removing what it wrote, when the job goes away (cancelled or killed), so a stopped job
never leaves a file a later run trusts. The server stops after `idle_s` seconds without a job.
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
from pathlib import Path
from typing import Any

from geneb.core import integrity
from geneb.core.ipc import ServerPaths, error_message, held, listen, receive, send, stopped_when_idle
from geneb.probe.worker.spec import WorkerSpec

log = logging.getLogger("geneb.probe.worker")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=LOG_FORMAT, force=True)
        logging.captureWarnings(True)
        os.chdir(request["cwd"])
        kwargs = dict(request["kwargs"])
        finals = {key: kwargs[key] for key in ("scores_out", "predictions_out")}
        temporaries = [_temporary(path) for path in finals.values()]
        threading.Thread(target=_watch, args=(conn, temporaries), daemon=True).start()
        log.info("probe job %s / %s: run by probe worker pid %d (forked)", kwargs["model"], kwargs["task"], os.getpid())
        from geneb.probe.job import fit_probes

        kwargs.update(zip(finals, map(str, temporaries)))
        try:
            fit_probes(**kwargs)
        except Exception as err:  # the job re-raises it under its own class
            log.exception("probe job failed")
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


def serve(spec_path: str | Path) -> int:
    """Run the worker described by the spec file at `spec_path` (`WorkerSpec` as JSON) until idle; returns 0."""
    spec = WorkerSpec(**json.loads(Path(spec_path).read_text(encoding="utf-8")))
    paths = ServerPaths(Path(spec_path).parent, spec.key())
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=LOG_FORMAT, force=True)
    from geneb.extract.cache import configure_hdf5_locking

    configure_hdf5_locking(spec.hdf5_locking)  # before h5py is imported (NFS/Lustre lock refusals)
    import geneb.probe.job  # noqa: F401  (the point of the worker: every child starts with it imported)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished children are reaped by the kernel: no zombies
    listener = listen(paths)
    log.info("probe worker %s ready on %s (idle stop after %g s)", spec.key(), paths.socket, spec.idle_s)
    served, last = 0, time.monotonic()
    while True:
        if stopped_when_idle(listener, paths, spec.idle_s - (time.monotonic() - last)):
            log.info("probe worker %s: idle for %g s after %d jobs; stopping", spec.key(), spec.idle_s, served)
            return 0
        conn, _ = listener.accept()
        request = receive(conn)
        if request is None or request.get("op") != "fit":
            if request is not None and request.get("op") == "stop":
                with held(paths.lock):
                    paths.socket.unlink(missing_ok=True)
                listener.close()
                conn.close()
                log.info("probe worker %s: asked to stop after %d jobs", spec.key(), served)
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
    sys.exit(serve(sys.argv[1]))
