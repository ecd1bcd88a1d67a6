"""Batches and execution: the knobs every adapter shares, batch planning with the out-of-memory step-down,
and progress lines of a long embedding call.

The execution knobs every adapter shares: settings, device (never a silent CPU fallback), batch size, the
dtype policy (progress lines: geneb.encoders.engine.batching).

Batch planning and the out-of-memory step-down, independent of torch.

Speed without changing results: work items (token chunks) are sorted by length so each batch is padded only
to its own longest member (dynamic padding), and every result is stored under its item index, so the output
order is the input order whatever the batching. A batch holds at most `batch_size` items (`plan_batches`)
or, sized to a token budget, at most `batch_tokens` padded tokens (`plan_token_batches`: many short items or
a few long ones). The batches then run largest first (`largest_first`), so an out-of-memory shows at the start of a job. Models that take no attention mask and are not causal get
batches of equal length only (bucketing), so no pad token ever reaches them.

Progress of a long embedding call as plain log lines: rows done of the split, rows per second, time spent and an
estimate of the time left, at most every `_interval_s` seconds (30 by default; `GENEB_PROGRESS_S` overrides it).

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
from itertools import groupby
from typing import Any

import numpy as np
import torch

from geneb.core.errors import ItemOutOfMemoryError
from geneb.registry.spec import AUTO_DTYPE, COMPUTE_DTYPES, Extraction, ExtractionSettings, SettingsLike


def _resolve_device(device: str, *, model: str) -> str:
    """ "cpu", "cuda[:i]" or "auto" (cuda when available) -> a torch device string. device=cuda without CUDA
    raises RuntimeError: GENEB never falls back to CPU silently."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(
            f"model {model}: device={device} was configured but CUDA is not available; not falling back to CPU"
        )
    return device


class ExecutionKnobs:
    """The attributes `init_execution` sets, declared once for every adapter that calls it (the token-model
    engine, Enformer and its kin): settings, model_id, extraction, device, batch_size, batch_tokens, progress."""

    settings: ExtractionSettings
    model_id: str
    extraction: Extraction
    device: str
    batch_size: int
    batch_tokens: int | None
    progress: bool


def init_execution(
    encoder: ExecutionKnobs,
    settings: SettingsLike,
    *,
    device: str,
    batch_size: int,
    progress: bool,
    batch_tokens: int | None = None,
) -> None:
    """Set the attributes every adapter shares: settings (`ExtractionSettings`; a resolved mapping is typed
    here), model_id, extraction (`Extraction`), device (resolved; never a silent CPU fallback), batch_size,
    batch_tokens (None: batches of `batch_size` items; else a budget of padded tokens per batch, see
    `geneb.encoders.engine.batching.plan_token_batches`) and progress. Raises ValueError for batch_size < 1 or
    batch_tokens < 1."""
    settings = ExtractionSettings.of(settings)
    encoder.settings = settings
    encoder.model_id = settings.model
    encoder.extraction = settings.extraction
    encoder.device = _resolve_device(device, model=encoder.model_id)
    if int(batch_size) < 1 or (batch_tokens is not None and int(batch_tokens) < 1):
        raise ValueError(f"model {encoder.model_id}: batch_size and batch_tokens must be >= 1")
    encoder.batch_size = int(batch_size)
    encoder.batch_tokens = None if batch_tokens is None else int(batch_tokens)
    encoder.progress = progress


def dtype_policy(extraction: Extraction, *, device: str, model: str) -> tuple[str, str, bool]:
    """(compute dtype, weights dtype, autocast?) from `dtype` and `nonfinite`.

    The workflow's settings carry a concrete dtype (`extraction.extraction_settings` resolves auto before the
    settings hash is made); settings built by hand may still say auto, which means the same here
    (`settings.AUTO_DTYPE`: float32 on CPU, bfloat16 on CUDA). A reduced compute dtype loads reduced weights,
    except under `nonfinite: retry_fp32`, which keeps float32 weights and runs under autocast so a batch with
    NaN/inf can be rerun in float32.
    """
    want = extraction.dtype
    compute = AUTO_DTYPE["cuda" if device.startswith("cuda") else "cpu"] if want == "auto" else want
    if compute not in COMPUTE_DTYPES:
        raise ValueError(f"model {model}: unknown dtype {want!r}")
    if compute == "float32":
        return compute, "float32", False
    if extraction.nonfinite == "retry_fp32":
        return compute, "float32", True
    return compute, compute, False


