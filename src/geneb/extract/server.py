"""The model server and what an extraction job calls to use it.

The model server: load one model once (geneb.extract.step.load_model, load-time checks included), then embed
each task an extraction job sends (geneb.extract.step.extract_task with the loaded model), one at a time, until no
request has come for `idle_s` seconds.

Started by `client.extract_via_server` as `python -m geneb.extract.server <spec.json>`, in the
interpreter of the model's software environment, detached from the job that started it. Its stderr is the
server's log (`<key>.log`); each request's log lines also go to the job as they are made (progress lines of a
long split included), and the job writes them into its own log. An output is written under a temporary name and renamed to its final name
only while the job that asked for it still waits, so a cancelled job leaves nothing under its output name.
A load that fails writes the error for the waiting job (`<key>.<pid>.failed.json`) and exits 1.

What an extraction job calls: embed one task through the node's model server for its model, starting the
server when none runs (geneb.extract.server), so a node's jobs for one model load it once.

`extract_via_server` connects to the server with the job's key (protocol.ServerSpec.key) under the key's
lock, or starts one and waits for it to load (or to fail: its error is raised here as if the job had
raised it), sends the task, writes the server's log lines for it into the job's log as they come (a long split's
progress lines while it runs), and raises the
server's error, if any, under its own class. A server that dies during the request is an ExtractionError
naming its log.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.core.ipc import (
    ServerPaths,
    ServerSpec,
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
from geneb.extract.batch_plan import ExecutionOptions

_log = logging.getLogger("geneb.extract.server")
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StopServer(Exception):
    """A `stop` request: the server exits after answering none (a test's `extraction_support.stop_servers`)."""


@contextmanager
def _captured_log(forward: Callable[[str], bool] | None = None) -> Iterator[list[str]]:
    """Collect the formatted log records of this process during the block (they also reach the server's log).
    forward: called with each line as it is made (`LiveLog`); a line it forwarded (True) is not collected."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            line = self.format(record)
            if forward is None or not forward(line):
                lines.append(line)

    handler = Collect(level=logging.INFO)
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


class LiveLog:
    """Send log lines to the waiting job as they are made (`{"op": "log", "line": ...}` messages before the answer),
    so the job's log shows a long split's progress lines (geneb.encoders.engine.batching) while it runs, not at its
    end. After a failed send (the job left) it forwards nothing more."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.open = True

    def __call__(self, line: str) -> bool:
        if not self.open:
            return False
        try:
            send(self.conn, {"op": "log", "line": line})
        except OSError:
            self.open = False
            return False
        return True


def _still_waiting(conn: socket.socket) -> bool:
    """Whether the job on `conn` is still connected (it has sent its one request and now only reads)."""
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        conn.setblocking(True)


def _handle(conn: socket.socket, loaded: Any, spec: ServerSpec, load_log: list[str], served: int) -> bool:
    """Serve one request on `conn`: embed the task it names and answer. Returns whether an output was written."""
    from geneb.extract.step import extract_task

    request = receive(conn)
    if request is not None and request.get("op") == "stop":
        raise StopServer
    if request is None or request.get("op") != "extract":
        return False
    out = Path(request["out_path"])
    tmp = out.with_name(f".tmp-{out.name}.server-{os.getpid()}")  # a name no reader takes for a result
    live = LiveLog(conn)
    with _captured_log(live) as lines:
        if served == 0:
            lines.extend(line for line in load_log if not live(line))
        _log.info(
            "model %s: served by model server pid %d (load %s, %.1f s); task %d of this server",
            spec.settings.get("model"),
            os.getpid(),
            loaded.load_id,
            loaded.seconds_load,
            served + 1,
        )
        try:
            if request.get("settings_hash") != spec.settings_hash:
                raise ValueError(
                    f"model server {spec.key()} holds settings {spec.settings_hash}, "
                    f"the job asks for {request.get('settings_hash')}"
                )
            extract_task(
                request["settings"],
                request["task_dir"],
                tmp,
                device=spec.device,
                batch_size=spec.batch_size,
                batch_tokens=spec.batch_tokens,
                threads=spec.threads,
                hdf5_locking=spec.hdf5_locking,
                loaded=loaded,
            )
        except Exception as err:  # the job re-raises it under its own name
            _log.exception("request for %s failed", out)
            tmp.unlink(missing_ok=True)
            send(conn, {**error_message(err), "log": lines})
            return False
    if not _still_waiting(conn):
        integrity.discard(tmp)  # the job was cancelled: its output name stays empty
        _log.warning("the job asking for %s left before the file was complete; discarded", out)
        return False
    integrity.replace(tmp, out)  # its digest (geneb.core.integrity) goes with it
    send(conn, {"ok": True, "log": lines, "load_id": loaded.load_id})
    return True


def _serve(spec_path: str | Path) -> int:
    """Run the server described by the spec file at `spec_path` (`ServerSpec` as JSON) until idle. Returns
    the exit status: 0 after an idle stop, 1 when the model could not be loaded."""
    spec = ServerSpec(**json.loads(Path(spec_path).read_text(encoding="utf-8")))
    paths = ServerPaths(Path(spec_path).parent, spec.key())
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=_LOG_FORMAT, force=True)
    logging.captureWarnings(True)
    from geneb.extract.cache import configure_hdf5_locking

    configure_hdf5_locking(spec.hdf5_locking)  # before h5py is imported (NFS/Lustre lock refusals)
    from geneb.extract.step import load_model

    with _captured_log() as load_log:
        try:
            loaded = load_model(
                spec.settings,
                checks_dir=spec.checks_dir,
                device=spec.device,
                batch_size=spec.batch_size,
                batch_tokens=spec.batch_tokens,
                threads=spec.threads,
                load_checks_policy=spec.load_checks,
            )
        except Exception as err:
            _log.exception("model %s could not be loaded", spec.settings.get("model"))
            paths.failure(os.getpid()).write_text(json.dumps(error_message(err)), encoding="utf-8")
            return 1
    listener = listen(paths)
    _log.info("model server %s ready on %s (idle stop after %g s)", spec.key(), paths.socket, spec.idle_s)
    served = 0
    last = time.monotonic()
    while True:
        if stopped_when_idle(listener, paths, spec.idle_s - (time.monotonic() - last)):
            _log.info("model server %s: idle for %g s after %d tasks; stopping", spec.key(), spec.idle_s, served)
            return 0
        conn, _ = listener.accept()
        with conn:
            try:
                served += _handle(conn, loaded, spec, load_log, served)
            except OSError as err:  # the job went away mid-answer; the server carries on
                _log.warning("connection lost: %s", err)
            except StopServer:
                with held(paths.lock):
                    paths.socket.unlink(missing_ok=True)
                listener.close()
                _log.info("model server %s: asked to stop after %d tasks", spec.key(), served)
                return 0
        last = time.monotonic()


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1]))


