"""`geneb`: read GENEB results without writing code.

    geneb models                       list the models of the registry
    geneb tasks [--category C]         list the tasks of the catalogue
    geneb leaderboard [--category C] [--regime R]
                                       print the leaderboard of a category (default macro) and regime
    geneb recommend --category C [--regime R]
                                       the best model(s) for a category, with ties where CIs overlap
    geneb pin-revisions MODEL ... [--ref main]
                                       pin hub models to the commit a ref points to now (needs network)

Running the benchmark is `snakemake`; this command only reads its outputs (`results/tables/*.parquet`) and
the configuration sheets. Exit status 2 for bad arguments or missing/invalid inputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from geneb.analysis.leaderboard import AGGREGATES
from geneb.analysis.metadata import load_model_meta, load_task_meta
from geneb.analysis.tables import REGIMES, AnalysisInputError
from geneb.categories import CATEGORIES


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def _read(path: str, what: str) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise CliError(f"{what} {p} not found; run `snakemake leaderboard` (or the analyses) first, or pass --table")
    return pd.read_parquet(p)


def _category(name: str) -> str:
    if name in (*CATEGORIES, *AGGREGATES):
        return name
    low = {c.lower(): c for c in (*CATEGORIES, *AGGREGATES)}
    if name.lower() in low:
        return low[name.lower()]
    raise CliError(f"unknown category {name!r}; choose one of: {', '.join((*CATEGORIES, *AGGREGATES))}")


def _protocol(df: pd.DataFrame, protocol: str | None) -> pd.DataFrame:
    have = sorted(df["protocol"].unique())
    if protocol is None:
        protocol = "geneb-paper" if "geneb-paper" in have else have[0]
    if protocol not in have:
        raise CliError(f"protocol {protocol!r} not in the table (have {have})")
    return df[df["protocol"] == protocol]


def cmd_models(args: argparse.Namespace) -> str:
    meta = load_model_meta(args.sheet)
    cols = ["display", "params", "architecture_family", "tokenizer_type", "pretraining_domain"]
    out = meta[cols].copy()
    out["params"] = out["params"].map(lambda v: "" if pd.isna(v) else f"{v:,.0f}")
    return out.to_string()


def cmd_tasks(args: argparse.Namespace) -> str:
    tasks = load_task_meta(args.sheet)
    if args.category:
        tasks = tasks[tasks["category"] == _category(args.category)]
    if args.set:
        tasks = tasks[tasks["task_set"] == args.set]
    return tasks[["category", "task_set", "taxon_group", "geneb_task_id"]].to_string()


def _rows(args: argparse.Namespace, what: str) -> tuple[pd.DataFrame, str]:
    """The rows of `args.table` for args.protocol/regime/category, and the category's official spelling."""
    table = _protocol(_read(args.table, f"{what} table"), args.protocol)
    cat = _category(args.category)
    rows = table[(table["regime"] == args.regime) & (table["category"] == cat)]
    if rows.empty:
        raise CliError(f"no {what} rows for category {cat!r}, regime {args.regime!r}")
    return rows, cat


def cmd_leaderboard(args: argparse.Namespace) -> str:
    b, cat = _rows(args, "leaderboard")
    b = b.sort_values(["rank", "model"], na_position="last").head(args.top)
    cols = ["rank", "model", "value", "n_tasks", "borda_rank", "complete"]
    return f"{cat}, {args.regime} ({b['protocol'].iloc[0]}): MCC\n" + b[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}")


def cmd_recommend(args: argparse.Namespace) -> str:
    r, cat = _rows(args, "recommendation")
    best = r[r["role"] == "best"].iloc[0]
    lines = [f"{cat}, {args.regime}: {best['model']} (MCC {best['value']:.4f}, 95% CI {best['ci_low']:.4f}-{best['ci_high']:.4f})"]
    tied = r[r["role"] == "tied"]
    if len(tied):
        lines.append(f"indistinguishable by the {r['tie_rule'].iloc[0]} rule:")
        lines += [f"  {t.model} (MCC {t.value:.4f}, 95% CI {t.ci_low:.4f}-{t.ci_high:.4f})" for t in tied.itertuples()]
    return "\n".join(lines)


def cmd_pin_revisions(args: argparse.Namespace) -> str:
    from geneb.models.pins import PinError, resolve_revisions, write_pins
    from geneb.models.registry import load_registry

    registry = load_registry(args.sheet, pins=args.pins)
    try:
        pins = resolve_revisions(registry, args.models, ref=args.ref, endpoint=args.endpoint)
    except PinError as err:
        raise CliError(str(err)) from err
    write_pins(args.pins, pins)
    return "\n".join(f"{m}: {p['hub_id']}@{p['revision']} (from {p['resolved_from']})" for m, p in pins.items()) + f"\nwritten to {args.pins}"


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the `geneb` command."""
    p = argparse.ArgumentParser(prog="geneb", description="Read GENEB results: models, tasks, leaderboards, recommendations.")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("models", help="list the models of the registry")
    m.add_argument("--sheet", default="config/models.yaml")
    m.set_defaults(func=cmd_models)
    t = sub.add_parser("tasks", help="list the tasks of the catalogue")
    t.add_argument("--sheet", default="config/tasks.tsv")
    t.add_argument("--category")
    t.add_argument("--set", choices=["paper", "mirror"])
    t.set_defaults(func=cmd_tasks)
    pr = sub.add_parser("pin-revisions", help="pin hub models to the commit a ref points to now (needs network)")
    pr.add_argument("models", nargs="+", help="registry ids of hub models")
    pr.add_argument("--ref", default="main", help="branch or tag to resolve (default main)")
    pr.add_argument("--sheet", default="config/models.yaml")
    pr.add_argument("--pins", default="config/model_revisions.yaml")
    pr.add_argument("--endpoint", default=None, help="hub endpoint (default: HF_ENDPOINT or huggingface.co)")
    pr.set_defaults(func=cmd_pin_revisions)
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
            s.add_argument("--top", type=int, default=50)
        s.set_defaults(func=func)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `geneb` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        print(args.func(args))
    except (CliError, AnalysisInputError, FileNotFoundError) as err:
        print(f"geneb: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
