"""Batch planning and the out-of-memory step-down, independent of torch.

Speed without changing results: work items (token chunks) are sorted by length so each batch is padded only
to its own longest member (dynamic padding), and every result is stored under its item index, so the output
order is the input order whatever the batching. A batch holds at most `batch_size` items (`plan_batches`)
or, sized to a token budget, at most `batch_tokens` padded tokens (`plan_token_batches`: many short items or
a few long ones). The batches then run largest first (`largest_first`), so an out-of-memory shows at the start of a job. Models that take no attention mask and are not causal get
batches of equal length only (bucketing), so no pad token ever reaches them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

from geneb.core.errors import ItemOutOfMemoryError

log = logging.getLogger(__name__)


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
            log.warning("%s: out of memory at batch size %d; stepping down to %d", self.what, len(batch), half)
            self._run_one(batch[:half], on_done)
            self._run_one(batch[half:], on_done)
            return
        on_done(batch, result)