#: seconds between looks at a starting server (socket there yet? process gone?)
_POLL_S = 0.05


def connect(path: Path) -> socket.socket | None:
    """A connection to the server socket at `path`, or None (no socket, or a stale one left by a killed
    server, which is removed)."""
    if not path.exists():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        conn.close()
        path.unlink(missing_ok=True)
        return None
    return conn


def spawn(
    module: str, python: str, paths: ServerPaths, spec: dict[str, Any], env: dict[str, str] | None
) -> tuple[socket.socket | None, subprocess.Popen]:
    """Write `spec` to `paths.spec`, start `python -m module <spec file>` detached (its output to `paths.log`)
    and wait until it listens: (a connection, the process), or (None, the process) when it exited first."""
    write_text_atomic(paths.spec, json.dumps(spec))
    with open(paths.log, "ab") as log_file:
        proc = subprocess.Popen(
            [python, "-m", module, str(paths.spec)],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,  # not killed with the job that started it; it stops when idle
            env=env,
        )
    while True:
        conn = connect(paths.socket)
        if conn is not None or proc.poll() is not None:
            return conn, proc
        time.sleep(_POLL_S)


def _start(spec: ServerSpec, paths: ServerPaths, env: dict[str, str] | None) -> socket.socket:
    """Start the server of `spec` (process environment `env`, default this one's) and return a connection
    once it listens. Raises its load error."""
    conn, proc = spawn("geneb.extract.server", spec.python, paths, spec.__dict__, env)
    if conn is not None:
        return conn
    failure = paths.failure(proc.pid)
    if failure.exists():
        message = json.loads(failure.read_text(encoding="utf-8"))
        failure.unlink(missing_ok=True)
        raise rebuild_error(message)
    from geneb.core.errors import ExtractionError

    raise ExtractionError(
        f"model {spec.settings.get('model')}: the model server exited with status {proc.returncode} before it "
        f"was ready; its log: {paths.log}"
    )


