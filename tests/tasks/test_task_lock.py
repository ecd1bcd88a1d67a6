"""The task lock (geneb.tasks.catalogue): the first preparation records the sha256 and size of every source file it read,
and a later preparation whose files differ is refused naming task, file and both digests; against real mirrored
tasks, from a folder, a local http server (127.0.0.1) and a saved Hugging Face dataset. Also the http download's
overall deadline, and concurrent writers of one lockfile."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import multiprocessing
import shutil
import threading
import time

import pytest
import yaml

from geneb.tasks.catalogue import (
    TaskLockError,
    lock_identity,
    read_catalogue,
    read_lock,
    record_files,
    relock,
    task_row,
)
from geneb.tasks.prepare import prepare_from_params
from geneb.tasks.sources import HttpMirror, TaskDigestError, TaskSourceError, file_record, open_source

TASK = "ienhancer2l_strong_vs_weak"  # 1484 train / 200 test, 200 nt


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def params(catalogue, task=TASK):
    """What common.smk's task_params hands prepare_from_params (no planned identity: the lock is under test)."""
    row = task_row(catalogue, task)
    return {
        "catalogue_row": {k: row.get(k, "") for k in ("category", "n_classes", "task_set", "taxon_group", "source")},
        "alphabet": {"strip_whitespace": False, "u_to_t": False, "allow_iupac": True},
        "caps": {"max_train": 300, "max_test": 100},
        "cap_seed": 0,
    }


def prepare(tmp_path, catalogue, spec, lock, out="out", **download):
    return prepare_from_params(
        TASK, params(catalogue), spec, tmp_path / out / TASK / "card.json", lock_path=lock, download=download
    )


def flip_labels(path, n=None):
    """Flip the first `n` labels (all by default) of a 0/1 split file, in place; returns how many."""
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    n = len(lines) - 1 if n is None else n
    for i in range(1, n + 1):
        seq, label = lines[i].rsplit(",", 1)
        lines[i] = f"{seq},{1 - int(label)}"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return n


@pytest.fixture()
def mirror(tmp_path, shared):
    root = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, root / TASK)
    return root


@pytest.fixture()
def served(mirror):
    """The mirror folder served on 127.0.0.1; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_first_preparation_records_every_file_and_the_same_files_are_accepted(tmp_path, catalogue, mirror, shared):
    lock = tmp_path / "config" / "tasks.lock"
    prepare(tmp_path, catalogue, str(mirror), lock)
    entry = read_lock(lock)[TASK]
    assert set(entry["files"]) == {"train.csv.gz", "test.csv.gz", "meta.json"}
    for name, rec in entry["files"].items():
        assert rec == file_record(shared / "data/tasks" / TASK / name)
    assert entry["generation"] == 0 and entry["source"] == str(mirror)
    # the same files from another folder (a moved mirror): accepted, the lock unchanged
    moved = tmp_path / "moved"
    shutil.copytree(mirror, moved)
    text = lock.read_text()
    prepare(tmp_path, catalogue, str(moved), lock, out="again")
    assert lock.read_text() == text


def test_a_folder_source_with_a_changed_file_is_refused(tmp_path, catalogue, mirror):
    lock = tmp_path / "tasks.lock"
    prepare(tmp_path, catalogue, str(mirror), lock)
    expected = read_lock(lock)[TASK]["files"]["test.csv.gz"]["sha256"]
    flip_labels(mirror / TASK / "test.csv.gz", n=1)
    found = file_record(mirror / TASK / "test.csv.gz")["sha256"]
    with pytest.raises(TaskLockError) as err:
        prepare(tmp_path, catalogue, str(mirror), lock, out="b")
    msg = str(err.value)
    assert (
        f"task {TASK!r}" in msg and f"test.csv.gz: expected sha256 {expected}" in msg and f"found sha256 {found}" in msg
    )
    assert f"geneb tasks lock {TASK}" in msg and "train.csv.gz" not in msg  # only the file that changed
    assert not (tmp_path / "b" / TASK / "card.json").exists()
    report = json.loads((tmp_path / "b" / TASK / "validation.json").read_text())
    assert "TaskLockError" in json.dumps(report) and expected in json.dumps(report)


def test_a_folder_source_checks_the_digests_of_its_meta_json(tmp_path, catalogue, mirror):
    """A mirror folder used to ignore meta.json's sha256: a split that fails it is refused, naming both digests."""
    meta = json.loads((mirror / TASK / "meta.json").read_text())
    good = file_record(mirror / TASK / "train.csv.gz")["sha256"]
    meta["sha256"] = {"train.csv.gz": good, "test.csv.gz": "ab" * 32}
    (mirror / TASK / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(
        TaskDigestError, match=rf"test.csv.gz .* meta.json says {'ab' * 32}, the file has [0-9a-f]{{64}}"
    ):
        open_source(str(mirror)).source_files(TASK)
    meta["sha256"]["test.csv.gz"] = file_record(mirror / TASK / "test.csv.gz")["sha256"]
    (mirror / TASK / "meta.json").write_text(json.dumps(meta))
    assert set(open_source(str(mirror)).source_files(TASK)) == {"train.csv.gz", "test.csv.gz", "meta.json"}


def test_http_source_without_digests_serving_flipped_labels_is_refused_by_the_lock(
    tmp_path, catalogue, mirror, served, monkeypatch
):
    """The issue's case: a mirror whose meta.json has no digests serves 1,000 flipped training labels: accepted
    before (MCC 0.140 -> 0.000); refused now, by the lock the first preparation wrote."""
    assert "sha256" not in json.loads((mirror / TASK / "meta.json").read_text())
    monkeypatch.chdir(tmp_path)
    lock = tmp_path / "tasks.lock"
    prepare(tmp_path, catalogue, served, lock)
    locked = read_lock(lock)[TASK]["files"]
    assert locked["train.csv.gz"] == file_record(mirror / TASK / "train.csv.gz")
    assert flip_labels(mirror / TASK / "train.csv.gz", n=1000) == 1000
    flipped = file_record(mirror / TASK / "train.csv.gz")["sha256"]
    # another machine (a fresh download cache: resources/downloads of another working directory): refused
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path / "other")
    with pytest.raises(TaskLockError) as err:
        prepare(tmp_path, catalogue, served, lock, out="b")
    msg = str(err.value)
    assert f"task {TASK!r}" in msg and served in msg
    assert (
        f"train.csv.gz: expected sha256 {locked['train.csv.gz']['sha256']}" in msg and f"found sha256 {flipped}" in msg
    )


