"""`geneb models`, `geneb tasks` and `geneb pin-revisions`: the model registry and the task catalogue."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from geneb.analysis.inputs.metadata import load_task_meta, model_frame
from geneb.cli.common import CliError, category_name, existing_file, left_table, read_registry, short_error
from geneb.core.categories import CATEGORIES
from geneb.registry.load import environment_refusals, load_registry, refusals
from geneb.registry.python_entry import PRECOMPUTED, PYTHON
from geneb.registry.registry import RegistryError
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import AnalysisInputError

#: `geneb models`: the environment a model's extraction runs in when its entry names none
DEFAULT_ENV = "geneb"


def entry_source(spec: ModelSpec) -> str:
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


def model_status(spec: ModelSpec) -> dict[str, str]:
    """How `geneb models` shows one entry's runtime: env (the entry's `env`, where the spec has that field, else
    DEFAULT_ENV), source (`entry_source`), pin (the 12-hex start of the pinned commit, "unpinned", or "-" for a model
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
        "env": str(getattr(spec, "env", None) or DEFAULT_ENV),
        "source": entry_source(spec),
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
    status = pd.DataFrame([model_status(registry.models[m]) for m in out.index], index=out.index)
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
