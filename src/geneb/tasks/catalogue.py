"""The task catalogue (config/tasks.tsv) and the task lock kept with the config.

The task catalogue (config/tasks.tsv): loading, validation and which source serves each task.

The task lock: the sha256 and size of every source file a task was prepared from, kept with the config.

A lockfile beside `config/model_revisions.yaml` (the model pins, `geneb.registry.weights`), in the same spirit: the first
preparation of a task records what it read, and every later run must read exactly that, or is refused naming
task, file, expected and found digests and the fix. Config key `task_lock` (default `config/tasks.lock`, relative to
the working directory like every path of the config; a config kept outside `config/` names its own):

    schema_version: 1
    tasks:
      ienhancer2l_strong_vs_weak:
        source: ../shared/data/tasks           # where it was locked from (a note: files are compared, not sources)
        locked_at: 2026-12-02T02:00:00+00:00
        generation: 0                          # +1 each time `geneb tasks lock` accepts changed data files
        files:
          meta.json: {sha256: 64 hex, size: 2314}
          test.csv.gz: {sha256: ..., size: ...}
          train.csv.gz: {sha256: ..., size: ...}

The files are those the source reads for the task (`TaskSource.source_files`): a mirror folder's or http mirror's
split files (`{split}.csv.gz` or `.csv`) and `meta.json` where there is one; a `save_to_disk` folder's dataset
files (`hf:/path`, `state.json` left out: it holds a cache fingerprint); a hub dataset's `tasks/<task>/{split}.csv`
at the pinned revision. The comparison is by file name and content, never by source string: the same files
from a moved mirror or another server are the same data.

Writes merge one task's entry into the file under an exclusive inter-process lock (`geneb.core.ipc.held` on a
hidden `.<name>.lck` beside it) and replace the file atomically (`geneb.core.integrity`), so prepare_task jobs
running at once never lose each other's entries. `geneb tasks lock TASK ...` re-locks on purpose.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb.core import yamlio
from geneb.core.integrity import write_text_atomic
from geneb.core.ipc import held
from geneb.tasks.sources import (
    DATA_FILE_SUFFIXES,
    ENV_PAPER_TASK_SOURCE,
    ENV_TASK_SOURCE,
    TaskDigestError,
    file_record,
    resolve_source_string,
)


class CatalogueError(ValueError):
    """A catalogue problem: unknown task, duplicate id, a row that breaks the schema."""


def read_catalogue(path: str | Path) -> pd.DataFrame:
    """The catalogue as strings (empty cells stay ''), indexed by `task`. Raises CatalogueError on duplicate
    task ids or a missing `task` column."""
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "task" not in df.columns:
        raise CatalogueError(f"{path}: column 'task' missing")
    dup = df["task"][df["task"].duplicated()]
    if not dup.empty:
        raise CatalogueError(f"{path}: duplicate task ids: {sorted(set(dup))}")
    df = df.set_index("task", drop=False)
    df.attrs["path"] = str(path)
    return df


def validate_catalogue(df: pd.DataFrame, schema: dict[str, Any]) -> None:
    """Validate every row against the JSON schema (workflow/schemas/tasks.schema.yaml); the error names the
    task and the offending field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    for task, row in df.iterrows():
        errors = sorted(validator.iter_errors(row.to_dict()), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            field = "/".join(map(str, e.path)) or "(row)"
            raise CatalogueError(f"task catalogue row {task!r}, field {field}: {e.message}")


def task_row(df: pd.DataFrame, task: str) -> dict[str, Any]:
    """One catalogue row as a dict; raises CatalogueError naming close matches for an unknown task."""
    if task not in df.index:
        import difflib

        close = difflib.get_close_matches(task, df.index.tolist(), n=3)
        sheet = df.attrs.get("path", "config/tasks.tsv")
        raise CatalogueError(
            f"task {task!r} is not in the catalogue {sheet} (the config's task_sheet); add a row for it there "
            "(docs/adding-a-task.md)" + (f"; did you mean {close}?" if close else "")
        )
    return {str(k): v for k, v in df.loc[task].to_dict().items()}


def source_string(row: dict[str, Any], config: dict[str, Any]) -> str:
    """The source string for a task: mirrored tasks use `task_source` ($GENEB_TASK_SOURCE wins); paper tasks
    their catalogue source unless `paper_task_source` ($GENEB_PAPER_TASK_SOURCE wins) is set."""
    if row["source"] == "mirror":
        return resolve_source_string(config.get("task_source"), ENV_TASK_SOURCE)
    override = resolve_source_string(config.get("paper_task_source") or row["source"], ENV_PAPER_TASK_SOURCE)
    return override


_LOCK_SCHEMA_VERSION = 1
#: a sha256 as the lock writes it (lower-case hex)
_HEX64 = re.compile(r"[0-9a-f]{64}")
# the config key naming the lockfile is `task_lock`, default config/tasks.lock (workflow/schemas/config.schema.yaml)
#: the lockfile's header (rewritten with every write)
_LOCK_HEADER = """\
# Task lock: the sha256 and size of every source file each task was prepared from (geneb.tasks.catalogue).
# The first preparation of a task records its files here; a later run that finds other files for the task
# (a changed label, a replaced mirror, a corrupted download) is refused, naming the file and both digests.
# Commit this file with your config. To accept changed task data on purpose: geneb tasks lock TASK ...
"""


class TaskLockError(TaskDigestError):
    """A task whose source files differ from the lock, or a lockfile that cannot be read."""


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _flock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lck")


def read_lock(path: str | Path) -> dict[str, dict[str, Any]]:
    """The `tasks` mapping of the lockfile at `path` ({task: entry}); {} when the file does not exist.
    Raises TaskLockError naming the file and the task for a file that is not a lock of this schema."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = yamlio.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise TaskLockError(f"task lock {path} is not YAML: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != _LOCK_SCHEMA_VERSION:
        raise TaskLockError(f"task lock {path}: expected schema_version {_LOCK_SCHEMA_VERSION} and a `tasks` mapping")
    tasks = data.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise TaskLockError(f"task lock {path}: `tasks` is not a mapping")
    for task, entry in tasks.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        ok = (
            isinstance(files, dict)
            and files
            and all(
                isinstance(r, dict)
                and isinstance(r.get("sha256"), str)
                and _HEX64.fullmatch(r["sha256"]) is not None
                and isinstance(r.get("size"), int)
                for r in files.values()
            )
        )
        if not ok:
            raise TaskLockError(
                f"task lock {path}: task {task!r}: an entry needs `files: {{name: {{sha256: 64 hex, size: bytes}}}}`, "
                f"got {entry!r}"
            )
    return tasks


def _write(path: Path, tasks: Mapping[str, Any]) -> None:
    text = _LOCK_HEADER + yaml.safe_dump(
        {"schema_version": _LOCK_SCHEMA_VERSION, "tasks": {t: tasks[t] for t in sorted(tasks)}},
        sort_keys=False,
        default_flow_style=None,
        width=200,
    )
    write_text_atomic(path, text)


def records(files: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
    """{name: {"sha256": 64 hex, "size": bytes}} of `files` ({name: local path}), names sorted."""
    return {name: file_record(files[name]) for name in sorted(files)}


@dataclass(frozen=True)
class FileChange:
    """One file of a task whose content differs from the lock: expected / found are {"sha256", "size"} records,
    None for a file absent on that side. path: where it was read (None when absent)."""

    name: str
    expected: dict[str, Any] | None
    found: dict[str, Any] | None
    path: Path | None = None

    def describe(self) -> str:
        def one(r: dict[str, Any] | None) -> str:
            return "no such file" if r is None else f"sha256 {r['sha256']} ({r['size']:,} bytes)"

        where = f", read from {self.path}" if self.path is not None else ""
        return f"{self.name}: expected {one(self.expected)}, found {one(self.found)}{where}"


def changes(
    entry: Mapping[str, Any], found: Mapping[str, dict[str, Any]], paths: Mapping[str, Path] | None = None
) -> list[FileChange]:
    """The files whose name or content differs between a lock entry and `found` (`records` of what the source
    has now), in name order."""
    locked = entry.get("files") or {}
    paths = paths or {}
    out = []
    for name in sorted(set(locked) | set(found)):
        a, b = locked.get(name), found.get(name)
        if a is None or b is None or a["sha256"] != b["sha256"] or int(a["size"]) != int(b["size"]):
            out.append(FileChange(name, dict(a) if a else None, dict(b) if b else None, paths.get(name)))
    return out


def fix_hint(task: str, lock_path: str | Path) -> str:
    """The fix named by every refusal: what to do when the new data is intended, and when it is not."""
    return (
        f"if the new data is intended, re-lock it: geneb tasks lock {task} --configfile <your config> "
        f'(writes {lock_path}); otherwise restore the source\'s files (docs/adding-a-task.md, "The task lock")'
    )


def _mismatch_message(task: str, source: str, lock_path: str | Path, diff: list[FileChange]) -> str:
    """One message for a task whose files differ from its lock entry: task, source, every file with its expected
    and found digests, and the fix."""
    lines = "; ".join(c.describe() for c in diff)
    cached = (
        " (an http mirror's files are read from its download cache: a cached copy that changed on disk is refused "
        "on every use until it is deleted, which downloads it again)"
        if source.startswith(("http://", "https://"))
        else ""
    )
    head = f"task {task!r}: the source files from {source} differ from the task lock {lock_path}"
    return f"{head}: {lines}{cached}; {fix_hint(task, lock_path)}"


def check_files(lock_path: str | Path, task: str, source: str, files: Mapping[str, Path]) -> dict[str, Any] | None:
    """Compare the files a source gives for `task` ({name: local path}) with its lock entry. Returns the entry, or
    None when the task is not locked yet. Raises TaskLockError (`_mismatch_message`) when any file differs."""
    entry = read_lock(lock_path).get(task)
    if entry is None:
        return None
    diff = changes(entry, records(files), files)
    if diff:
        raise TaskLockError(_mismatch_message(task, source, lock_path, diff))
    return entry


def record_files(lock_path: str | Path, task: str, source: str, files: Mapping[str, Path]) -> dict[str, Any]:
    """Record `task`'s files in the lock if it has no entry yet (the first preparation); returns the entry in the
    lock. When another process recorded the task meanwhile, its entry must match (else TaskLockError), so two
    concurrent first preparations of one task never accept two different files."""
    path = Path(lock_path)
    found = records(files)
    path.parent.mkdir(parents=True, exist_ok=True)
    with held(_flock_path(path)):
        tasks = read_lock(path)
        entry = tasks.get(task)
        if entry is not None:
            diff = changes(entry, found, files)
            if diff:
                raise TaskLockError(_mismatch_message(task, source, path, diff))
            return entry
        entry = {"source": source, "locked_at": _now(), "generation": 0, "files": found}
        tasks[task] = entry
        _write(path, tasks)
    return entry


def _data_changed(diff: list[FileChange]) -> bool:
    return any(c.name.endswith(DATA_FILE_SUFFIXES) or "/" in c.name for c in diff)


def relock(lock_path: str | Path, task: str, source: str, files: Mapping[str, Path]) -> list[FileChange]:
    """Write `task`'s files as its lock entry now (`geneb tasks lock`), whatever was locked before; returns what
    changed ([] when the entry already matched: the file is then left as it was). The entry's `generation` goes up
    by one when a data file (not only `meta.json`) changed, which gives a remote task a new identity
    (`lock_identity`) so it is prepared again."""
    path = Path(lock_path)
    found = records(files)
    path.parent.mkdir(parents=True, exist_ok=True)
    with held(_flock_path(path)):
        tasks = read_lock(path)
        old = tasks.get(task)
        diff = changes(old or {}, found, files)
        if old is not None and not diff:
            return []
        generation = int((old or {}).get("generation", 0)) + (1 if old is not None and _data_changed(diff) else 0)
        tasks[task] = {"source": source, "locked_at": _now(), "generation": generation, "files": found}
        _write(path, tasks)
    return diff


def lock_identity(identity: Mapping[str, Any], entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the lock adds to a task's source identity (`geneb.tasks.sources.source_identity`, part of
    `RunPlan.task_params`): for a source whose identity is not its content (an http mirror, a hub dataset: kind
    `remote`), the lock entry's `generation` when above 0, so a task re-locked to new data is prepared again while
    the first lock (generation 0, written by the first preparation) changes no key. Content identities (a folder,
    a save_to_disk folder) already change with their files and get nothing."""
    out = dict(identity)
    if identity.get("kind") == "remote" and entry is not None and int(entry.get("generation", 0)) > 0:
        out["lock_generation"] = int(entry["generation"])
    return out