def test_a_cached_download_changed_on_disk_is_refused_on_the_next_use(tmp_path, catalogue, served, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the download cache is resources/downloads of the working directory
    lock = tmp_path / "tasks.lock"
    prepare(tmp_path, catalogue, served, lock)
    (cached,) = (tmp_path / "resources/downloads").glob(f"*/{TASK}/test.csv.gz")
    expected = read_lock(lock)[TASK]["files"]["test.csv.gz"]["sha256"]
    flip_labels(cached, n=3)  # a valid gzip CSV still: only a digest can tell
    with pytest.raises(
        TaskLockError,
        match=rf"test.csv.gz: expected sha256 {expected} \(.*\), found .*read from {cached}.*until it is deleted",
    ):
        prepare(tmp_path, catalogue, served, lock, out="b")


def test_a_cached_download_failing_meta_json_digests_is_refused(tmp_path, mirror, served):
    meta = json.loads((mirror / TASK / "meta.json").read_text())
    meta["sha256"] = {n: file_record(mirror / TASK / n)["sha256"] for n in ("train.csv.gz", "test.csv.gz")}
    (mirror / TASK / "meta.json").write_text(json.dumps(meta))
    source = HttpMirror(served, tmp_path / "dl")
    files = source.source_files(TASK)
    flip_labels(files["train.csv.gz"], n=2)
    with pytest.raises(TaskDigestError, match=r"cached download .*train.csv.gz .* changed on disk"):
        HttpMirror(served, tmp_path / "dl").source_files(TASK)


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Sends a 10,000-byte body one byte a second: each read waits 1 s, so a read timeout never fires."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("meta.json"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        try:
            for _ in range(10000):
                self.wfile.write(b"\x1f")
                self.wfile.flush()
                time.sleep(1.0)
        except OSError:
            pass


def test_a_server_sending_one_byte_a_second_fails_within_the_deadline(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        source = open_source(url, download_dir=tmp_path / "dl", deadline_s=3, read_timeout_s=30)
        start = time.monotonic()
        with pytest.raises(TaskSourceError) as err:
            source.source_files(TASK)
        elapsed = time.monotonic() - start
    finally:
        server.shutdown()
    assert 2.5 < elapsed < 6.0, elapsed  # the deadline, plus at most one 1-s read
    msg = str(err.value)
    assert f"{url}/{TASK}/train.csv.gz" in msg and "deadline of 3 s" in msg
    assert " bytes received" in msg and "task_download.deadline_s" in msg
    assert not list((tmp_path / "dl").rglob("train.csv.gz"))  # nothing partial is kept under the final name


def test_relock_accepts_new_data_and_counts_generations(tmp_path, mirror):
    lock = tmp_path / "tasks.lock"
    source = open_source(str(mirror))
    assert relock(lock, TASK, str(mirror), source.source_files(TASK))  # first lock: every file is new
    assert read_lock(lock)[TASK]["generation"] == 0
    text = lock.read_text()
    assert relock(lock, TASK, str(mirror), source.source_files(TASK)) == [] and lock.read_text() == text
    meta = json.loads((mirror / TASK / "meta.json").read_text())
    (mirror / TASK / "meta.json").write_text(json.dumps({**meta, "caveats": ["edited"]}))
    (change,) = relock(lock, TASK, str(mirror), source.source_files(TASK))
    assert change.name == "meta.json" and read_lock(lock)[TASK]["generation"] == 0  # notes are not data
    flip_labels(mirror / TASK / "test.csv.gz", n=1)
    (change,) = relock(lock, TASK, str(mirror), source.source_files(TASK))
    assert change.name == "test.csv.gz" and read_lock(lock)[TASK]["generation"] == 1
    entry = read_lock(lock)[TASK]
    # the generation is a remote task's new identity; a folder's identity is its content already
    assert lock_identity({"kind": "remote", "source": "http://x", "task": TASK}, entry)["lock_generation"] == 1
    assert lock_identity({"kind": "remote", "source": "http://x", "task": TASK}, {**entry, "generation": 0}) == {
        "kind": "remote",
        "source": "http://x",
        "task": TASK,
    }
    assert "lock_generation" not in lock_identity({"kind": "folder", "task": TASK, "files": {}}, entry)


def test_hf_saved_dataset_files_are_locked(tmp_path, catalogue, shared):
    datasets = pytest.importorskip("datasets")
    import pandas as pd

    parts = {
        s: datasets.Dataset.from_pandas(pd.read_csv(shared / f"data/tasks/{TASK}/{s}.csv.gz"))
        for s in ("train", "test")
    }
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "hf" / TASK))
    lock = tmp_path / "tasks.lock"
    prepare(tmp_path, catalogue, f"hf:{tmp_path / 'hf'}", lock)
    files = read_lock(lock)[TASK]["files"]
    assert "dataset_dict.json" in files and any(n.startswith("train/") and n.endswith(".arrow") for n in files)
    assert "state.json" not in {n.rsplit("/", 1)[-1] for n in files}
    shutil.rmtree(tmp_path / "hf" / TASK)
    parts["test"] = datasets.Dataset.from_pandas(pd.read_csv(shared / f"data/tasks/{TASK}/test.csv.gz").iloc[:-1])
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "hf" / TASK))
    with pytest.raises(TaskLockError, match=r"test/data-00000-of-00001.arrow: expected sha256 [0-9a-f]{64}"):
        prepare(tmp_path, catalogue, f"hf:{tmp_path / 'hf'}", lock, out="b")


