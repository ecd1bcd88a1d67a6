"""What an extraction job calls: embed one task through the node's model server for its model, starting the
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
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from geneb.core.atomic import write_text_atomic
from geneb.core.ipc import (
    ServerPaths,
    ServerSpec,
    code_fingerprint,
    held,
    rebuild_error,
    send,
    server_dir,
)
from geneb.extract.options import ExecutionOptions

#: seconds between looks at a starting server (socket there yet? process gone?)
POLL_S = 0.05


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
        time.sleep(POLL_S)


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
    from geneb.registry.extraction import extraction_hash

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


def stop_servers(folder: str | Path | None = None) -> int:
    """Ask every model server with a socket in `folder` (default: `server_dir()`) to stop now, instead of at
    its idle timeout; returns how many were asked. A server busy with a task stops after it."""
    asked = 0
    for sock in sorted(Path(folder or server_dir()).glob("*.sock")):
        conn = connect(sock)
        if conn is None:
            continue
        with conn:
            send(conn, {"op": "stop"})
        asked += 1
    return asked
