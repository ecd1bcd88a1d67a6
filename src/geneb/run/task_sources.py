"""The pre-flight of the task sources: every configured task whose data cannot be read where it comes from, found
when the run is planned (dry runs too), with the tasks named and the fix, in the same shape as the models'
pre-flight (geneb.run.preflight).

A task's source is its catalogue source resolved against the config (`geneb.tasks.catalogue.source_string`:
`task_source` / $GENEB_TASK_SOURCE for mirrored tasks, `paper_task_source` / $GENEB_PAPER_TASK_SOURCE for the
paper's). Checked per source, once:

* a mirror folder: the folder exists and holds each task's train and test split (`missing_splits`);
* `hf:<folder>` (save_to_disk datasets): the folder holds a `<task>` folder per task;
* `hf:<dataset>@<revision>` on the hub: offline ($HF_HUB_OFFLINE / $HF_DATASETS_OFFLINE) the task's files must be
  in the local hub cache; online, the hub API must answer for the dataset at that revision
  (`{HF_ENDPOINT}/api/datasets/<dataset>/revision/<revision>`; a 404 means no such dataset or revision);
* an http(s) mirror: its base URL must answer (any HTTP status; a connection error or timeout does not).

Remote sources are checked only for tasks not yet prepared (`resources/tasks/<task>/<task hash>/` has its parquet
splits and card, `task_prepared`): a prepared task is not read again. Each remote source costs one request of at most
`TIMEOUT_S` seconds.

The task lock (config `task_lock`, `geneb.tasks.catalogue`): every configured task with a lock entry whose source is
local (a mirror folder, a `save_to_disk` folder) has its files digested now and compared with the entry, so a run
whose files differ is refused before anything is planned, naming task, file, expected and found digests and the
fix; a mirror folder's files are checked against `meta.json`'s `sha256` too. A remote source's files are compared
when `prepare_task` fetches them (downloads and cached copies alike).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.tasks.catalogue import changes, fix_hint, read_lock, records, source_string, task_row
from geneb.tasks.sources import (
    ENV_PAPER_TASK_SOURCE,
    ENV_TASK_SOURCE,
    TaskDigestError,
    TaskSourceError,
    missing_splits,
    open_source,
)

#: seconds one reachability request may take (a hub or mirror that does not answer in this time is unreachable)
TIMEOUT_S = 5.0
#: the hub endpoint when $HF_ENDPOINT is not set (huggingface_hub's default)
DEFAULT_HF_ENDPOINT = "https://huggingface.co"
#: environment variables that put the Hugging Face libraries offline (huggingface_hub, datasets)
OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


@dataclass(frozen=True)
class SourceProblem:
    """Tasks that cannot be read from one source: the source string, the task ids (config order), why, the fix."""

    source: str
    tasks: tuple[str, ...]
    why: str
    fix: str


def _offline() -> bool:
    return any(os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on") for var in OFFLINE_ENV)


def reachable(url: str, timeout: float = TIMEOUT_S) -> tuple[bool, str]:
    """(whether `url` answers an HTTP HEAD request within `timeout` seconds, the HTTP status or the error).
    Any HTTP status counts as reachable (a 404 is checked by the caller where it matters); a DNS failure,
    refused connection or timeout does not."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as response:
            return True, str(response.status)
    except urllib.error.HTTPError as err:
        return True, str(err.code)
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return False, f"{type(err).__name__}: {reason}"


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def _in_hub_cache(repo: str, revision: str, task: str) -> bool:
    """Whether the hub cache holds the task's two split files of `repo` at `revision` (what an offline load needs)."""
    snapshot = _hub_cache() / f"datasets--{repo.replace('/', '--')}" / "snapshots" / revision / "tasks" / task
    return all((snapshot / f"{split}.csv").is_file() for split in ("train", "test"))


def task_prepared(folder: str | os.PathLike[str]) -> bool:
    """Whether the prepared task folder `folder` (`geneb.run.plan.RunPlan.task_dir`: resources/tasks/<task>/<task
    hash>) holds its splits and card, so its source is not read again."""
    folder = Path(folder)
    return all((folder / name).is_file() for name in ("train.parquet", "test.parquet", "card.json"))


def _fix(paper: bool, what: str) -> str:
    if paper:
        return (
            f"{what}: set `paper_task_source:` in your config (or ${ENV_PAPER_TASK_SOURCE}) to a local copy of the "
            "paper's tasks, a mirror folder ({task}/{train,test}.csv.gz) or hf:/path of save_to_disk datasets, or "
            "plan where the hub is reachable (a login node; prepare_task reads each task once) (docs/hpc.md, "
            '"Offline compute nodes")'
        )
    return (
        f"{what}: point `task_source:` (or ${ENV_TASK_SOURCE}) at a mirror that has the tasks: a folder, an http(s) "
        'base URL or hf:<dataset>@<revision> (README, "Pointing the workflow at another task mirror")'
    )


