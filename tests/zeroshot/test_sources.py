"""A zero-shot task from a folder, an http mirror on 127.0.0.1 (digests checked) and a pinned hub dataset."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from geneb.tasks.source_files import TaskDigestError, TaskSourceError
from geneb.zeroshot.read import write_zeroshot_task
from geneb.zeroshot.sources import load_zeroshot_task

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


def test_hub_route_reads_the_pinned_files(served, monkeypatch, tmp_path):
    root, _ = served
    revision = "a" * 40
    calls = []

    def fake_download(repo: str, filename: str, *, repo_type: str, revision: str) -> str:
        calls.append((repo, filename, repo_type, revision))
        target = tmp_path / "hub" / revision / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / filename.removeprefix("zeroshot/"), target)
        return str(target)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    task = load_zeroshot_task(f"hf:org/data@{revision}", "toy")
    assert task.n == 2
    assert calls[1] == ("org/data", "zeroshot/toy/rows.tsv", "dataset", revision)
    with pytest.raises(TaskSourceError, match="pin a 40-hex revision"):
        load_zeroshot_task("hf:org/data@main", "toy")
