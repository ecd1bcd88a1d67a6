"""`geneb tasks lock [TASK ...] [--configfile C ...]`: re-lock tasks on purpose (`geneb.tasks.catalogue`).

Reads the config as the workflow does (the files merged in order, as `snakemake --configfile a b` merges them;
schema defaults filled), fetches each task's source files from its source now (an http mirror's and a hub
dataset's files are downloaded again, never taken from the cache), writes their digests as the task's lock entry
in the config's `task_lock` and prints, per task, what changed.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from geneb.cli.common import CliError, existing_file, short_error


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` merged into `base` recursively (mappings merged key by key, anything else replaced): Snakemake's
    merge of several --configfile files."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def load_run_config(paths: list[str]) -> dict[str, Any]:
    """The workflow config of `paths` (merged in order), validated against the config schema with its defaults
    filled (`geneb.run.config_checks.check_config`). Raises CliError for a missing or invalid file."""
    from geneb.core.paths import load_schema
    from geneb.run.config_checks import check_config

    config: dict[str, Any] = {}
    for path in paths:
        p = existing_file(path, "config file")
        try:
            loaded = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as err:
            raise CliError(f"config file {p} is not YAML ({short_error(err)})") from err
        if not isinstance(loaded, dict):
            raise CliError(f"config file {p} is not a mapping")
        config = _merge(config, loaded)
    try:
        return check_config(config, load_schema("config"))
    except ValueError as err:
        raise CliError(str(err)) from err


def _record(r: dict[str, Any] | None) -> str:
    return "absent" if r is None else f"{r['sha256'][:16]}… ({r['size']:,} bytes)"


def cmd_tasks_lock(args: argparse.Namespace) -> str:
    """Re-lock `args.tasks` (default: the config's `tasks`; `--set`: every task of that set in the catalogue)."""
    from geneb.tasks.catalogue import read_catalogue, read_lock, relock, source_string, task_row
    from geneb.tasks.sources import TaskSourceError, open_source

    config = load_run_config(args.configfile)
    sheet = read_catalogue(config["task_sheet"])
    if args.tasks:
        tasks = list(args.tasks)
    elif args.set:
        tasks = sorted(sheet.loc[sheet["task_set"] == args.set, "task"].astype(str))
    else:
        tasks = list(config["tasks"])
    lock_path = Path(config["task_lock"])
    download = config["task_download"]
    try:
        before = read_lock(lock_path)
        lines = []
        for task in tasks:
            row = task_row(sheet, task)
            spec = source_string(row, config)
            source = open_source(
                spec,
                download_dir=args.download_dir,
                deadline_s=float(download["deadline_s"]),
                read_timeout_s=float(download["read_timeout_s"]),
            )
            files = source.source_files(task, fresh=True)
            diff = relock(lock_path, task, spec, files)
            if task not in before:
                lines.append(f"{task}: locked {len(files)} file(s) from {spec}")
            elif not diff:
                lines.append(f"{task}: unchanged ({len(files)} file(s) from {spec})")
            else:
                lines.append(f"{task}: re-locked from {spec}, {len(diff)} file(s) changed:")
                lines += [f"  {c.name}: {_record(c.expected)} -> {_record(c.found)}" for c in diff]
    except (TaskSourceError, ValueError) as err:  # CatalogueError is a ValueError
        raise CliError(str(err)) from err
    changed = sum(1 for line in lines if "re-locked" in line or ": locked" in line)
    return "\n".join([*lines, f"{len(tasks)} task(s), {changed} written to {lock_path}"])
