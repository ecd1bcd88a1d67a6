"""Progress of a long embedding call (geneb.encoders.engine.batching): "a slow model logs nothing between
the start and the end of a split". Log lines with rows done of the split, rows/s and the time left, at most every
interval; nothing for a call that ends within it; the vectors never depend on it."""

from __future__ import annotations

import logging
import re

import h5py
import numpy as np
import pytest

from extraction_support import random_dna
from geneb.encoders.engine.batching import PROGRESS_ENV, SplitProgress, _interval_s
from geneb.extract.step import extract_task

LINE = re.compile(
    r"model tiny-mistral-dna, task t, split (train|test): (\d+)/(\d+) rows \(\d+%\), [\d.]+ rows/s, "
    r"\S+ (s|min|h) elapsed, about \S+ (s|min|h) left"
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_count_rows_whose_chunks_are_all_done_and_estimate_by_work(caplog):
    """Rows 0 and 1 have two chunks each, row 2 one; the estimate follows the tokens done, not the rows."""
    clock = Clock()
    log = logging.getLogger("test.progress")
    bar = SplitProgress(
        "model m, task t, split train", [0, 0, 1, 1, 2], [30, 30, 10, 10, 40], interval=30, logger=log, clock=clock
    )
    with caplog.at_level(logging.INFO, logger="test.progress"):
        clock.now += 10
        bar.done([0])  # within the interval: no line
        assert not caplog.messages
        clock.now += 20
        bar.done([1, 4])  # row 0 (both chunks) and row 2 done; 100 of 120 tokens in 30 s
        assert caplog.messages == [
            "model m, task t, split train: 2/3 rows (67%), 0.1 rows/s, 30 s elapsed, about 6 s left"
        ]
        clock.now += 5
        bar.done([2])  # within the interval again
        clock.now += 40
        bar.done([3])  # the last batch: no progress line, the closing line says it all
        bar.close()
    assert caplog.messages[1:] == ["model m, task t, split train: 3/3 rows done in 75 s, 0.0 rows/s"]


def test_a_call_within_the_interval_logs_nothing(caplog):
    clock = Clock()
    bar = SplitProgress("x", [0, 1], interval=30, logger=logging.getLogger("test.quiet"), clock=clock)
    with caplog.at_level(logging.INFO, logger="test.quiet"):
        clock.now += 29
        bar.done([0, 1])
        bar.close()
    assert not caplog.messages


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert _interval_s() == 30.0
    monkeypatch.setenv(PROGRESS_ENV, "0.5")
    assert _interval_s() == 0.5
    monkeypatch.setenv(PROGRESS_ENV, "soon")
    with pytest.raises(ValueError, match="GENEB_PROGRESS_S='soon': expected a number of seconds >= 0"):
        _interval_s()


def test_a_split_logs_its_progress_and_the_vectors_do_not_change(zoo, make_task, tmp_path, caplog, monkeypatch):
    """A real checkpoint (Mistral-DNA from ../shared/models), batches of 4 and an interval of 0 (a line after every
    batch): the job's log shows rows done of each split with rate and time left; the file is bit for bit the one a
    run without progress writes."""
    monkeypatch.setenv(PROGRESS_ENV, "0")
    settings = zoo.settings("mistral-dna")
    task = make_task([random_dna(40 + 7 * i, i) for i in range(24)], [random_dna(60, 100 + i) for i in range(9)])
    with caplog.at_level(logging.INFO):
        extract_task(settings, task, tmp_path / "on.h5", batch_size=4, progress=True)
    found = [m.groups() for m in map(LINE.fullmatch, caplog.messages) if m]
    assert {g[0] for g in found} == {"train", "test"}, caplog.messages
    train = [(int(done), int(total)) for split, done, total, *_ in found if split == "train"]
    assert len(train) >= 3 and all(total == 24 and 0 < done < 24 for done, total in train)
    assert [d for d, _ in train] == sorted(d for d, _ in train)
    assert any(
        re.fullmatch(r"model tiny-mistral-dna, task t, split train: 24/24 rows done in .*", m) for m in caplog.messages
    )
    extract_task(settings, task, tmp_path / "off.h5", batch_size=4, progress=False)
    with h5py.File(tmp_path / "on.h5", "r") as on, h5py.File(tmp_path / "off.h5", "r") as off:
        for split in ("train", "test"):
            np.testing.assert_array_equal(on[split]["embeddings"][()], off[split]["embeddings"][()])


def test_a_python_entrys_batch_loop_logs_progress_too(caplog, monkeypatch):
    """A python entry (geneb.evaluate's callable, or a registry entry's factory) embeds in batches of its own loop."""
    from geneb.encoders.families.python_encoder import PythonEncoder

    monkeypatch.setenv(PROGRESS_ENV, "0")
    enc = PythonEncoder(
        lambda seqs: np.array([[s.count(b) / len(s) for b in "ACGT"] for s in seqs]), model="gc", batch_size=2
    )
    with caplog.at_level(logging.INFO, logger="geneb.encoders.engine.batching"):
        enc.embed([random_dna(20, i) for i in range(7)], list(range(7)), desc="model gc, task t, split test")
    assert [m.split(" rows")[0] for m in caplog.messages] == [
        "model gc, task t, split test: 2/7",
        "model gc, task t, split test: 4/7",
        "model gc, task t, split test: 6/7",
        "model gc, task t, split test: 7/7",
    ]
    enc.progress = False
    caplog.clear()
    enc.embed([random_dna(20, i) for i in range(7)], list(range(7)), desc="off")
    assert not caplog.messages
