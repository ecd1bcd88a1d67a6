"""`geneb`: read GENEB results without writing code.

    geneb models [--runnable]          list the models of the registry: facts, env, source kind, pin, and
                                       whether each is runnable here (and why not)
    geneb tasks [--category C]         list the tasks of the catalogue
    geneb leaderboard [--category C] [--regime R] [--top N]
                                       print the leaderboard of a category (default macro) and regime
    geneb recommend --category C [--regime R]
                                       the best model(s) for a category, with ties where CIs overlap
    geneb pin-revisions MODEL ... [--ref main]
                                       move lockfile pins to the commit a ref points to now (needs network;
                                       the first workflow run pins unpinned models by itself)
    geneb weights fetch MODEL ... [--config C]
                                       fetch (download, unpack) the weights of models whose weights are outside
                                       the hub into the weights cache, ahead of a run on offline compute nodes
    geneb weights list [--config C]    the models with weights outside the hub: given, cached, or what to fetch
    geneb env list [--prefix DIR]      the runtime environments (envs/*.yaml), the models each serves, built or not
    geneb env build NAME [--prefix DIR] [--python PY]
                                       build (or reuse) the pip venv of envs/NAME.yaml (docs/hpc.md, "Environments")
    geneb sbatch-preview [snakemake arguments]
                                       the sbatch call of every job a Slurm run would submit (geneb.run.sbatch_preview)
    geneb recover [snakemake arguments]
                                       resume a run killed hard (geneb.run.recover; docs/hpc.md, "Resuming")

Running the benchmark is `snakemake`; this command reads its outputs (`results/tables/*.parquet`) and the
configuration sheets, and wraps two Snakemake calls for clusters (sbatch-preview, recover: every argument
after the command goes to snakemake; `python -m geneb.run.sbatch_preview` and `python -m geneb.run.recover` are the
same commands). Exit status 2, with a one-line `geneb: error: ...` on stderr and no traceback, for
bad arguments or missing/invalid inputs (a file that is not the table or sheet the command reads, a
category with nothing in it). Output cut short by its reader (`geneb models | head`) ends quietly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import NoReturn

import pandas as pd
import pyarrow as pa

from geneb.analysis.leaderboard import AGGREGATES
from geneb.analysis.metadata import load_task_meta, model_frame
from geneb.core.categories import CATEGORIES
from geneb.registry.load import load_registry
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.runnable import environment_refusals, refusals
from geneb.registry.spec import ModelSpec
from geneb.tables.scores import REGIMES, AnalysisInputError

#: the columns each table-reading command needs, and the table it expects
TABLES = {
    "leaderboard": (
        ("protocol", "regime", "category", "model", "value", "rank", "n_tasks", "borda_rank", "complete"),
        "results/tables/leaderboard.parquet (or compare_published.parquet)",
    ),
    "recommendation": (
        ("protocol", "regime", "category", "model", "role", "value", "ci_low", "ci_high", "tie_rule"),
        "results/tables/recommendations.parquet",
    ),
}


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def _short(err: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most `limit` characters."""
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _file(path: str, what: str, hint: str = "") -> Path:
    """`path` as a Path; CliError when it does not exist or is not a file."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"{what} {p} not found{hint}")
    if not p.is_file():
        raise CliError(f"{what} {p} is not a file")
    return p


def _read(path: str, what: str) -> pd.DataFrame:
    """The `what` table ("leaderboard" or "recommendation") at `path`; CliError when it is missing, not
    parquet, empty, or lacks the columns the command needs."""
    cols, expected = TABLES[what]
    p = _file(path, f"{what} table", "; run `snakemake leaderboard` (or the analyses) first, or pass --table")
    try:
        df = pd.read_parquet(p)
    except (OSError, ValueError, pa.ArrowException) as err:
        why = "not a parquet file, or a corrupt one" if isinstance(err, pa.ArrowInvalid) else _short(err)
        raise CliError(f"{p} cannot be read as a table ({why}); expected {expected}") from err
    if df.empty:
        raise CliError(f"{what} table {p} has no rows")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise CliError(f"{p} is not a {what} table (it lacks the columns {', '.join(missing)}); expected {expected}")
    return df


def _category(name: str, allowed: tuple[str, ...] = (*CATEGORIES, *AGGREGATES)) -> str:
    if name in allowed:
        return name
    low = {c.lower(): c for c in allowed}
    if name.lower() in low:
        return low[name.lower()]
    raise CliError(f"unknown category {name!r}; choose one of: {', '.join(allowed)}")


def _protocol(df: pd.DataFrame, protocol: str | None) -> pd.DataFrame:
    have = sorted(df["protocol"].dropna().astype(str).unique())
    if not have:
        raise CliError("the table has no protocol values")
    if protocol is None:
        protocol = "geneb-paper" if "geneb-paper" in have else have[0]
    if protocol not in have:
        raise CliError(f"protocol {protocol!r} not in the table (have {have})")
    return df[df["protocol"] == protocol]


def _registry(path: str, pins: str | None = None, config: str | None = None) -> Registry:
    """The model registry (config/models.yaml) through its one reader, `geneb.registry.load.load_registry`
    (schema and cross-field checks included), with the lockfile `pins` applied when given, and the
    `model_weights` paths and `execution.weights_dir` of the workflow config file `config` when given and
    present (`_weights_config`); CliError for a missing file, unreadable or malformed YAML, or an invalid
    registry, lockfile or model_weights."""
    p = _file(path, "model sheet")
    weights, weights_dir = _weights_config(config)
    try:
        return load_registry(p, pins=pins, weights=weights, weights_dir=weights_dir)
    except RegistryError as err:
        raise CliError(str(err)) from err


def _weights_config(path: str | None) -> tuple[dict[str, str], str | None]:
    """({model: path} of the config key `model_weights`, execution.weights_dir or None) of the workflow config
    file `path` ({} and None when there is no such file); CliError for a file that is not a YAML mapping."""
    if path is None or not Path(path).is_file():
        return {}, None
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise CliError(f"config file {path} is not valid YAML ({_short(err)})") from err
    if not isinstance(data, dict):
        raise CliError(f"config file {path}: expected a mapping of config keys")
    weights = data.get("model_weights") or {}
    if not isinstance(weights, dict):
        raise CliError(f"config file {path}: model_weights must be a mapping {{model id: path}}, got {weights!r}")
    return {str(k): str(v) for k, v in weights.items()}, ((data.get("execution") or {}).get("weights_dir"))


#: `geneb models`: the environment a model's extraction runs in when its entry names none
DEFAULT_ENV = "geneb"


def model_status(spec: ModelSpec) -> dict[str, str]:
    """How `geneb models` shows one entry's runtime: env (the entry's `env`, where the spec has that field, else
    DEFAULT_ENV), source (its kind), pin (the 12-hex start of the pinned commit, "unpinned", or "-" for a model
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
        "source": src.kind,
        "pin": pin,
        "runnable": "no" if why else "yes",
        "why_not": "; ".join(why),
    }


