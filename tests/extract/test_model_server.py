"""The per-node model server (geneb.extract.server) and the load-time checks record: one load embeds
many tasks with the same vectors as a load per task, errors reach the job under their own class, a
cancelled job leaves no output, a server stops when idle; the record spares later loads the probes and
is probed again when what it vouches for changes."""

from __future__ import annotations

import json
import socket
import time

import h5py
import numpy as np
import pytest

from extraction_support import random_dna
from geneb.core import ipc as protocol
from geneb.extract.batch_plan import LOAD_CHECKS_FILE
from geneb.extract.server import extract_via_server
from geneb.extract.step import extract_task, load_model


@pytest.fixture
def server_dir(private_model_servers):
    return private_model_servers


def _tasks(make_task):
    a = make_task([random_dna(n, i) for i, n in enumerate((30, 300, 90, 700))], [random_dna(150, 9)], task="a")
    b = make_task([random_dna(n, 10 + i) for i, n in enumerate((60, 40))], [random_dna(500, 19)], task="b")
    return a, b


def _vectors(path):
    with h5py.File(path, "r") as f:
        return {s: f[s]["embeddings"][()] for s in ("train", "test")}, dict(f.attrs)


def test_one_load_embeds_every_task_as_a_load_per_task_does(zoo, make_task, tmp_path, server_dir):
    settings = zoo.settings("mistral-dna")
    tasks = _tasks(make_task)
    for task in tasks:
        extract_task(settings, task, tmp_path / "direct" / f"{task.name}.h5", progress=False)
        extract_via_server(settings, task, tmp_path / "served" / f"{task.name}.h5", idle_s=30)
    loads = set()
    for task in tasks:
        direct, direct_attrs = _vectors(tmp_path / "direct" / f"{task.name}.h5")
        served, attrs = _vectors(tmp_path / "served" / f"{task.name}.h5")
        for split in direct:
            # a few float32 ulps: the server process and this one may run torch with different thread
            # counts, which changes the summation order of the same kernels
            np.testing.assert_allclose(served[split], direct[split], rtol=2e-6, atol=1e-6)
        assert attrs["model_reused"] and not direct_attrs["model_reused"]
        loads.add(attrs["model_load_id"])
    assert len(loads) == 1  # both tasks from one load
    log = next(server_dir.glob("*.log")).read_text()
    assert log.count("ready on") == 1


def test_errors_reach_the_job_under_their_own_class(zoo, make_task, tmp_path, server_dir):
    settings = zoo.settings("bert", long_policy="error", max_tokens=16)
    task = make_task([random_dna(20, 6), random_dna(400, 7)], [random_dna(20, 8)], task="ctx")
    with pytest.raises(ValueError, match="model tiny-bert, task ctx, split train: model tiny-bert, row 1") as info:
        extract_via_server(settings, task, tmp_path / "e.h5", idle_s=30)
    assert type(info.value).__module__.startswith("geneb.") and not (tmp_path / "e.h5").exists()
    # another folder (content fingerprint), which is not there: its server fails to load and never listens
    missing = {**settings, "source": {**settings["source"], "path": str(tmp_path / "gone"), "fingerprint": "0" * 12}}
    with pytest.raises(Exception, match="gone") as info:
        extract_via_server(missing, task, tmp_path / "f.h5", idle_s=30)
    assert "model server" not in str(info.value)  # the load's own error, not a wrapper
    assert not list(server_dir.glob("*.failed.json"))


def test_a_cancelled_job_leaves_no_output_and_an_idle_server_stops(zoo, make_task, tmp_path, server_dir):
    settings = zoo.settings("mistral-dna")
    first, second = _tasks(make_task)
    extract_via_server(settings, first, tmp_path / "a.h5", idle_s=3)
    (sock,) = server_dir.glob("*.sock")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(sock))
    protocol.send(
        conn,
        {
            "op": "extract",
            "settings": settings,
            "settings_hash": json.loads(next(server_dir.glob("*.spec.json")).read_text())["settings_hash"],
            "task_dir": str(second),
            "out_path": str(tmp_path / "b.h5"),
        },
    )
    conn.close()  # the job is cancelled before the answer
    deadline = time.monotonic() + 60
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sock.exists(), "an idle server must stop"
    assert not (tmp_path / "b.h5").exists() and not list(tmp_path.glob(".tmp-*"))
    assert "discarded" in next(server_dir.glob("*.log")).read_text()


