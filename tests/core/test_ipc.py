"""geneb.core.ipc: a server's socket path appears only once the socket listens."""

from __future__ import annotations

import socket

from geneb.core import ipc
from geneb.core.ipc import ServerPaths, listen


def test_socket_path_appears_only_when_listening(tmp_path, monkeypatch):
    """A client that finds the path between bind() and listen() is refused and removes the file as a dead server's
    (geneb.extract.server.connect): so at listen() time the final path must not be a socket yet."""
    paths = ServerPaths(tmp_path, "k" * 16)
    at_listen: list[bool] = []

    class Recording(socket.socket):
        def listen(self, backlog: int = 0) -> None:
            at_listen.append(paths.socket.is_socket())
            super().listen(backlog)

    monkeypatch.setattr(ipc.socket, "socket", Recording)
    paths.socket.write_text("stale")  # a killed server's file is replaced
    listener = listen(paths)
    try:
        assert at_listen == [False]
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(paths.socket))
        conn.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == [paths.socket.name]
    finally:
        listener.close()
