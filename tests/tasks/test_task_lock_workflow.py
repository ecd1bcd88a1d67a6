"""The issue's case through the workflow: an http mirror without digests whose server starts serving 1,000 flipped
training labels. The first run's prepare_task job records the task lock; a later run on a fresh download cache
(another machine) fails in prepare_task with one GENEB ERROR line naming task, file and both digests, instead of
preparing the changed labels and exiting 0."""

from __future__ import annotations

import functools
import gzip
import http.server
import shutil
import threading

from geneb.core.logs import ERROR_MARK
from geneb.tasks.catalogue import read_lock
from geneb.tasks.sources import file_record
from workflow_support import run_plan, run_snakemake, write_run_config

TASK = "ienhancer2l_strong_vs_weak"


def test_an_http_mirror_serving_flipped_labels_fails_the_run_naming_the_file(tmp_path, shared):
    """Its own run (one task, prepared only, from an http mirror of its own): the lock is recorded by the first
    run's prepare_task job and the refusal comes from the second run's job on a fresh download, so both run for
    real; the shared run reads a local mirror."""
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(mirror))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        run = tmp_path / "run"
        write_run_config(run, mirror, [TASK], ["kmer-3"])
        config = run / "config/config.yaml"
        config.write_text(config.read_text().replace(f"task_source: {mirror}", f"task_source: {url}"))
        card = run_plan(run).layout.task_file(TASK, "card.json")  # resources/tasks/{TASK}/{thash}/card.json
        first = run_snakemake(run, card)
        assert first.returncode == 0 and (run / card).exists(), first.stdout[-3000:]
        locked = read_lock(run / "config/tasks.lock")[TASK]["files"]["train.csv.gz"]
        assert locked == file_record(mirror / TASK / "train.csv.gz")

        path = mirror / TASK / "train.csv.gz"
        with gzip.open(path, "rt") as f:
            lines = f.read().splitlines()
        lines[1:1001] = [f"{s},{1 - int(y)}" for s, y in (line.rsplit(",", 1) for line in lines[1:1001])]
        with gzip.open(path, "wt") as f:
            f.write("\n".join(lines) + "\n")
        shutil.rmtree(run / "resources")  # another machine: nothing prepared, nothing downloaded
        card = run_plan(run).layout.task_file(TASK, "card.json")  # planned again, with the lock the first run wrote
        second = run_snakemake(run, card)
    finally:
        server.shutdown()
    console = second.stdout
    assert second.returncode != 0, console[-3000:]
    wanted = f"train.csv.gz: expected sha256 {locked['sha256']}"
    assert ERROR_MARK in console and wanted in console, console[-4000:]
    assert f"found sha256 {file_record(path)['sha256']}" in console and f"geneb tasks lock {TASK}" in console
    assert not (run / card).exists()