def extract_via_server(
    settings: dict[str, Any],
    task_dir: str | Path,
    out_path: str | Path,
    *,
    execution: ExecutionOptions | None = None,
    threads: int | None = None,
    idle_s: float | None = None,
    python: str | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Embed the prepared task in `task_dir` into `out_path` (as geneb.extract.step.extract_task does) with the
    model loaded by this node's model server for `settings` and these execution knobs, starting it when
    needed. execution: the execution knobs (None: the config schema's defaults); the server loads with its
    device, batch_size, batch_tokens, hdf5_locking and load_checks policy. threads: torch intra-op threads of the
    server (None: torch's default). idle_s: seconds a server waits for the next task before it stops (None:
    `execution.model_server_idle_s`). python: the interpreter the server runs in (default: this one, i.e. the
    job's environment); env: the server's process environment (default: this one's).

    Raises the server's error under its own class (load errors, the extraction's errors naming model, task
    and split), or ExtractionError when the server dies during the request.
    """
    from geneb.core.errors import ExtractionError
    from geneb.registry.load import extraction_hash

    options = ExecutionOptions.of(execution)
    out_path = Path(out_path).resolve()
    spec = ServerSpec(
        settings=dict(settings),
        settings_hash=extraction_hash(dict(settings)),
        checks_dir=str(out_path.parents[1]),  # <model>/<settings hash>/ of <task>/<task hash>.h5
        device=options.device,
        batch_size=int(options.batch_size),
        batch_tokens=options.batch_tokens,
        threads=threads,
        hdf5_locking=options.hdf5_locking,
        python=python or sys.executable,
        idle_s=float(options.model_server_idle_s if idle_s is None else idle_s),
        code=code_fingerprint(),
        load_checks=options.load_checks,
    )
    paths = ServerPaths(server_dir(), spec.key())
    request = {
        "op": "extract",
        "settings": spec.settings,
        "settings_hash": spec.settings_hash,
        "task_dir": str(Path(task_dir).resolve()),
        "out_path": str(out_path),
    }
    with held(paths.lock):  # the server stops when idle only under this lock: this request reaches it
        conn = connect(paths.socket) or _start(spec, paths, env)
        send(conn, request)
    with conn, conn.makefile("rb") as reader:
        while True:  # the server's log lines as they come (a long split's progress), then its answer
            answer = _message(reader)
            if answer is None or answer.get("op") != "log":
                break
            sys.stderr.write(str(answer.get("line")) + "\n")  # the job's log (geneb.core.logs.log_to_file)
            sys.stderr.flush()
    if answer is None:
        raise ExtractionError(
            f"model {spec.settings.get('model')}: the model server stopped while embedding {out_path.name} "
            f"(killed, or out of memory?); its log: {paths.log}"
        )
    for line in answer.get("log", []):
        sys.stderr.write(line + "\n")  # the job's log (geneb.core.logs.log_to_file)
    sys.stderr.flush()
    if not answer.get("ok"):
        raise rebuild_error(answer)
    if not out_path.exists():
        raise ExtractionError(f"model server reported {out_path} written, but it is not there")
    os.utime(out_path)  # the job's own output time, after its inputs (Snakemake's mtime rule)


def _message(reader: Any) -> dict[str, Any] | None:
    """The next message (one JSON line) from a connection's reader; None when the server closed the connection
    before a whole line came."""
    line = reader.readline()
    if not line.endswith(b"\n"):
        return None
    return json.loads(line)
