"""Progress of a long embedding call as plain log lines: rows done of the split, rows per second, time spent and an
estimate of the time left, at most every `interval_s` seconds (30 by default; `GENEB_PROGRESS_S` overrides it).

A log line, not a terminal progress bar: the job's log is a file (Snakemake's `log:`, or a model server's log
whose lines the server streams to the waiting job, `geneb.extract.server`), where a bar's carriage returns pile up
on one line. A call that ends within the interval logs nothing; one that logged a progress line logs a last line
when it ends. The estimate is by work (chunk tokens, or items), not rows: a batch plan that runs the longest
chunks first (`geneb.encoders.engine.batching.largest_first`) would make a row-based estimate far too long early
on. Numpy and the standard library only; the vectors never depend on it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence

import numpy as np

log = logging.getLogger(__name__)

#: seconds between two progress lines of one call (the environment variable below overrides it)
PROGRESS_INTERVAL_S = 30.0
PROGRESS_ENV = "GENEB_PROGRESS_S"


def interval_s() -> float:
    """The interval between progress lines: `GENEB_PROGRESS_S` when set (seconds, >= 0; 0 logs after every
    batch), else PROGRESS_INTERVAL_S. Raises ValueError naming the variable for a value that is not a number >= 0."""
    text = os.environ.get(PROGRESS_ENV)
    if text is None or not text.strip():
        return PROGRESS_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{PROGRESS_ENV}={text!r}: expected a number of seconds >= 0")
    return value


def _duration(seconds: float) -> str:
    """'42 s', '3.5 min', '2.1 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class SplitProgress:
    """Progress of one embedding call over `item_rows` work items (token chunks, windows or pieces).

    item_rows: (n_items,) the position of the row each item belongs to (a row is done when all its items are);
    item_work: (n_items,) the cost of each item for the estimate (chunk tokens; None: 1 each); desc: what the
    lines name (model, task, split); interval: seconds between lines (None: `interval_s()`); clock: the time source
    (monotonic seconds). `done(items)` after each batch, `close()` at the end."""

    def __init__(
        self,
        desc: str,
        item_rows: Sequence[int] | np.ndarray,
        item_work: Sequence[int] | np.ndarray | None = None,
        *,
        interval: float | None = None,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.desc = desc
        self.item_rows = np.asarray(item_rows, dtype=np.int64)
        self.item_work = (
            np.ones(len(self.item_rows), np.int64) if item_work is None else np.asarray(item_work, dtype=np.int64)
        )
        self.remaining = np.bincount(self.item_rows, minlength=0) if len(self.item_rows) else np.zeros(0, np.int64)
        self.n_rows = int((self.remaining > 0).sum())
        self.total_work = int(self.item_work.sum())
        self.rows_done = 0
        self.work_done = 0
        self.interval = interval_s() if interval is None else float(interval)
        self.log = logger or log
        self.clock = clock
        self.start = self.last = clock()
        self.lines = 0

    def done(self, items: Sequence[int] | np.ndarray) -> None:
        """Count the finished `items` (indices into item_rows) and log a line when `interval` has passed."""
        idx = np.asarray(items, dtype=np.int64)
        rows = self.item_rows[idx]
        np.subtract.at(self.remaining, rows, 1)
        self.rows_done += int((self.remaining[np.unique(rows)] == 0).sum())
        self.work_done += int(self.item_work[idx].sum())
        now = self.clock()
        if now - self.last >= self.interval and self.rows_done < self.n_rows:
            self.last = now
            self.lines += 1
            self.log.info("%s", self.line(now))

    def line(self, now: float) -> str:
        """'<desc>: 1200/5000 rows (24%), 40.0 rows/s, 30 s elapsed, about 1.6 min left'."""
        elapsed = max(now - self.start, 1e-9)
        share = self.work_done / self.total_work if self.total_work else 1.0
        left = elapsed * (1 - share) / share if share > 0 else float("inf")
        return (
            f"{self.desc}: {self.rows_done}/{self.n_rows} rows ({100 * self.rows_done / max(self.n_rows, 1):.0f}%), "
            f"{self.rows_done / elapsed:.1f} rows/s, {_duration(elapsed)} elapsed, "
            f"about {_duration(left) if left != float('inf') else '?'} left"
        )

    def close(self) -> None:
        """Log the last line (rows, time, rate) if this call logged a progress line."""
        if self.lines:
            elapsed = max(self.clock() - self.start, 1e-9)
            self.log.info(
                "%s: %d/%d rows done in %s, %.1f rows/s",
                self.desc,
                self.rows_done,
                self.n_rows,
                _duration(elapsed),
                self.rows_done / elapsed,
            )


class NoProgress:
    """What `split_progress` returns when progress is off: does nothing."""

    def done(self, items: Sequence[int] | np.ndarray) -> None:
        pass

    def close(self) -> None:
        pass


def split_progress(
    desc: str,
    item_rows: Sequence[int] | np.ndarray,
    item_work: Sequence[int] | np.ndarray | None = None,
    *,
    enabled: bool = True,
) -> SplitProgress | NoProgress:
    """A `SplitProgress` (see there), or a `NoProgress` when not `enabled` (load-time probes, batch-plan
    measurement, `geneb.evaluate`)."""
    if not enabled:
        return NoProgress()
    return SplitProgress(desc, item_rows, item_work)