def _ci_label(path: str, table: pd.DataFrame) -> str | None:
    """ "95% CI" etc.: the confidence level of the analysis that wrote the table, from the
    analysis_summary.json beside it when its settings_hash is the table's; None when not known."""
    try:
        summary = json.loads(Path(path).with_name("analysis_summary.json").read_text())
        hashes = set(table["settings_hash"].dropna().astype(str))
        conf = float(summary["settings"]["confidence"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if hashes != {summary.get("settings_hash")} or not 0 < conf < 1:
        return None
    return f"{conf * 100:g}% CI"


def cmd_models(args: argparse.Namespace) -> str:
    pins = args.pins if Path(args.pins).exists() else None  # no lockfile yet: nothing is pinned
    registry = _registry(args.sheet, pins, args.config)
    meta = model_frame(registry.models)
    if meta.empty:
        raise CliError(f"model sheet {args.sheet} lists no models")
    cols = ["display", "params", "architecture_family", "tokenizer_type", "pretraining_domain"]
    out = meta[cols].copy()
    out["params"] = out["params"].map(lambda v: "" if pd.isna(v) else f"{v:,.0f}")
    status = pd.DataFrame([model_status(registry.models[m]) for m in out.index], index=out.index)
    out = out.join(status)
    if args.runnable:
        out = out[out["runnable"] == "yes"]
    return _left_table(out.reset_index())


def _left_table(df: pd.DataFrame) -> str:
    """`df` as text, one line per row, every column left-aligned to its widest cell, two spaces apart (the
    last column, free text, is not padded)."""
    cells = [list(map(str, df.columns))] + [
        ["" if pd.isna(v) else str(v) for v in row] for row in df.itertuples(index=False)
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(df.columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in cells).rstrip()


def cmd_tasks(args: argparse.Namespace) -> str:
    p = _file(args.sheet, "task sheet")
    try:
        tasks = load_task_meta(p)
    except AnalysisInputError:
        raise
    except (ValueError, OSError) as err:  # not tab-separated text: pandas' parser, a binary file
        raise CliError(f"{p} is not a readable task sheet (tab-separated) ({_short(err)})") from err
    cat = _category(args.category, CATEGORIES) if args.category else None
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


def _rows(args: argparse.Namespace, what: str) -> tuple[pd.DataFrame, str]:
    """The rows of `args.table` for args.protocol/regime/category, and the category's official spelling."""
    table = _protocol(_read(args.table, what), args.protocol)
    cat = _category(args.category)
    rows = table[(table["regime"] == args.regime) & (table["category"] == cat)]
    if rows.empty:
        have = sorted(table.loc[table["regime"] == args.regime, "category"].dropna().astype(str).unique())
        raise CliError(
            f"no {what} rows for category {cat!r}, regime {args.regime!r}"
            + (f" (the table has: {', '.join(have)})" if have else "")
        )
    return rows, cat


def cmd_leaderboard(args: argparse.Namespace) -> str:
    b, cat = _rows(args, "leaderboard")
    b = b.sort_values(["rank", "model"], na_position="last").head(args.top)
    cols = ["rank", "model", "value", "n_tasks", "borda_rank", "complete"]
    return f"{cat}, {args.regime} ({b['protocol'].iloc[0]}): MCC\n" + b[cols].to_string(
        index=False, float_format=lambda v: f"{v:.4f}"
    )


def cmd_recommend(args: argparse.Namespace) -> str:
    r, cat = _rows(args, "recommendation")
    best = r[r["role"] == "best"]
    if best.empty:
        raise CliError(f"{args.table}: no 'best' row for category {cat!r}, regime {args.regime!r}")
    label = _ci_label(args.table, r)

    def ci(lo: float, hi: float) -> str:
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "no CI"
        return f"{label or 'CI'} {lo:.4f}-{hi:.4f}"

    b = best.iloc[0]
    lines = [f"{cat}, {args.regime}: {b['model']} (MCC {b['value']:.4f}, {ci(b['ci_low'], b['ci_high'])})"]
    tied = r[r["role"] == "tied"]
    if len(tied):
        lines.append(f"indistinguishable by the {r['tie_rule'].iloc[0]} rule:")
        lines += [f"  {t.model} (MCC {t.value:.4f}, {ci(t.ci_low, t.ci_high)})" for t in tied.itertuples()]
    if label is None:
        lines.append("(confidence level unknown: no analysis_summary.json with the table's settings_hash beside it)")
    return "\n".join(lines)


def cmd_pin_revisions(args: argparse.Namespace) -> str:
    from geneb.registry.pins import PinError, resolve_revisions, write_pins

    _registry(args.sheet)  # a malformed sheet is a one-line error, not the registry loader's traceback
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


def _weight_specs(args: argparse.Namespace) -> tuple[Registry, list[ModelSpec]]:
    """The registry with the config's model_weights, and the specs of `args.models` (every model with weights
    outside the hub when none are named); CliError for an unknown model or one whose weights are on the hub."""
    from geneb.registry.weights import WEIGHT_KINDS

    registry = _registry(args.sheet, None, args.config)
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
    from geneb.registry.weights import WeightsError, settings_source, weights_refusal
    from geneb.registry.weights_fetch import materialize

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
    return _left_table(pd.DataFrame(rows))


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return n


#: snakemake options naming a path that must exist, checked before Snakemake starts (what, must be a folder?)
SNAKEMAKE_PATHS = {
    "-s": ("Snakefile", False),
    "--snakefile": ("Snakefile", False),
    "--configfile": ("config file", False),
    "--configfiles": ("config file", False),
    "-d": ("run directory", True),
    "--directory": ("run directory", True),
    "--profile": ("profile", True),
}


def _check_snakemake_paths(args: list[str]) -> None:
    """CliError for a Snakefile, config file, run directory or profile folder that does not exist (a profile
    given by name, without a "/", is looked up by Snakemake in its config folders and not checked here)."""
    for i, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name not in SNAKEMAKE_PATHS:
            continue
        values = [value] if value else []
        for nxt in args[i + 1 :] if not value else []:
            if nxt.startswith("-"):
                break
            values.append(nxt)
            if name not in ("--configfile", "--configfiles"):
                break
        what, folder = SNAKEMAKE_PATHS[name]
        if not values:
            raise CliError(f"{name} needs a value")
        for v in values:
            if name == "--profile" and "/" not in v:
                continue
            p = Path(v)
            if not p.exists():
                raise CliError(f"{what} {p} not found ({name})")
            if folder != p.is_dir():
                raise CliError(f"{what} {p} is not a {'folder' if folder else 'file'} ({name})")


def cmd_env_list(args: argparse.Namespace) -> str:
    from geneb.core.envs import DEFAULT_ENV, EnvError, env_status

    registry = _registry(args.sheet)
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


def cmd_sbatch_preview(args: argparse.Namespace) -> int:
    from geneb.run import sbatch_preview

    _check_snakemake_paths(args.snakemake_args)
    return sbatch_preview.main(args.snakemake_args)


def cmd_recover(args: argparse.Namespace) -> int:
    from geneb.run import recover

    _check_snakemake_paths(args.snakemake_args)
    return recover.main(args.snakemake_args)


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's convention for bad input: one `geneb: error:` line and exit status 2 (argparse
    itself prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"geneb: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the `geneb` command."""
    p = _Parser(prog="geneb", description="Read GENEB results: models, tasks, leaderboards, recommendations.")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser(
        "models", help="list the models of the registry: facts, env, source, pin, runnable here and why not"
    )
    m.add_argument("--sheet", default="config/models.yaml")
    m.add_argument("--pins", default="config/model_revisions.yaml", help="the lockfile of pinned hub revisions")
    m.add_argument("--runnable", action="store_true", help="list only the models runnable here")
    m.add_argument(
        "--config",
        default="config/config.yaml",
        help="the workflow config whose model_weights are applied (if present)",
    )
    m.set_defaults(func=cmd_models)
    t = sub.add_parser("tasks", help="list the tasks of the catalogue")
    t.add_argument("--sheet", default="config/tasks.tsv")
    t.add_argument("--category", help=f"one of: {', '.join(CATEGORIES)}")
    t.add_argument("--set", choices=["paper", "mirror"])
    t.set_defaults(func=cmd_tasks)
    pr = sub.add_parser("pin-revisions", help="move lockfile pins to the commit a ref points to now (needs network)")
    pr.add_argument("models", nargs="+", help="registry ids of hub models")
    pr.add_argument("--ref", default="main", help="branch or tag to resolve (default main)")
    pr.add_argument("--sheet", default="config/models.yaml")
    pr.add_argument("--pins", default="config/model_revisions.yaml")
    pr.add_argument("--endpoint", default=None, help="hub endpoint (default: HF_ENDPOINT or huggingface.co)")
    pr.set_defaults(func=cmd_pin_revisions)
    w = sub.add_parser("weights", help="fetch or list the weights of models whose weights are outside the hub")
    w_sub = w.add_subparsers(dest="weights_command", required=True)
    for name, func, help_ in (
        (
            "fetch",
            cmd_weights_fetch,
            "download / unpack the weights of MODEL ... into the weights cache (needs network)",
        ),
        ("list", cmd_weights_list, "each model with weights outside the hub: given, cached, or what to fetch"),
    ):
        ws = w_sub.add_parser(name, help=help_)
        if name == "fetch":
            ws.add_argument("models", nargs="+", help="registry ids of models of source kind external or download")
        ws.add_argument(
            "--config", default="config/config.yaml", help="the workflow config (model_weights, weights_dir)"
        )
        ws.add_argument("--sheet", default="config/models.yaml")
        ws.add_argument(
            "--weights-dir", default=None, help="the weights cache (default: the config's execution.weights_dir)"
        )
        ws.set_defaults(func=func)
    env = sub.add_parser("env", help="list or build the runtime environments of envs/ (pip venvs)")
    env_sub = env.add_subparsers(dest="env_command", required=True)
    cache_help = "the folder the venvs are cached under (default $GENEB_ENV_DIR, else .geneb/envs)"
    el = env_sub.add_parser("list", help="each env, the models it serves, whether built and where")
    el.add_argument("--prefix", default=None, help=cache_help)
    el.add_argument("--sheet", default="config/models.yaml")
    el.set_defaults(func=cmd_env_list)
    eb = env_sub.add_parser("build", help="build (or reuse) the pip venv of envs/NAME.yaml; prints its python")
    eb.add_argument("name", help="an env name (a file envs/NAME.yaml)")
    eb.add_argument("--prefix", default=None, help=cache_help)
    eb.add_argument("--python", default=None, help="the interpreter to make it from (default: this one)")
    eb.set_defaults(func=cmd_env_build)
    for name, func, table, help_ in (
        ("leaderboard", cmd_leaderboard, "results/tables/leaderboard.parquet", "print a leaderboard"),
        ("recommend", cmd_recommend, "results/tables/recommendations.parquet", "recommend a model for a category"),
    ):
        s = sub.add_parser(name, help=help_)
        s.add_argument("--category", default="macro" if name == "leaderboard" else None, required=name == "recommend")
        s.add_argument("--regime", default="full", choices=REGIMES)
        s.add_argument("--protocol")
        s.add_argument("--table", default=table)
        if name == "leaderboard":
            s.add_argument("--top", type=_positive_int, default=50, help="print the first N models (default 50)")
        s.set_defaults(func=func)
    for name, func, help_ in (
        ("sbatch-preview", cmd_sbatch_preview, "print the sbatch call of every job a Slurm run would submit"),
        ("recover", cmd_recover, "resume a run killed hard: unlock, remove partial files, rerun the incomplete"),
    ):
        # every argument after the command goes to snakemake (main passes the unparsed rest); -h is theirs
        s = sub.add_parser(name, help=help_ + " (snakemake arguments follow)", add_help=False)
        s.set_defaults(func=func, snakemake_args=[], passthrough=True)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `geneb` console script; returns the exit status."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if getattr(args, "passthrough", False):
        args.snakemake_args = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        out = args.func(args)
    except (CliError, AnalysisInputError, OSError) as err:
        msg = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
        print(f"geneb: error: {msg}", file=sys.stderr)
        return 2
    if isinstance(out, int):  # a wrapped command printed its own output; this is its exit status
        return out
    try:
        print(out)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (`geneb models | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the flush at exit does not fail again
    return 0


if __name__ == "__main__":
    sys.exit(main())