def _check_source(
    spec: str, tasks: list[str], paper: bool, probe: Callable[[str], tuple[bool, str]]
) -> list[SourceProblem]:
    """The problems of one source string for `tasks` (all from it, `paper`: they are paper tasks)."""
    if spec.startswith(("http://", "https://")):
        ok, detail = probe(spec.rstrip("/") + "/")
        if ok:
            return []
        return [SourceProblem(spec, tuple(tasks), f"the mirror does not answer ({detail})", _fix(paper, "fix"))]
    if spec.startswith("hf:"):
        body = spec[3:]
        if Path(body).is_dir():
            lacking = [t for t in tasks if not (Path(body) / t).is_dir()]
            why = f"no <task> folder of save_to_disk datasets under {body}"
            return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
        repo, _, revision = body.partition("@")
        if not revision:
            why = f"{body} is not a folder, and a hub dataset needs a pinned revision (hf:<dataset>@<40-hex revision>)"
            return [SourceProblem(spec, tuple(tasks), why, _fix(paper, "fix"))]
        if _offline():
            lacking = [t for t in tasks if not _in_hub_cache(repo, revision, t)]
            why = (
                f"offline ({' / '.join(v for v in OFFLINE_ENV if os.environ.get(v))} set) and not in the hub cache "
                f"{_hub_cache()}"
            )
            return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
        endpoint = os.environ.get("HF_ENDPOINT") or DEFAULT_HF_ENDPOINT
        ok, detail = probe(f"{endpoint.rstrip('/')}/api/datasets/{repo}/revision/{revision}")
        if ok and detail != "404":
            return []
        lacking = [t for t in tasks if not _in_hub_cache(repo, revision, t)]
        why = (
            f"the hub has no dataset {repo} at revision {revision} (HTTP 404 from {endpoint})"
            if ok
            else f"the hub at {endpoint} cannot be reached ({detail}) and the tasks are not in the hub cache"
        )
        return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
    if not Path(spec).is_dir():
        return [SourceProblem(spec, tuple(tasks), f"the mirror folder {spec} does not exist", _fix(paper, "fix"))]
    problems = []
    by_missing: dict[tuple[str, ...], list[str]] = {}
    for task in tasks:
        missing = tuple(missing_splits(spec, task))
        if missing:
            by_missing.setdefault(missing, []).append(task)
    for missing, lacking in by_missing.items():
        why = f"no {'/'.join(missing)} split ({{split}}.csv.gz or {{split}}.csv) under {spec}/<task>"
        fix = _fix(paper, "add the task's files there (docs/adding-a-task.md), or")
        problems.append(SourceProblem(spec, tuple(lacking), why, fix))
    return problems


def _is_remote(spec: str) -> bool:
    return spec.startswith(("http://", "https://")) or (spec.startswith("hf:") and not Path(spec[3:]).is_dir())


def lock_problems(config: Mapping[str, Any], task_sheet: pd.DataFrame) -> list[SourceProblem]:
    """The configured tasks from a local source (mirror folder, save_to_disk folder) whose files differ from
    their entry in the task lock (config `task_lock`; no key or no file: nothing to check), or whose split files
    fail `meta.json`'s digests: one problem per task, naming each file with its expected and found digests, and
    the fix (`geneb tasks lock`). A task without a lock entry, and a missing split (a `source_problems` problem of
    its own), are not problems here."""
    lock_path = config.get("task_lock")
    if not lock_path:
        return []
    entries = read_lock(lock_path)
    problems: list[SourceProblem] = []
    for task in config["tasks"]:
        row = task_row(task_sheet, task)
        spec = source_string(row, dict(config))
        if _is_remote(spec) or (not spec.startswith("hf:") and missing_splits(spec, task)):
            continue
        try:
            files = open_source(spec).source_files(task)
        except TaskDigestError as err:
            problems.append(SourceProblem(spec, (task,), str(err), "restore the file, or fix meta.json's sha256"))
            continue
        except TaskSourceError:
            continue  # a missing folder or split, an unreadable meta.json: reported by _check_source or prepare_task
        entry = entries.get(task)
        if entry is None:
            continue
        diff = changes(entry, records(files), files)
        if diff:
            why = f"its files differ from the task lock {lock_path} ({'; '.join(c.describe() for c in diff)})"
            problems.append(SourceProblem(spec, (task,), why, fix_hint(task, lock_path)))
    return problems


def source_problems(
    config: Mapping[str, Any],
    task_sheet: pd.DataFrame,
    *,
    prepared: Callable[[str], bool] | None = None,
    probe: Callable[[str], tuple[bool, str]] = reachable,
) -> list[SourceProblem]:
    """Every configured task (config `tasks`) whose source cannot give it, grouped by source and reason.

    A local mirror folder is checked for every task (its files are the prepare_task rerun key); a remote source
    (http(s), a hub dataset) only for the tasks `prepared` says are not prepared yet, with one `probe` request
    per source (`reachable`; tests pass a stand-in); then the task lock's problems (`lock_problems`). Raises
    nothing but TaskLockError for a lockfile that cannot be read: the caller reports the problems
    (`format_source_problems`) with the models' pre-flight."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for task in config["tasks"]:
        row = task_row(task_sheet, task)
        spec = source_string(row, dict(config))
        if _is_remote(spec) and prepared is not None and prepared(task):
            continue
        groups.setdefault((spec, row["source"] != "mirror"), []).append(task)
    problems: list[SourceProblem] = []
    for (spec, paper), tasks in groups.items():
        problems += _check_source(spec, tasks, paper, probe)
    return problems + lock_problems(config, task_sheet)


def format_source_problems(problems: Iterable[SourceProblem]) -> str:
    """The task-source part of the pre-flight report: a count, then per problem its source, why, every task it
    affects and the fix. "" when there is none."""
    problems = list(problems)
    if not problems:
        return ""
    n = sum(len(p.tasks) for p in problems)
    lines = [f"{n} selected task(s) cannot be read from their source, so nothing was planned:"]
    for p in problems:
        lines.append(f"- {len(p.tasks)} from {p.source}: {p.why}: {', '.join(p.tasks)}")
        lines.append(f"  {p.fix}")
    return "\n".join(lines)
