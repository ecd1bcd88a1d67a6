"""What the model server and its clients agree on: where a server for one (model, settings, execution,
code) lives, and the messages they exchange.

A server is found by its key: the settings hash, the execution knobs that shape the loaded model (device,
batch size or token budget, threads, HDF5 locking), the Python interpreter (the model's software environment) and a
fingerprint of GENEB's own source files, so a changed setting, environment or code never reuses a model
loaded by another. Its files live in a private per-user folder on the node (`server_dir`): `<key>.sock`
(the Unix socket), `<key>.lock` (taken while a client connects or starts a server, and by a server that
stops when idle, so no request is lost to a stopping server), `<key>.log` (the server's own log) and
`<key>.spec.json` (what to load). Messages are one JSON object per line.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import select
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import geneb.core.paths as paths
from geneb.core.provenance import stable_hash

#: environment variable naming the folder of the servers' sockets (default: a private folder in TMPDIR)
_SERVER_DIR_ENV = "GENEB_MODEL_SERVER_DIR"
#: a Unix socket path may hold at most 107 bytes; a longer TMPDIR falls back to /tmp
_MAX_SOCKET_PATH = 100
#: the kernel's limit on a Unix socket path (sun_path holds 108 bytes with its NUL)
_SOCKET_PATH_MAX = 107


def server_dir() -> Path:
    """The folder of this user's model servers on this node, created private (0700). A Slurm job's TMPDIR
    is the job's own, so the jobs of one allocation share servers and another allocation starts its own.
    Raises PermissionError when the folder exists but belongs to another user."""
    base = os.environ.get(_SERVER_DIR_ENV) or str(Path(tempfile.gettempdir()) / f"geneb-models-{os.getuid()}")
    if len(base) + 22 > _MAX_SOCKET_PATH:
        base = f"/tmp/geneb-models-{os.getuid()}"
    folder = Path(base)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise PermissionError(f"model server folder {folder} belongs to another user; set {_SERVER_DIR_ENV}")
    return folder


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """12-hex hash of the path, size and modification time of every Python file of the running geneb
    package: a server started by other code is never asked to embed."""
    root = paths.PACKAGE_DIR
    stats = sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*.py"))
    return stable_hash(stats)


@dataclass(frozen=True)
class ServerSpec:
    """What a server loads and how. settings: the resolved extraction-settings mapping (the rule's params).
    settings_hash: its `extraction_hash`. checks_dir: where the passed-checks record of these settings lives
    (the folder of the model's embeddings). idle_s: seconds without a request after which the server stops.
    load_checks: how its one load treats a passed-checks record (geneb.extract.step.load_model's policy)."""

    settings: dict[str, Any]
    settings_hash: str
    checks_dir: str
    device: str
    batch_size: int
    batch_tokens: int | str | None
    threads: int | None
    hdf5_locking: str
    python: str
    idle_s: float
    code: str
    load_checks: str = "record"

    def key(self) -> str:
        """16-hex key of the server (the module docstring says what it covers; idle_s and checks_dir do not)."""
        ident = {k: v for k, v in asdict(self).items() if k not in ("settings", "idle_s", "checks_dir")}
        return stable_hash(ident, length=16)


@dataclass(frozen=True)
class ServerPaths:
    """The files of the server with `key` in `folder`."""

    folder: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.folder / f"{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.folder / f"{self.key}.lock"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.key}.log"

    @property
    def spec(self) -> Path:
        return self.folder / f"{self.key}.spec.json"

    def failure(self, pid: int) -> Path:
        """Where a server that could not load writes its error (one file per server process)."""
        return self.folder / f"{self.key}.{pid}.failed.json"


@contextlib.contextmanager
def held(lock_path: Path) -> Iterator[None]:
    """Hold the exclusive advisory lock on `lock_path` (created) for the block."""
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def listen(paths: ServerPaths) -> socket.socket:
    """A listening Unix socket at `paths.socket` (a stale socket file there is replaced).

    The socket is bound and listening under a temporary name first and then renamed into place: a client that
    found the path between bind() and listen() would get ECONNREFUSED, take the socket for a killed server's
    stale file and remove it (`geneb.extract.server.connect`), leaving this server unreachable until its idle
    stop. Where the temporary name would not fit a socket path (SOCKET_PATH_MAX), it binds in place."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = paths.socket.with_name(f"{paths.socket.name}.{os.getpid()}")
    if len(str(staging)) > _SOCKET_PATH_MAX:
        paths.socket.unlink(missing_ok=True)
        listener.bind(str(paths.socket))
        listener.listen(64)
        return listener
    staging.unlink(missing_ok=True)
    listener.bind(str(staging))
    listener.listen(64)
    os.replace(staging, paths.socket)
    return listener


def stopped_when_idle(listener: socket.socket, paths: ServerPaths, wait_s: float) -> bool:
    """Wait up to `wait_s` seconds for a connection on `listener`; when none comes, close it under the
    server's lock (a client connects only under that lock, so none is lost to the stop) and return True."""
    ready, _, _ = select.select([listener], [], [], max(0.0, wait_s))
    if ready:
        return False
    with held(paths.lock):
        ready, _, _ = select.select([listener], [], [], 0)
        if ready:
            return False
        paths.socket.unlink(missing_ok=True)
        listener.close()
        return True


def send(conn: socket.socket, message: dict[str, Any]) -> None:
    """Send one message (a JSON object and a newline)."""
    conn.sendall(json.dumps(message).encode() + b"\n")


def receive(conn: socket.socket) -> dict[str, Any] | None:
    """Read one message; None when the other side closed the connection before a whole line came."""
    chunks = []
    while True:
        block = conn.recv(1 << 16)
        if not block:
            return None
        chunks.append(block)
        if block.endswith(b"\n"):
            return json.loads(b"".join(chunks))


def error_message(err: BaseException) -> dict[str, Any]:
    """An exception as a message: its class (module and name), text and, for an ExtractionError, its rows."""
    rows = getattr(err, "rows", None)
    return {
        "ok": False,
        "error_module": type(err).__module__,
        "error_type": type(err).__name__,
        "message": str(err),
        "rows": [int(r) for r in rows] if rows is not None else None,
    }


def rebuild_error(message: dict[str, Any]) -> Exception:
    """The exception an `error_message` describes, as its own class where that is a GENEB or built-in error
    taking one message (so the job's one-line error reads as if it had been raised in the job), else an
    ExtractionError naming the original class."""
    import importlib

    from geneb.core.errors import ExtractionError

    module, name, text = message.get("error_module", ""), message.get("error_type", ""), message.get("message", "")
    cls: Any = None
    if module == "builtins" or module.startswith("geneb."):
        with contextlib.suppress(ImportError, AttributeError):
            cls = getattr(importlib.import_module(module), name)
    err: Exception
    try:
        err = cls(text) if isinstance(cls, type) and issubclass(cls, Exception) else ExtractionError(f"{name}: {text}")
    except TypeError:
        err = ExtractionError(f"{name}: {text}")
    if message.get("rows") is not None:
        err.rows = message["rows"]  # type: ignore[attr-defined]  # a rebuilt error carries the rows the job named
    return err
