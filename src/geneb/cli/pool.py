"""`geneb bundle` and `geneb merge`: a run's results in one checked archive, and one results folder from several
(geneb.pool; docs/pooling.md)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from geneb.cli.common import CliError


def cmd_bundle(args: argparse.Namespace) -> str:
    """Write the bundle of --results-dir to --out; the summary line names its members and size."""
    from pathlib import Path

    from geneb.pool.bundle import BundleError, write_bundle

    try:
        manifest = write_bundle(args.results_dir, args.out, model_sheet=args.model_sheet)
    except BundleError as err:
        raise CliError(str(err)) from err
    members = manifest["members"]
    return (
        f"wrote {args.out} ({Path(args.out).stat().st_size} bytes): {len(members)} members + manifest.json "
        f"({', '.join(members)})"
    )


def cmd_merge(args: argparse.Namespace) -> str:
    """Merge the bundles into --out, then build its tables, figures and report (unless --no-tables); a summary of
    what was pooled."""
    from geneb.pool.bundle import BundleError
    from geneb.pool.merge import MergeError, build_tables, merge_bundles, merged_outputs

    start = time.perf_counter()
    try:
        record: dict[str, Any] = merge_bundles(args.bundles, args.out, prefer=args.prefer)
        built = [] if args.no_tables else build_tables(args.out, config_file=args.config, task_sheet=args.task_sheet)
        drawn = {} if args.no_tables else merged_outputs(args.out, config_file=args.config, captions_dir=args.captions)
    except (BundleError, MergeError, ValueError) as err:
        raise CliError(str(err)) from err
    return (
        f"merged {len(record['bundles'])} bundles into {args.out}: {record['rows']} score rows, "
        f"{len(record['deduplicated'])} cell(s) held twice with identical rows kept once, "
        f"{len(record['preferred'])} settled by --prefer; {len(built)} tables"
        + (f", {len(drawn['figures'])} figures, report {drawn['report']}" if drawn else "")
        + f"; {time.perf_counter() - start:.1f} s"
    )


def add_pool_commands(sub: Any) -> None:
    """Register `bundle` and `merge` on the `geneb` subparsers `sub`."""
    b = sub.add_parser(
        "bundle",
        help="write a run's scores, their provenance and its model cards into one checked archive",
        description="One zip archive of the results folder: tables/scores.parquet, task_audit and models where "
        "present, the registry entries of its models, provenance.json (task data, shot-draw and protocol settings "
        "hashes, score-schema version) and manifest.json (sha256 of every member, checked when read).",
    )
    b.add_argument("--results-dir", required=True, metavar="DIR", help="the run's results_dir")
    b.add_argument("--out", required=True, metavar="FILE", help="the bundle to write (e.g. run1.geneb.zip)")
    b.add_argument(
        "--model-sheet",
        default=None,
        help="the registry the run used (default: DIR/registry/models.yaml when present, else config/models.yaml)",
    )
    b.set_defaults(func=cmd_bundle)
    m = sub.add_parser(
        "merge",
        help="build one results folder from several bundles (comparable rows only), then its tables",
        description="Check every bundle against its manifest, refuse rows that are not comparable (task data hash, "
        "shot draws, protocol settings hash, score-schema version), pool the cells (a cell two bundles hold: "
        "identical rows kept once, differing rows refused unless --prefer), write OUT/tables/scores.parquet, "
        "build the leaderboard and analysis tables, draw OUT/figures and write OUT/report/geneb_report.html "
        "(docs/pooling.md).",
    )
    m.add_argument("bundles", nargs="+", metavar="BUNDLE")
    m.add_argument("--out", required=True, metavar="DIR", help="the merged results folder to write")
    m.add_argument("--prefer", metavar="BUNDLE", help="the bundle (file name) whose rows win a differing cell")
    m.add_argument("--config", default="config/config.yaml", help="the config whose analysis settings build tables")
    m.add_argument("--task-sheet", default="config/tasks.tsv", help="the task catalogue (categories, task facts)")
    m.add_argument("--captions", default="workflow/report", help="the figure and table caption folder of the report")
    m.add_argument("--no-tables", action="store_true", help="write the pooled scores only: no table, figure or report")
    m.set_defaults(func=cmd_merge)
