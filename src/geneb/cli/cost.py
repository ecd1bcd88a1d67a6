"""What a run costs, before and after: `geneb plan` (an estimate of a config's extraction, `geneb.run.estimate`)
and `geneb recommend --max-gpu-hours-per-gb` (the best model under a budget, from the Pareto table
`geneb.analysis.pareto`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any, cast

import pandas as pd

from geneb.cli.common import CliError


def add_plan_command(sub: Any) -> None:
    """The `plan` subcommand on the `geneb` subparsers `sub`."""
    p = sub.add_parser(
        "plan",
        help="estimate a run before it starts: sequences, bases, FLOPs, hours and peak memory per model",
        description="Per model of the config and in total: the sequences and bases its extraction embeds (from the "
        "prepared tasks, else the mirror's meta.json under the config's caps), forward FLOPs from the architecture "
        "(geneb.registry.flops), hours at a configured device rate (--device-tflops) or at the rate measured in an "
        "earlier run's cost.parquet (--measured, --hardware), peak memory of one batch, and the biggest jobs "
        "(docs/cost.md).",
    )
    p.add_argument(
        "--configfile",
        nargs="+",
        default=["config/config.yaml"],
        help="the workflow config file(s), merged in order as snakemake merges them (default config/config.yaml)",
    )
    p.add_argument("--device-tflops", type=float, help="sustained TFLOP/s of the hardware the run will use")
    p.add_argument("--measured", help="an earlier run's results/tables/cost.parquet: take each model's rate from it")
    p.add_argument("--hardware", help="with --measured: the hardware value whose rows to use (default: its only one)")
    p.add_argument("--top", type=int, default=5, help="how many of the biggest jobs to list (default 5)")
    p.add_argument("--workdir", default=".", help="the run folder holding resources/tasks (default .)")
    p.set_defaults(func=cmd_plan)


def _measured(path: str, hardware: str | None) -> tuple[pd.DataFrame, str]:
    """(cost table, hardware) of --measured; the hardware defaults to the table's only one (CliError otherwise)."""
    from geneb.core import integrity

    table = integrity.read_parquet(path)
    values = sorted(set(table["hardware"]))
    if hardware is None:
        if len(values) != 1:
            raise CliError(f"{path} holds {len(values)} kinds of hardware {values}: name one with --hardware")
        hardware = values[0]
    return table, hardware


def _human(value: Any, unit: str) -> str:
    if pd.isna(value):
        return "-"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _hours(value: Any) -> str:
    return "-" if pd.isna(value) else f"{value:.4f}"


def plan_text(table: pd.DataFrame, jobs: pd.DataFrame, *, top: int) -> str:
    """The printed estimate: one line per model, the total, the rate basis per model, the biggest jobs."""
    lines = [
        f"{'model':32} {'seqs':>9} {'bases':>12} {'FLOPs':>11} {'FLOPs/kb':>11} {'hours':>9} {'peak mem/batch':>15}"
    ]
    for r in table.itertuples():
        lines.append(
            f"{r.model:32} {r.sequences:>9,} {r.bases:>12,} {_human(r.flops, 'FLOP'):>11} "
            f"{_human(r.flops_per_kb, 'FLOP'):>11} {_hours(r.hours):>9} {_human(r.peak_memory_bytes, 'B'):>15}"
        )
    lines.append(
        f"{'total':32} {int(table['sequences'].sum()):>9,} {int(table['bases'].sum()):>12,} "
        f"{_human(table['flops'].sum(), 'FLOP'):>11} {'':>11} {_hours(table['hours'].sum(min_count=1)):>9}"
    )
    lines.append("")
    lines.append("device rate per model:")
    lines += [f"  {r.model}: {r.rate_basis}" for r in table.itertuples()]
    unsized = sorted(set(jobs.loc[jobs["size_source"] == "unsized", "task"]))
    if unsized:
        lines.append(f"unsized tasks (no prepared folder, no meta.json; left out of the totals): {', '.join(unsized)}")
    from geneb.run.estimate import biggest_jobs

    lines.append("")
    lines.append(f"biggest jobs (of {len(jobs)}):")
    for r in biggest_jobs(jobs, top).itertuples():
        seconds = float(cast(float, r.seconds))  # itertuples rows are untyped
        hours = "-" if math.isnan(seconds) else f"{seconds / 3600:.4f} h"
        lines.append(
            f"  {r.model} x {r.task}: {r.sequences:,} seqs, {r.bases:,} bases, {_human(r.flops, 'FLOP')}, {hours}"
        )
    return "\n".join(lines)