def test_the_checks_record_spares_later_loads_the_probes_until_what_it_vouches_for_changes(zoo, tmp_path, monkeypatch):
    from geneb.encoders.engine import checks

    calls = []
    real = checks.check_padding_invariance
    monkeypatch.setattr(checks, "check_padding_invariance", lambda enc: (calls.append(1), real(enc)))
    settings = zoo.settings("mistral-dna")
    first = load_model(settings, checks_dir=tmp_path, progress=False)
    second = load_model(settings, checks_dir=tmp_path, progress=False)
    assert (first.checks_run, second.checks_run, len(calls)) == (True, False, 1)
    assert first.load_checks_sha256 == second.load_checks_sha256
    record = json.loads((tmp_path / LOAD_CHECKS_FILE).read_text())
    assert record["checks"] == ["vocabulary", "max_length", "padding_invariance"]
    record["identity_sha256"] = "0" * 12  # another encoder identity: probed again, record replaced
    (tmp_path / LOAD_CHECKS_FILE).write_text(json.dumps(record))
    assert load_model(settings, checks_dir=tmp_path, progress=False).checks_run and len(calls) == 2
    (tmp_path / LOAD_CHECKS_FILE).write_text("{not json")
    assert load_model(settings, checks_dir=tmp_path, progress=False).checks_run and len(calls) == 3
    assert json.loads((tmp_path / LOAD_CHECKS_FILE).read_text())["identity_sha256"] != "0" * 12


def test_load_checks_every_load_probes_at_each_load_despite_a_record(zoo, tmp_path, monkeypatch):
    """`execution.load_checks: every_load` (the old rules, the workflow benchmark's baseline)."""
    from geneb.encoders.engine import checks

    calls = []
    real = checks.check_padding_invariance
    monkeypatch.setattr(checks, "check_padding_invariance", lambda enc: (calls.append(1), real(enc)))
    settings = zoo.settings("mistral-dna")
    load_model(settings, checks_dir=tmp_path, progress=False)
    again = load_model(settings, checks_dir=tmp_path, progress=False, load_checks_policy="every_load")
    assert again.checks_run and len(calls) == 2
    with pytest.raises(ValueError, match="load_checks_policy 'sometimes'"):
        load_model(settings, checks_dir=tmp_path, progress=False, load_checks_policy="sometimes")


def test_a_served_splits_progress_reaches_the_job_while_it_runs(
    zoo, make_task, tmp_path, server_dir, monkeypatch, capsys
):
    """Before: with the model server (the default) a split's progress went to the server's log only, and the job's
    log had nothing between the start and the end of a split. The lines now come to the job as they are made:
    messages before the answer, written into the job's log (its stderr)."""
    monkeypatch.setenv("GENEB_PROGRESS_S", "0")  # the server inherits it: a progress line after every batch
    settings = zoo.settings("mistral-dna")
    first = make_task([random_dna(30 + i, i) for i in range(8)], [random_dna(50, 9)], task="a")
    second = make_task([random_dna(40 + i, 20 + i) for i in range(6)], [random_dna(50, 29)], task="b")
    execution = {"batch_size": 2, "batch_tokens": None}  # four batches of train: progress lines between them
    extract_via_server(settings, first, tmp_path / "a.h5", idle_s=30, execution=execution)
    err = capsys.readouterr().err
    assert "model tiny-mistral-dna, task a, split train: " in err and " rows/s, " in err and " left" in err
    (sock,) = server_dir.glob("*.sock")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(sock))
    spec = json.loads(next(server_dir.glob("*.spec.json")).read_text())
    request = {"op": "extract", "settings": settings, "settings_hash": spec["settings_hash"]}
    protocol.send(conn, {**request, "task_dir": str(second), "out_path": str(tmp_path / "b.h5")})
    with conn, conn.makefile("rb") as reader:
        messages = [json.loads(line) for line in reader]
    *lines, answer = messages
    assert answer["ok"] and answer["log"] == []  # every line went before the answer
    assert all(m["op"] == "log" for m in lines)
    assert any("task b, split train: " in m["line"] and "rows/s" in m["line"] for m in lines), lines
