"""`geneb models`, `geneb tasks` (and `tasks lock`), `geneb pin-revisions`, `geneb weights` and `geneb env`:
the model registry, the task catalogue and what a model needs to run.

`geneb models`, `geneb tasks` and `geneb pin-revisions`: the model registry and the task catalogue.

`geneb tasks lock [TASK ...] [--configfile C ...]`: re-lock tasks on purpose (`geneb.tasks.catalogue`).

Reads the config as the workflow does (the files merged in order, as `snakemake --configfile a b` merges them;
schema defaults filled), fetches each task's source files from its source now (an http mirror's and a hub
dataset's files are downloaded again, never taken from the cache), writes their digests as the task's lock entry
in the config's `task_lock` and prints, per task, what changed.

`geneb weights fetch` and `geneb weights list`: the weights of models that are not on the hub.

`geneb env list` and `geneb env build`: the runtime environments of envs/.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.analysis.inputs import load_task_meta, model_frame
from geneb.cli.common import CliError, category_name, existing_file, left_table, read_registry, short_error
from geneb.core.categories import CATEGORIES
from geneb.registry.load import environment_refusals, load_registry, refusals
from geneb.registry.python_entry import PRECOMPUTED, PYTHON
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import AnalysisInputError

#: `geneb models`: the environment a model's extraction runs in when its entry names none
_DEFAULT_ENV = "geneb"


def _entry_source(spec: ModelSpec) -> str:
    """What `geneb models` shows as an entry's source: the source kind, or for a `family: python` entry its
    factory (`python file enc.py:make`, `python module pkg.mod:make`, `python entry-point NAME`; a file under the
    working directory relative to it) and for a `family: precomputed` entry the folder its vectors are in."""
    if spec.family == PYTHON and spec.load.entry:
        entry = spec.load.entry
        kind = "entry-point" if ":" not in entry else ("file" if entry.rsplit(":", 1)[0].endswith(".py") else "module")
        if kind == "file":
            path, factory = entry.rsplit(":", 1)
            if Path(path).resolve().is_relative_to(Path.cwd()):
                path = str(Path(path).resolve().relative_to(Path.cwd()))
            entry = f"{path}:{factory}"
        return f"python {kind} {entry}"
    if spec.family == PRECOMPUTED and spec.source.path:
        return f"precomputed {spec.source.path}"
    return spec.source.kind


def _model_status(spec: ModelSpec) -> dict[str, str]:
    """How `geneb models` shows one entry's runtime: env (the entry's `env`, where the spec has that field, else
    DEFAULT_ENV), source (`_entry_source`), pin (the 12-hex start of the pinned commit, "unpinned", or "-" for a model
    that is not on the hub), runnable ("yes" / "no": here, in this environment), why_not (short reasons,
    "; "-joined: `runnable.refusals`, then what this environment lacks, `runnable.environment_refusals`)."""
    src = spec.source
    if src.kind == "hub":
        pin = str(src.revision)[:12]
    elif src.kind == "hub-unpinned":
        pin = "unpinned"
    else:
        pin = "-"
    why = [short for short, _ in refusals(spec) + environment_refusals(spec)]
    return {
        "env": str(getattr(spec, "env", None) or _DEFAULT_ENV),
        "source": _entry_source(spec),
        "pin": pin,
        "runnable": "no" if why else "yes",
        "why_not": "; ".join(why),
    }


def cmd_models(args: argparse.Namespace) -> str:
    pins = args.pins if Path(args.pins).exists() else None  # no lockfile yet: nothing is pinned
    registry = read_registry(args.sheet, pins, args.config)
    # the random-init twins (one `<model>-twin` per model that can have one) double the list: shown when asked for
    shown = {m: s for m, s in registry.models.items() if args.twins or s.twin is None}
    meta = model_frame(shown)
    if meta.empty:
        raise CliError(f"model sheet {args.sheet} lists no models")
    cols = ["display", "params", "architecture_family", "tokenizer_type", "pretraining_domain"]
    out = meta[cols].copy()
    out["params"] = out["params"].map(lambda v: "" if pd.isna(v) else f"{v:,.0f}")
    status = pd.DataFrame([_model_status(registry.models[m]) for m in out.index], index=out.index)
    out = out.join(status)
    if args.runnable:
        out = out[out["runnable"] == "yes"]
    return left_table(out.reset_index())


def cmd_tasks(args: argparse.Namespace) -> str:
    p = existing_file(args.sheet, "task sheet")
    try:
        tasks = load_task_meta(p)
    except AnalysisInputError:
        raise
    except (ValueError, OSError) as err:  # not tab-separated text: pandas' parser, a binary file
        raise CliError(f"{p} is not a readable task sheet (tab-separated) ({short_error(err)})") from err
    cat = category_name(args.category, CATEGORIES) if args.category else None
    if args.set:
        tasks = tasks[tasks["task_set"] == args.set]
    picked = tasks[tasks["category"] == cat] if cat else tasks
    if picked.empty:
        where = ", ".join(f"{k} {v!r}" for k, v in (("category", cat), ("set", args.set)) if v)
        have = sorted(set(tasks["category"]) - {""})
        raise CliError(
            f"no tasks in {p}"
            + (f" for {where}" if where else "")
            + (f"; categories with tasks: {', '.join(have)}" if have else "")
        )
    return picked[["category", "task_set", "taxon_group", "geneb_task_id"]].to_string()


def cmd_pin_revisions(args: argparse.Namespace) -> str:
    from geneb.registry.weights import PinError, resolve_revisions, write_pins

    read_registry(args.sheet)  # a malformed sheet is a one-line error, not the registry loader's traceback
    try:
        registry = load_registry(args.sheet, pins=args.pins)
        pins = resolve_revisions(registry, args.models, ref=args.ref, endpoint=args.endpoint)
    except (PinError, RegistryError) as err:
        raise CliError(str(err)) from err
    write_pins(args.pins, pins)
    return (
        "\n".join(f"{m}: {p['hub_id']}@{p['revision']} (from {p['resolved_from']})" for m, p in pins.items())
        + f"\nwritten to {args.pins}"
    )


def _load_run_config(paths: list[str]) -> dict[str, Any]:
    """The workflow config of `paths` composed in order as the workflow composes its config files
    (`geneb.run.overlays.compose_files`), validated against the config schema with its defaults filled
    (`geneb.run.checks.check_config`). Raises CliError for a missing or invalid file."""
    from geneb.core.paths import load_schema
    from geneb.run.checks import check_config
    from geneb.run.overlays import compose_files

    for path in paths:
        existing_file(path, "config file")
    try:
        return check_config(compose_files(paths).config, load_schema("config"))
    except ValueError as err:
        raise CliError(str(err)) from err


def _record(r: dict[str, Any] | None) -> str:
    return "absent" if r is None else f"{r['sha256'][:16]}… ({r['size']:,} bytes)"


def cmd_tasks_lock(args: argparse.Namespace) -> str:
    """Re-lock `args.tasks` (default: the config's `tasks`; `--set`: every task of that set in the catalogue)."""
    from geneb.tasks.catalogue import read_catalogue, read_lock, relock, source_string, task_row
    from geneb.tasks.sources import TaskSourceError, open_source

    config = _load_run_config(args.configfile)
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


def _weight_specs(args: argparse.Namespace) -> tuple[Registry, list[ModelSpec]]:
    """The registry with the config's model_weights, and the specs of `args.models` (every model with weights
    outside the hub when none are named); CliError for an unknown model or one whose weights are on the hub."""
    from geneb.registry.weights import WEIGHT_KINDS

    registry = read_registry(args.sheet, None, args.config)
    if args.weights_dir:
        registry = Registry(registry.models, registry.pairs, registry.raw, weights_dir=args.weights_dir)
    names = list(
        getattr(args, "models", None) or [m for m, s in registry.models.items() if s.source.kind in WEIGHT_KINDS]
    )
    specs = []
    for model in names:
        try:
            spec = registry.spec(model)
        except RegistryError as err:
            raise CliError(str(err)) from err
        if spec.source.kind not in WEIGHT_KINDS:
            raise CliError(
                f"model {model}: source kind {spec.source.kind}; only models whose weights are outside the hub "
                "(kind external or download) are fetched here (hub models: docs/hpc.md, 'Offline compute nodes')"
            )
        specs.append(spec)
    return registry, specs


def cmd_weights_fetch(args: argparse.Namespace) -> str:
    from geneb.registry.weights import WeightsError, materialize, settings_source, weights_refusal

    registry, specs = _weight_specs(args)
    done, failed = [], []
    for spec in specs:
        refusal = weights_refusal(spec)
        if refusal is not None:
            failed.append(f"model {spec.id}: {refusal[1]}")
            continue
        try:
            source = settings_source(spec, registry.weights_dir)
            folder = materialize(source, spec.id, say=lambda line: print(line, flush=True))
        except (WeightsError, OSError) as err:
            failed.append(str(err) if str(err).startswith("model ") else f"model {spec.id}: {err}")
            continue
        ident = f"fingerprint {source['fingerprint'][:12]}" if "fingerprint" in source else f"sha256 {source['sha256']}"
        done.append(f"{spec.id}: {folder} ({ident})")
    if failed:
        raise CliError("\n".join([*done, *failed]))
    return "\n".join(done)


def cmd_weights_list(args: argparse.Namespace) -> str:
    from geneb.registry.weights import cache_folder, download_name, is_archive, is_complete, weights_refusal

    registry, specs = _weight_specs(args)
    rows = []
    for spec in specs:
        src = spec.source
        refusal = weights_refusal(spec)
        if refusal is not None:
            state, where = refusal[0], src.path or src.url or src.where or "-"
        elif src.kind == "download" and not src.path:
            folder = cache_folder(registry.weights_dir, spec.id, str(src.sha256).lower())
            name = src.filename or download_name(src.url)
            unpack = src.unpack if src.unpack is not None else is_archive(name)
            cached = is_complete(
                {"path": str(folder), "sha256": str(src.sha256).lower(), "unpack": unpack, "filename": name}
            )
            state = "cached" if cached else f"not fetched (`geneb weights fetch {spec.id}`)"
            where = str(folder) if cached else str(src.url)
        elif Path(str(src.path)).is_dir():
            state, where = "folder", str(src.path)
        else:
            state = "archive (unpacked into the cache when first used)" if is_archive(str(src.path)) else "file"
            where = str(src.path)
        rows.append({"model": spec.id, "kind": src.kind, "state": state, "where": where})
    if not rows:
        return "no models with weights outside the hub"
    return left_table(pd.DataFrame(rows))


def cmd_env_list(args: argparse.Namespace) -> str:
    from geneb.core.envs import DEFAULT_ENV, EnvError, env_status

    registry = read_registry(args.sheet)
    served: dict[str, list[str]] = {}
    for model, spec in registry.models.items():
        served.setdefault(spec.env_name, []).append(model)
    try:
        rows = env_status(prefix=args.prefix)
    except EnvError as err:
        raise CliError(str(err)) from err
    lines = []
    for row in rows:
        models = served.get(row["env"], [])
        if row["env"] == DEFAULT_ENV:  # its models run in the workflow's own interpreter: nothing to build
            state = "the workflow's own environment (no venv needed)"
        else:
            state = "built" if row["built"] else f"not built (`geneb env build {row['env']}`)"
        default = " (default)" if row["env"] == DEFAULT_ENV else ""
        lines.append(
            f"{row['env']}{default}: transformers {row['transformers'] or '-'}; {state}; {row['where']}\n"
            f"  {len(models)} model(s): {', '.join(models) or '-'}"
        )
    return "\n".join(lines)


def cmd_env_build(args: argparse.Namespace) -> str:
    from geneb.core.envs import EnvError, build_env

    try:
        venv = build_env(args.name, prefix=args.prefix, python=args.python, say=lambda line: print(line, flush=True))
    except EnvError as err:
        raise CliError(str(err)) from err
    return str(venv / "bin" / "python")
