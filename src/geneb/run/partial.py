"""Results from the tasks that completed, when others failed (docs/hpc.md, "When a task fails").

A Snakemake run cannot build a target whose inputs failed, even with `--keep-going`: the score table needs every
configured task's probe tables. So the Snakefile's `onerror` handler, in a `--keep-going` run of the default
target, hands over to a second Snakemake run of the same command line (`partial_command`) with
`$GENEB_PARTIAL_RUN` naming a JSON file (`<results_dir>/tables/failed_tasks.json`, written by `write_failures`):

    {"tasks": [the tasks whose probe tables all exist], "failed": {task: {"category": ..., "error": ...}}}

The second run's common.smk reads it (`read_partial`), restricts `tasks` to the completed ones and gives the
file to aggregation, which records the failed tasks in `scores.parquet`'s metadata (`geneb.tables.scores`); the
leaderboard treats each failed task as missing from its category (the "not ranked there" rule) and the report
lists them. The first run still ends with Snakemake's error, so the failure is never missed; a later run with
the task fixed rebuilds every table from all tasks (the aggregation's input set changes).

A task fails for every model only when a task-level job fails (its preparation, audit or shot draws) or every
model's cell of it failed. One model failing on a task (a refused row, an out-of-memory in its extraction or probe
job) fails that (model, task) cell alone: the file's `failed_cells` ({model: {task: {"category", "error"}}}) lists
it, the partial run leaves only that cell's probe tables out (`_cell_excluded`), and every other model's scores of
the task are kept; the leaderboard shows the model's category there but does not rank it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from geneb.core.integrity import write_text_atomic
from geneb.core.logs import failure_lines

#: the environment variable a partial run is started with (the path of the failures file)
PARTIAL_ENV = "GENEB_PARTIAL_RUN"
#: the failures file of a partial run, relative to the run's results_dir (`RunPlan.failures_file`)
FAILURES_FILE = "tables/failed_tasks.json"


def read_partial(path: str | None) -> dict[str, Any] | None:
    """The failures file `path` (`$GENEB_PARTIAL_RUN`), or None when unset. Raises ValueError for a file
    without `tasks` and `failed`."""
    if not path:
        return None
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data.get("tasks"), list) or not isinstance(data.get("failed"), dict):
        raise ValueError(f"{path}: not a GENEB failures file (needs 'tasks' and 'failed')")
    return data


def tasks_failed_in_run(tasks: Iterable[str], log_root: str | Path, since: float) -> list[str]:
    """The tasks with a job log (named by the task: logs/<rule>/.../<task>.log) holding a GENEB error of this
    run (written after `since`, epoch seconds)."""
    logs = list(Path(log_root).rglob("*.log"))
    return [t for t in tasks if failure_lines([p for p in logs if p.stem == t], since)]


def task_errors(failed: Iterable[str], log_root: str | Path, since: float) -> dict[str, str]:
    """{task: its jobs' one-line GENEB errors of this run (geneb.core.logs), joined}; a task whose logs hold none
    gets a pointer to the Snakemake log (the job failed outside GENEB code, or never ran)."""
    logs = list(Path(log_root).rglob("*.log"))
    out = {}
    for task in failed:
        lines = failure_lines([p for p in logs if p.stem == task], since)
        out[task] = (
            " | ".join(lines) if lines else "did not complete (no GENEB error in its job logs; see Snakemake's log)"
        )
    return out


def write_failures(
    path: str | Path,
    completed: list[str],
    failed: dict[str, dict[str, str]],
    failed_cells: dict[str, dict[str, dict[str, str]]] | None = None,
) -> None:
    """Write the failures file (module docstring)."""
    record = {"tasks": completed, "failed": failed, "failed_cells": failed_cells or {}}
    write_text_atomic(Path(path), json.dumps(record, indent=1, sort_keys=True))


#: the rules whose jobs are one (model, task) cell: their logs are logs/<rule>/.../<model>/.../<task>.log
_CELL_RULES = ("extract_embeddings", "fit_probes")
#: the rules whose jobs belong to a task, whatever the model
TASK_RULES = ("prepare_task", "audit_task", "write_shot_indices")


def _cell_excluded(partial: dict[str, Any] | None, model: str, task: str) -> bool:
    """Whether the partial run leaves (model, task) out: a cell listed in the failures file's `failed_cells`."""
    return bool(partial) and task in ((partial or {}).get("failed_cells") or {}).get(model, {})


def kept_cells(
    combos: Iterable[tuple[str, str, str]], partial: dict[str, Any] | None
) -> Iterator[tuple[str, str, str]]:
    """The (protocol, model, task) combinations whose (model, task) cell is not excluded (`_cell_excluded`)."""
    return (c for c in combos if not _cell_excluded(partial, c[1], c[2]))


def cell_logs(log_root: str | Path, model: str, task: str) -> list[Path]:
    """The job logs of one (model, task) cell: logs/extract_embeddings/<model>/<hash>/<task hash>/<task>.log and
    logs/fit_probes/<protocol>/<model>/<task>.log."""
    root = Path(log_root)
    return [p for rule in _CELL_RULES for p in (root / rule).rglob(f"{task}.log") if model in p.parts[:-1]]


def split_cells(
    tasks: Iterable[str],
    models: Iterable[str],
    *,
    task_failed: Iterable[str],
    cell_ready: Callable[[str, str], bool],
    cell_failed: Callable[[str, str], bool],
) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(completed tasks, failed tasks, {model: [its failed tasks among the completed ones]}). A task fails whole when
    `task_failed` names it or none of its cells completed; a cell completed when it did not fail now
    (`cell_failed`) and is ready (`cell_ready`: its probe tables exist, or its inputs do, or it never started)."""
    models = list(models)
    task_failed = set(task_failed)
    done: list[str] = []
    failed: list[str] = []
    cells: dict[str, list[str]] = {}
    for task in tasks:
        ok = {m: task not in task_failed and not cell_failed(m, task) and cell_ready(m, task) for m in models}
        if any(ok.values()):
            done.append(task)
            for m in models:
                if not ok[m]:
                    cells.setdefault(m, []).append(task)
        else:
            failed.append(task)
    return done, failed, cells


def partial_command(argv: list[str]) -> list[str]:
    """The second run's command: this Snakemake's own arguments (`sys.argv[1:]`) with `--nolock` (the first
    run still holds the lock while its `onerror` handler runs)."""
    import sys

    return [sys.executable, "-m", "snakemake", *argv, "--nolock"]


def partial_env(failures_path: str | Path) -> dict[str, str]:
    return {**os.environ, PARTIAL_ENV: str(Path(failures_path).absolute())}
