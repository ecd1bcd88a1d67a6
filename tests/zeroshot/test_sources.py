"""A zero-shot task from a folder, an http mirror on 127.0.0.1 (digests checked) and a pinned hub dataset."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from geneb.tasks.sources import TaskDigestError, TaskSourceError
from geneb.zeroshot.task import load_zeroshot_task, write_zeroshot_task
from hub_support import serve

ROWS = pd.DataFrame({"sequence_a": ["ACGTAC", "GGGCCA"], "sequence_b": ["CATGCA", "ACCGGG"], "group": ["x", "y"]})


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "served"
    write_zeroshot_task(root / "toy", ROWS, {"kind": "paired", "name": "toy"})
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_folder_and_http_give_the_same_task(served, tmp_path):
    root, url = served
    local = load_zeroshot_task(str(root), "toy")
    remote = load_zeroshot_task(url, "toy", download_dir=tmp_path / "dl")
    assert remote.data_sha256 == local.data_sha256 and remote.kind == "paired" and remote.n == 2
    assert len(list((tmp_path / "dl").glob("*/toy/rows.tsv"))) == 1


def test_http_refuses_a_changed_rows_file(served, tmp_path):
    root, url = served
    rows = root / "toy" / "rows.tsv"
    rows.write_text(rows.read_text().replace("ACGTAC", "ACGTAA"))
    with pytest.raises(TaskDigestError, match="rows.tsv"):
        load_zeroshot_task(url, "toy", download_dir=tmp_path / "dl")


def test_http_refuses_a_cached_copy_changed_after_download(served, tmp_path):
    _, url = served
    load_zeroshot_task(url, "toy", download_dir=tmp_path / "dl")
    cached = next((tmp_path / "dl").glob("*/toy/rows.tsv"))
    cached.write_text(cached.read_text().replace("GGGCCA", "GGGCCC"))
    with pytest.raises(TaskDigestError, match="changed on disk after the download"):
        load_zeroshot_task(url, "toy", download_dir=tmp_path / "dl")


def test_missing_task_is_named(served, tmp_path):
    root, url = served
    with pytest.raises(TaskSourceError, match="'nope'"):
        load_zeroshot_task(url, "nope", download_dir=tmp_path / "dl")
    with pytest.raises(TaskSourceError, match="no folder"):
        load_zeroshot_task(str(root), "nope")


def _hub_handler(root: Path, repo: str, revision: str, seen: list[str]) -> type[http.server.BaseHTTPRequestHandler]:
    """The hub's file route for one dataset at one commit: HEAD and GET /datasets/<repo>/resolve/<revision>/<path>
    with the headers huggingface_hub reads (X-Repo-Commit, ETag, Content-Length); 404 for anything else."""
    prefix = f"/datasets/{repo}/resolve/{revision}/zeroshot/"

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, body: bool) -> None:
            seen.append(f"{self.command} {self.path}")
            file = root / self.path.removeprefix(prefix) if self.path.startswith(prefix) else None
            if file is None or not file.is_file():
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = file.read_bytes()
            self.send_response(200)
            self.send_header("X-Repo-Commit", revision)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_HEAD(self):  # noqa: N802 - http.server's name
            self._answer(body=False)

        def do_GET(self):  # noqa: N802
            self._answer(body=True)

        def log_message(self, *args):
            pass

    return Handler


LOAD = (
    "import sys; from geneb.zeroshot.task import load_zeroshot_task; "
    "t = load_zeroshot_task(sys.argv[1], 'toy'); print(t.n, t.data_sha256)"
)


def _load_in_a_fresh_process(spec: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE at import: each case gets its own interpreter
    return subprocess.run(
        [sys.executable, "-c", LOAD, spec], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_hub_route_downloads_the_pinned_files_and_reads_them_offline_from_the_cache(served, tmp_path):
    root, _ = served
    revision, seen = "a" * 40, []
    local = load_zeroshot_task(str(root), "toy")
    env = {"HF_HUB_CACHE": str(tmp_path / "hub-cache"), "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0"}
    with serve(_hub_handler(root, "org/data", revision, seen)) as endpoint:
        proc = _load_in_a_fresh_process(f"hf:org/data@{revision}", {**env, "HF_ENDPOINT": endpoint})
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.split() == ["2", local.data_sha256]
        assert f"GET /datasets/org/data/resolve/{revision}/zeroshot/toy/rows.tsv" in seen
        # a revision the hub does not have is an error naming the task and the source
        proc = _load_in_a_fresh_process(f"hf:org/data@{'b' * 40}", {**env, "HF_ENDPOINT": endpoint})
        assert proc.returncode != 0 and "cannot fetch" in proc.stderr and "'toy'" in proc.stderr
    # the server is gone: offline, the pinned files come from the hub cache
    proc = _load_in_a_fresh_process(f"hf:org/data@{revision}", {**env, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["2", local.data_sha256]
    with pytest.raises(TaskSourceError, match="pin a 40-hex revision"):
        load_zeroshot_task("hf:org/data@main", "toy")