def cmd_plan(args: argparse.Namespace) -> str:
    """`geneb plan`: the estimate of the config's extraction (`geneb.run.estimate.estimate`)."""
    from geneb.cli.models import _load_run_config
    from geneb.registry.load import load_registry
    from geneb.run.estimate import estimate, model_settings

    config = _load_run_config(args.configfile)
    registry = load_registry(config["model_sheet"])
    measured, hardware = (None, None) if args.measured is None else _measured(args.measured, args.hardware)
    try:
        settings = model_settings(config, registry, list(config["models"]))
        table, jobs = estimate(
            config, registry, settings, device_tflops=args.device_tflops, measured=measured, hardware=hardware,
            workdir=Path(args.workdir),
        )  # fmt: skip
    except ValueError as err:
        raise CliError(str(err)) from err
    return plan_text(table, jobs, top=args.top)


def add_budget_arguments(s: argparse.ArgumentParser) -> None:
    """The budget options of `geneb recommend` (answered by `cmd_recommend_budget`)."""
    s.add_argument(
        "--max-gpu-hours-per-gb",
        type=float,
        help="the best model whose cost is at most N device hours per gigabase of input (measured on the run's "
        "hardware, tables/pareto.parquet; with --device-tflops, analytic FLOPs at that rate)",
    )
    s.add_argument("--hardware", help="with a budget: the measured hardware (default: the table's only one)")
    s.add_argument(
        "--device-tflops",
        type=float,
        help="with a budget: convert the analytic FLOPs per gigabase to hours at this sustained TFLOP/s",
    )


def cmd_recommend_budget(args: argparse.Namespace) -> str:
    """`geneb recommend`: with --max-gpu-hours-per-gb, the best model of --category under the budget and its
    score's interval, from pareto.parquet beside the run's tables; without it, the plain recommendation
    (`geneb.cli.results.cmd_recommend`)."""
    from geneb.cli.results import cmd_recommend

    if args.max_gpu_hours_per_gb is None:
        return cmd_recommend(args)
    from geneb.analysis.pareto import best_under_budget
    from geneb.core import integrity

    if not args.category:
        raise CliError("recommend --max-gpu-hours-per-gb needs --category (a category, macro or micro)")
    results = Path(args.results_dir or "results")
    path = Path(args.table).parent / "pareto.parquet" if args.table else results / "tables" / "pareto.parquet"
    table = integrity.read_parquet(path)
    regime = args.regime or "full"
    protocol = args.protocol or (
        "geneb-paper" if "geneb-paper" in set(table["protocol"]) else table["protocol"].iloc[0]
    )
    budget = float(args.max_gpu_hours_per_gb)
    if args.device_tflops is not None:  # analytic FLOPs per Gb -> hours at the configured rate
        table = table[table["cost_basis"] == "analytic"].assign(
            cost=lambda t: t["cost"] / (args.device_tflops * 1e12) / 3600
        )
        basis, hardware, how = "analytic", None, f"analytic FLOPs at {args.device_tflops:g} TFLOP/s"
    else:
        measured = table[table["cost_basis"] == "measured"]
        values = sorted(set(measured["hardware"]))
        if args.hardware is None and len(values) != 1:
            raise CliError(
                f"{path}: measured on {values or 'no hardware'}: name one with --hardware or give --device-tflops"
            )
        basis, hardware = "measured", args.hardware or values[0]
        how = f"measured on {hardware}"
    best = best_under_budget(
        table, category=args.category, regime=regime, protocol=protocol, budget=budget, cost_basis=basis,
        hardware=hardware,
    )  # fmt: skip
    if best is None:
        return f"{args.category}, {regime}, {protocol}: no model within {budget:g} device hours per Gb ({how})"
    ci = "no interval" if pd.isna(best["ci_low"]) else f"interval {best['ci_low']:.4f}-{best['ci_high']:.4f}"
    return (
        f"{args.category}, {regime}, {protocol}: {best['model']} (MCC {best['value']:.4f}, {ci}), "
        f"{best['cost']:.4g} device hours per Gb ({how}); budget {budget:g}"
    )