def to_device(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """`tensor` on `device`. On CUDA a CPU tensor goes through pinned (page-locked) host memory with
    non_blocking=True, so the copy overlaps with queued GPU work; the caller's next host read of a result
    (`.cpu()`) synchronises. Anywhere else it is `tensor.to(device)` (a no-op on CPU)."""
    if device.startswith("cuda") and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


def network_parameters(encoder: Any) -> int:
    """The parameter count of an encoder's torch network (`encoder.model.parameters()`), 0 for an encoder without
    one (k-mer spectra, shortcut features, a python entry): the model size the `by_device` batch table reads
    (geneb.extract.batch_plan)."""
    model = getattr(encoder, "model", None)
    params = getattr(model, "parameters", None)
    return int(sum(int(p.numel()) for p in params())) if callable(params) else 0


def encoder_device(encoder: Any, default: str) -> str:
    """The device an encoder resolved at load (`encoder.device`, e.g. "cuda:1" for "auto"), `default` for one that
    records none."""
    return str(getattr(encoder, "device", default))


_log = logging.getLogger(__name__)


def plan_batches(lengths: Sequence[int], batch_size: int, *, equal_length: bool = False) -> list[list[int]]:
    """Group item indices into batches of at most `batch_size`, shortest items first.

    lengths: length (tokens) of each item. equal_length: only items of exactly the same length share a batch
    (for models without an attention mask). Returns lists of item indices; every index appears once. Ties
    keep input order, so the plan is deterministic. Raises ValueError for batch_size < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    if not equal_length:
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    batches: list[list[int]] = []
    for _, group in groupby(order, key=lambda i: lengths[i]):
        items = list(group)
        batches.extend(items[s : s + batch_size] for s in range(0, len(items), batch_size))
    return batches


def plan_token_batches(lengths: Sequence[int], batch_tokens: int, *, equal_length: bool = False) -> list[list[int]]:
    """Group item indices into length-sorted batches sized to a token budget instead of a row count.

    lengths: length (tokens) of each item. batch_tokens: the most padded tokens a batch may hold, i.e.
    (rows in the batch) x (its longest item) <= batch_tokens; an item longer than the budget gets a batch of
    its own (it still has to be embedded; the out-of-memory step-down sees it alone). Items are taken
    shortest first, so short items share large batches and long ones small batches, and the padded size of
    every batch stays near the budget (what keeps a GPU busy without running out of memory). equal_length:
    only items of exactly the same length share a batch (models without an attention mask). Returns lists
    of item indices; every index appears exactly once; ties keep input order, so the plan is deterministic.
    Raises ValueError for batch_tokens < 1.
    """
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted ascending: item i is the longest of the batch it joins, so the padded size is (n + 1) x len
        same = not equal_length or not current or lengths[current[0]] == lengths[i]
        if current and same and (len(current) + 1) * max(lengths[i], 1) <= batch_tokens:
            current.append(i)
            continue
        if current:
            batches.append(current)
        current = [i]
    if current:
        batches.append(current)
    return batches


def plan_chunks(
    lengths: Sequence[int], *, batch_size: int, batch_tokens: int | None = None, equal_length: bool = False
) -> list[list[int]]:
    """The batch plan of an extraction: `plan_token_batches(lengths, batch_tokens)` when a token budget is
    set, else `plan_batches(lengths, batch_size)`; see those for the guarantees and the errors raised."""
    if batch_tokens is not None:
        return plan_token_batches(lengths, batch_tokens, equal_length=equal_length)
    return plan_batches(lengths, batch_size, equal_length=equal_length)


def largest_first(plan: list[list[int]], lengths: Sequence[int]) -> list[list[int]]:
    """The batches of `plan` (same members, so the same vectors bit for bit) in run order: first the batch with
    the most padded tokens (its size x its longest item; the wider one among ties), then the others widest
    first (larger first among equal widths, then plan order). An out-of-memory then comes on the first or second
    batch, in the job's first minute, never at the end of a long job (shortest first left it there)."""
    if len(plan) < 2:
        return list(plan)
    width = [max(lengths[i] for i in b) for b in plan]
    first = max(range(len(plan)), key=lambda j: (len(plan[j]) * width[j], width[j], -j))
    rest = sorted((j for j in range(len(plan)) if j != first), key=lambda j: (-width[j], -len(plan[j]), j))
    return [plan[first]] + [plan[j] for j in rest]


def is_out_of_memory(err: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocation failures (torch.OutOfMemoryError, "out of memory" RuntimeErrors,
    MemoryError); False for everything else, which must propagate unchanged."""
    if isinstance(err, MemoryError):
        return True
    if type(err).__name__ == "OutOfMemoryError":  # torch.OutOfMemoryError / torch.cuda.OutOfMemoryError
        return True
    return isinstance(err, RuntimeError) and "out of memory" in str(err).lower()


class StepDownRunner:
    """Run `fn` on each planned batch; on out-of-memory split the batch in halves and retry, and keep the
    smaller size for the rest of the run (each step-down is logged and counted).

    fn(batch_indices) -> any result; results are returned as (batch_indices, result) pairs in plan order, so
    the caller stores them by index and row order never depends on the batch size. `free` (e.g.
    torch.cuda.empty_cache) is called after each out-of-memory error. A single item that still does not fit
    raises the original error wrapped in MemoryError naming `what` and the item.
    """

    def __init__(
        self,
        fn: Callable[[list[int]], Any],
        *,
        what: str,
        free: Callable[[], None] | None = None,
        row_of: Callable[[int], int] | None = None,
    ) -> None:
        self.fn = fn
        self.what = what
        self.free = free
        self.row_of = row_of
        self.step_downs = 0
        self.max_batch: int | None = None

    def run(self, batches: list[list[int]], on_done: Callable[[list[int], Any], None]) -> None:
        """Process `batches` in order, calling on_done(batch_indices, result) for every (sub)batch."""
        for batch in batches:
            self._run_one(batch, on_done)

    def _run_one(self, batch: list[int], on_done: Callable[[list[int], Any], None]) -> None:
        if self.max_batch is not None and len(batch) > self.max_batch:
            for s in range(0, len(batch), self.max_batch):
                self._run_one(batch[s : s + self.max_batch], on_done)
            return
        try:
            result = self.fn(batch)
        except BaseException as err:  # noqa: BLE001 - only out-of-memory is handled; the rest re-raises
            if not is_out_of_memory(err):
                raise
            if self.free is not None:
                self.free()
            if len(batch) == 1:
                if self.row_of is None:
                    raise MemoryError(
                        f"{self.what}: out of memory on a single item (index {batch[0]}); "
                        "lower max_tokens or use a larger device"
                    ) from err
                row = self.row_of(batch[0])
                raise ItemOutOfMemoryError(
                    f"{self.what}: out of memory on row {row} alone (one chunk of it); lower "
                    "max_tokens or use a larger device",
                    rows=[row],
                ) from err
            half = (len(batch) + 1) // 2
            self.max_batch = half
            self.step_downs += 1
            _log.warning("%s: out of memory at batch size %d; stepping down to %d", self.what, len(batch), half)
            self._run_one(batch[:half], on_done)
            self._run_one(batch[half:], on_done)
            return
        on_done(batch, result)


_log = logging.getLogger(__name__)

#: seconds between two progress lines of one call (the environment variable below overrides it)
_PROGRESS_INTERVAL_S = 30.0
PROGRESS_ENV = "GENEB_PROGRESS_S"


def _interval_s() -> float:
    """The interval between progress lines: `GENEB_PROGRESS_S` when set (seconds, >= 0; 0 logs after every
    batch), else PROGRESS_INTERVAL_S. Raises ValueError naming the variable for a value that is not a number >= 0."""
    text = os.environ.get(PROGRESS_ENV)
    if text is None or not text.strip():
        return _PROGRESS_INTERVAL_S
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
    lines name (model, task, split); interval: seconds between lines (None: `_interval_s()`); clock: the time source
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
        self.interval = _interval_s() if interval is None else float(interval)
        self.log = logger or _log
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