def test_hub_dataset_files_are_fetched_at_the_revision_and_locked(tmp_path, catalogue, shared, monkeypatch):
    """hf:<dataset>@<revision>: the split files at the pinned revision are fetched with hf_hub_download (a stand-in
    serving the mirror's CSV here: no hub in tests), digested by the lock and read by the datasets CSV builder."""
    pytest.importorskip("datasets")
    import huggingface_hub
    import pandas as pd

    store = tmp_path / "hubfiles"
    for split in ("train", "test"):
        (store / "tasks" / TASK).mkdir(parents=True, exist_ok=True)
        pd.read_csv(shared / f"data/tasks/{TASK}/{split}.csv.gz").to_csv(
            store / f"tasks/{TASK}/{split}.csv", index=False
        )
    asked = []

    def fake_download(repo_id, filename, *, repo_type, revision, force_download=False):
        asked.append((repo_id, filename, repo_type, revision))
        return str(store / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    rev = "4edd705be573e48c585c2cf79dc320f9f43c7b04"
    lock = tmp_path / "tasks.lock"
    card = prepare(tmp_path, catalogue, f"hf:DeepPavlov/geneb-tasks@{rev}", lock)
    assert card.splits["train"].n_source == 1484
    assert set(read_lock(lock)[TASK]["files"]) == {f"tasks/{TASK}/train.csv", f"tasks/{TASK}/test.csv"}
    assert ("DeepPavlov/geneb-tasks", f"tasks/{TASK}/train.csv", "dataset", rev) in asked
    (store / f"tasks/{TASK}/test.csv").write_text(
        (store / f"tasks/{TASK}/test.csv").read_text().replace(",1\n", ",0\n", 1)
    )
    with pytest.raises(TaskLockError, match=rf"tasks/{TASK}/test.csv: expected sha256"):
        prepare(tmp_path, catalogue, f"hf:DeepPavlov/geneb-tasks@{rev}", lock, out="b")


def _record_many(lock, worker, n, root):
    src = open_source(str(root))
    files = src.source_files(TASK)
    for i in range(n):
        record_files(lock, f"task_{worker}_{i}", str(root), files)


def test_concurrent_lock_writes_lose_nothing(tmp_path, mirror):
    """Eight processes record 10 tasks each into one lockfile at once: every one of the 80 entries is there, and the
    file is valid YAML throughout (atomic replace under the inter-process lock)."""
    lock = tmp_path / "config" / "tasks.lock"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_record_many, args=(lock, w, 10, mirror)) for w in range(8)]
    for p in procs:
        p.start()
    seen_valid = 0
    while any(p.is_alive() for p in procs):
        if lock.exists():
            yaml.safe_load(lock.read_text())  # never a half-written file
            seen_valid += 1
        time.sleep(0.01)
    for p in procs:
        p.join()
        assert p.exitcode == 0
    tasks = read_lock(lock)
    assert sorted(tasks) == sorted(f"task_{w}_{i}" for w in range(8) for i in range(10))
    assert not list(lock.parent.glob(".tmp-*"))


