"""A stand-in for the Hugging Face hub API on 127.0.0.1, for tests of pinning (huggingface_hub honours
HF_ENDPOINT and `HfApi(endpoint=...)`): GET /api/models/<org>/<name>/revision/<ref> answers {"sha": ...} for
the repositories it knows and 404 for the others; every request path is recorded."""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def fake_sha(hub_id: str) -> str:
    """The commit the fake hub reports for `hub_id`'s main: sha1 of the id (40 hex)."""
    return hashlib.sha1(hub_id.encode()).hexdigest()


@contextmanager
def fake_hub(repos: dict[str, str]) -> Iterator[tuple[str, list[str]]]:
    """Serve `repos` ({hub id: commit of main}); yields (endpoint URL, request paths seen)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.path)
            prefix, _, rest = self.path.partition("/api/models/")
            repo, _, ref = rest.partition("/revision/")
            if not prefix and repo in repos and ref.split("?")[0] == "main":
                body = json.dumps({"id": repo, "sha": repos[repo], "siblings": []}).encode()
                self.send_response(200)
            else:
                body = json.dumps({"error": "Repository not found"}).encode()
                self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serve(Handler) as url:
        yield url, seen


@contextmanager
def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_endpoint() -> str:
    """An http URL on 127.0.0.1 where nothing listens (connection refused: the offline case)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
