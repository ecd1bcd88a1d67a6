"""`geneb tasks lock`: re-locks tasks on purpose (their files digested from the source now), prints what changed,
and the next preparation accepts the new files; `geneb tasks --category` still lists tasks."""

from __future__ import annotations

import functools
import gzip
import http.server
import shutil
import threading

import pytest

from geneb.cli import main
from geneb.tasks.catalogue import TaskLockError, read_catalogue, read_lock, task_row
from geneb.tasks.prepare import prepare_from_params
from geneb.tasks.sources import file_record
from workflow_support import write_run_config

TASK = "ienhancer2l_strong_vs_weak"


def _params(repo):
    row = task_row(read_catalogue(repo / "config/tasks.tsv"), TASK)
    return {
        "catalogue_row": {k: row.get(k, "") for k in ("category", "n_classes", "task_set", "taxon_group", "source")},
        "alphabet": {"strip_whitespace": False, "u_to_t": False, "allow_iupac": True},
        "caps": {"max_train": 200, "max_test": 100},
        "cap_seed": 0,
    }


def _flip_first_label(path):
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    seq, label = lines[1].rsplit(",", 1)
    lines[1] = f"{seq},{1 - int(label)}"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")


@pytest.fixture
def run(tmp_path, shared, monkeypatch):
    monkeypatch.delenv("GENEB_TASK_SOURCE", raising=False)
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    run = tmp_path / "run"
    write_run_config(run, mirror, [TASK], ["kmer-3"])
    monkeypatch.chdir(run)
    return run, mirror


def test_tasks_lock_relocks_a_changed_folder_task_and_the_next_preparation_accepts_it(run, repo, capsys):
    run, mirror = run
    config = str(run / "config/config.yaml")
    assert main(["tasks", "lock", "--configfile", config]) == 0  # default: the config's tasks
    out = capsys.readouterr().out
    assert f"{TASK}: locked 3 file(s) from {mirror}" in out and "1 task(s), 1 written to config/tasks.lock" in out
    lock = run / "config/tasks.lock"
    old = read_lock(lock)[TASK]["files"]["test.csv.gz"]
    _flip_first_label(mirror / TASK / "test.csv.gz")
    with pytest.raises(TaskLockError, match=f"geneb tasks lock {TASK} --configfile"):
        prepare_from_params(TASK, _params(repo), str(mirror), run / "a" / "card.json", lock_path=lock)
    assert main(["tasks", "lock", TASK, "--configfile", config]) == 0
    out = capsys.readouterr().out
    new = file_record(mirror / TASK / "test.csv.gz")
    assert f"{TASK}: re-locked from {mirror}, 1 file(s) changed:" in out
    assert f"  test.csv.gz: {old['sha256'][:16]}… ({old['size']:,} bytes) -> {new['sha256'][:16]}…" in out
    assert read_lock(lock)[TASK]["files"]["test.csv.gz"] == new and read_lock(lock)[TASK]["generation"] == 1
    card = prepare_from_params(TASK, _params(repo), str(mirror), run / "b" / "card.json", lock_path=lock)
    assert card.splits["test"].n == 100
    assert main(["tasks", "lock", TASK, "--configfile", config]) == 0
    assert f"{TASK}: unchanged (3 file(s)" in capsys.readouterr().out


def test_tasks_lock_downloads_an_http_task_afresh(run, repo, capsys):
    """A cached download changed on disk is refused; `geneb tasks lock` digests what the server serves now (not the
    cache), so the lock stays as it was and the next preparation downloads the file again and accepts it."""
    run, mirror = run
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        (run / "config/config.yaml").write_text(
            (run / "config/config.yaml").read_text().replace(f"task_source: {mirror}", f"task_source: {url}")
        )
        lock = run / "config/tasks.lock"
        prepare_from_params(TASK, _params(repo), url, run / "a" / "card.json", lock_path=lock)
        text = lock.read_text()
        (cached,) = (run / "resources/downloads").glob(f"*/{TASK}/train.csv.gz")
        _flip_first_label(cached)
        with pytest.raises(TaskLockError, match="train.csv.gz: expected"):
            prepare_from_params(TASK, _params(repo), url, run / "b" / "card.json", lock_path=lock)
        assert main(["tasks", "lock", TASK, "--configfile", str(run / "config/config.yaml")]) == 0
        assert f"{TASK}: unchanged (3 file(s) from {url})" in capsys.readouterr().out
        assert lock.read_text() == text
        prepare_from_params(TASK, _params(repo), url, run / "c" / "card.json", lock_path=lock)
    finally:
        server.shutdown()


def test_tasks_lock_errors_are_one_line_and_listing_still_works(run, repo, capsys):
    run, mirror = run
    assert main(["tasks", "lock", "no_such_task", "--configfile", str(run / "config/config.yaml")]) == 2
    assert "geneb: error:" in capsys.readouterr().err
    shutil.rmtree(mirror / TASK)
    assert main(["tasks", "lock", "--configfile", str(run / "config/config.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("geneb: error: task") and "no train.csv.gz or train.csv" in err
    # `geneb tasks` without `lock` still lists the catalogue
    assert main(["tasks", "--category", "enhancers", "--sheet", str(repo / "config/tasks.tsv")]) == 0
    listed = capsys.readouterr().out
    assert "ienhancer2l_enhancer_vs_non" in listed and "gue_prom_core_all" not in listed