def test_a_second_first_preparation_with_other_files_is_refused(tmp_path, mirror):
    """Two first preparations of one task racing with different files: the second one's record is refused."""
    lock = tmp_path / "tasks.lock"
    files = open_source(str(mirror)).source_files(TASK)
    record_files(lock, TASK, str(mirror), files)
    flip_labels(mirror / TASK / "train.csv.gz", n=1)
    with pytest.raises(TaskLockError, match="train.csv.gz: expected"):
        record_files(lock, TASK, str(mirror), open_source(str(mirror)).source_files(TASK))


def test_a_broken_lockfile_is_named(tmp_path):
    lock = tmp_path / "tasks.lock"
    lock.write_text("schema_version: 1\ntasks:\n  t: {files: {a: {sha256: xyz, size: 1}}}\n")
    with pytest.raises(TaskLockError, match=rf"{lock}: task 't': an entry needs"):
        read_lock(lock)
    lock.write_text("schema_version: 7\n")
    with pytest.raises(TaskLockError, match="expected schema_version 1"):
        read_lock(lock)


def test_concurrent_lock_writes_from_threads_lose_nothing(tmp_path, mirror):
    """prepare_task jobs may also share one process (a local rule's job pool): threads lose nothing either."""
    lock = tmp_path / "tasks.lock"
    threads = [threading.Thread(target=_record_many, args=(lock, w, 5, mirror)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(read_lock(lock)) == sorted(f"task_{w}_{i}" for w in range(6) for i in range(5))


class _Truncating(http.server.BaseHTTPRequestHandler):
    """Promises 10,000 bytes and closes the connection after 10."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("meta.json"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        self.wfile.write(b"sequence,l")
        self.close_connection = True


def test_a_truncated_download_is_an_error_and_never_kept(tmp_path):
    """The deadline downloader reads the body itself: a body shorter than its Content-Length is refused, never
    cached as a shorter file (a `.csv` cut at a line end would lose rows silently)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Truncating)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(TaskSourceError, match=rf"cannot download {url}/{TASK}/train.csv.gz: .*IncompleteRead"):
            open_source(url, download_dir=tmp_path / "dl", deadline_s=10, read_timeout_s=5).source_files(TASK)
    finally:
        server.shutdown()
    assert not [p for p in (tmp_path / "dl").rglob("*") if p.is_file()]
