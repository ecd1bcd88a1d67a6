"""The model server: load one model once (geneb.extract.step.load_model, load-time checks included), then embed
each task an extraction job sends (geneb.extract.step.extract_task with the loaded model), one at a time, until no
request has come for `idle_s` seconds.

Started by `client.extract_via_server` as `python -m geneb.extract.server <spec.json>`, in the
interpreter of the model's software environment, detached from the job that started it. Its stderr is the
server's log (`<key>.log`); each request's log lines also go to the job as they are made (progress lines of a
long split included), and the job writes them into its own log. An output is written under a temporary name and renamed to its final name
only while the job that asked for it still waits, so a cancelled job leaves nothing under its output name.
A load that fails writes the error for the waiting job (`<key>.<pid>.failed.json`) and exits 1.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from geneb.core import integrity
from geneb.core.ipc import (
    ServerPaths,
    ServerSpec,
    error_message,
    held,
    listen,
    receive,
    send,
    stopped_when_idle,
)

log = logging.getLogger("geneb.extract.server")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StopServer(Exception):
    """A `stop` request: the server exits after answering none (`client.stop_servers`)."""


@contextmanager
def captured_log(forward: Callable[[str], bool] | None = None) -> Iterator[list[str]]:
    """Collect the formatted log records of this process during the block (they also reach the server's log).
    forward: called with each line as it is made (`LiveLog`); a line it forwarded (True) is not collected."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            line = self.format(record)
            if forward is None or not forward(line):
                lines.append(line)

    handler = Collect(level=logging.INFO)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)


class LiveLog:
    """Send log lines to the waiting job as they are made (`{"op": "log", "line": ...}` messages before the answer),
    so the job's log shows a long split's progress lines (geneb.encoders.engine.progress) while it runs, not at its
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


def still_waiting(conn: socket.socket) -> bool:
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


def handle(conn: socket.socket, loaded: Any, spec: ServerSpec, load_log: list[str], served: int) -> bool:
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
    with captured_log(live) as lines:
        if served == 0:
            lines.extend(line for line in load_log if not live(line))
        log.info(
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
            log.exception("request for %s failed", out)
            tmp.unlink(missing_ok=True)
            send(conn, {**error_message(err), "log": lines})
            return False
    if not still_waiting(conn):
        integrity.discard(tmp)  # the job was cancelled: its output name stays empty
        log.warning("the job asking for %s left before the file was complete; discarded", out)
        return False
    integrity.replace(tmp, out)  # its digest (geneb.core.integrity) goes with it
    send(conn, {"ok": True, "log": lines, "load_id": loaded.load_id})
    return True


def serve(spec_path: str | Path) -> int:
    """Run the server described by the spec file at `spec_path` (`ServerSpec` as JSON) until idle. Returns
    the exit status: 0 after an idle stop, 1 when the model could not be loaded."""
    spec = ServerSpec(**json.loads(Path(spec_path).read_text(encoding="utf-8")))
    paths = ServerPaths(Path(spec_path).parent, spec.key())
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=LOG_FORMAT, force=True)
    logging.captureWarnings(True)
    from geneb.extract.cache import configure_hdf5_locking

    configure_hdf5_locking(spec.hdf5_locking)  # before h5py is imported (NFS/Lustre lock refusals)
    from geneb.extract.step import load_model

    with captured_log() as load_log:
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
            log.exception("model %s could not be loaded", spec.settings.get("model"))
            paths.failure(os.getpid()).write_text(json.dumps(error_message(err)), encoding="utf-8")
            return 1
    listener = listen(paths)
    log.info("model server %s ready on %s (idle stop after %g s)", spec.key(), paths.socket, spec.idle_s)
    served = 0
    last = time.monotonic()
    while True:
        if stopped_when_idle(listener, paths, spec.idle_s - (time.monotonic() - last)):
            log.info("model server %s: idle for %g s after %d tasks; stopping", spec.key(), spec.idle_s, served)
            return 0
        conn, _ = listener.accept()
        with conn:
            try:
                served += handle(conn, loaded, spec, load_log, served)
            except OSError as err:  # the job went away mid-answer; the server carries on
                log.warning("connection lost: %s", err)
            except StopServer:
                with held(paths.lock):
                    paths.socket.unlink(missing_ok=True)
                listener.close()
                log.info("model server %s: asked to stop after %d tasks", spec.key(), served)
                return 0
        last = time.monotonic()


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
