"""Commands over a run's files: `geneb verify`, `geneb sbatch-preview` and `geneb recover`, `geneb bundle` and
`geneb merge`, `geneb site`, `geneb zeroshot build`.

`geneb verify`: check a run's content-digested files offline (`geneb.run.integrity`); exit 1 naming every bad
file, 0 with a one-line summary when all match.

`geneb sbatch-preview` and `geneb recover`: two Snakemake calls for clusters; every argument after the
command goes to snakemake, whose paths are checked first.

`geneb bundle` and `geneb merge`: a run's results in one checked archive, and one results folder from several
(geneb.pool; docs/pooling.md).

`geneb site`: the static leaderboard site of one or more runs' results folders (geneb.site.build).

`geneb zeroshot build`: build the catalogued zero-shot tasks (`config/zeroshot_tasks.tsv`) from the real
tasks' training splits, offline and seeded (`geneb.zeroshot.build`); prints one line per task.

`geneb zeroshot baselines`: the model-free baselines of built zero-shot tasks with their shortcut flag
(`geneb.zeroshot.shortcuts`) and the tasks' content overlap with real training splits (`geneb.zeroshot.overlap`).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from geneb.cli.common import CliError, existing_file
from geneb.core import integrity
from geneb.core.paths import load_schema
from geneb.report.render import report_captions
from geneb.run.integrity import verify_files
from geneb.run.overlays import compose_files
from geneb.run.plan import plan_run
from geneb.site.build import build_site, site_summary
from geneb.tasks.sources import ENV_TASK_SOURCE, TaskSourceError
from geneb.zeroshot.task import ZeroShotCatalogueError


def cmd_verify(args: argparse.Namespace) -> int:
    """Plan the run of `--config` (files composed in order as the workflow composes them, `geneb.run.overlays`;
    `--results-dir` applied) without touching anything, then check its files and every digested file under
    resources/ and the results folder; print the bad ones and the summary. Returns 1 when any file is bad or has no
    digest (and `--adopt` was not given), else 0."""
    names = args.config or ["config/config.yaml"]
    for name in names:
        existing_file(name, "config file")
    try:
        config = compose_files(names).config
    except ValueError as err:
        raise CliError(str(err)) from err
    if args.results_dir is not None:
        if not re.match(load_schema("config")["properties"]["results_dir"]["pattern"], args.results_dir):
            raise CliError(
                f"--results-dir {args.results_dir!r}: a run's results_dir is results or a folder below it "
                "(relative to the checkout, as the config key results_dir: workflow/schemas/config.schema.yaml); "
                "verify checks a run of this checkout, e.g. --results-dir results/finetune"
            )
        config["results_dir"] = args.results_dir
    try:
        plan = plan_run(
            config, main_process=False, conda_deploys=False, partial_file=None, log=logging.getLogger("geneb.verify")
        )
    except ValueError as err:
        raise CliError(f"cannot plan the run of {', '.join(args.config or ['config/config.yaml'])}: {err}") from err
    report = verify_files(
        plan.trusted.files(),
        roots=[Path("resources"), Path(plan.results_dir)],
        adopt=args.adopt,
        hdf5_locking=plan.config["execution"]["hdf5_locking"],
    )
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


#: snakemake options naming a path that must exist, checked before Snakemake starts (what, must be a folder?)
_SNAKEMAKE_PATHS = {
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
        if name not in _SNAKEMAKE_PATHS:
            continue
        values = [value] if value else []
        for nxt in args[i + 1 :] if not value else []:
            if nxt.startswith("-"):
                break
            values.append(nxt)
            if name not in ("--configfile", "--configfiles"):
                break
        what, folder = _SNAKEMAKE_PATHS[name]
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


def cmd_sbatch_preview(args: argparse.Namespace) -> int:
    from geneb.run import sbatch_preview

    _check_snakemake_paths(args.snakemake_args)
    return sbatch_preview.main(args.snakemake_args)


def cmd_recover(args: argparse.Namespace) -> int:
    from geneb.run import recover

    _check_snakemake_paths(args.snakemake_args)
    return recover.main(args.snakemake_args)


def _cmd_bundle(args: argparse.Namespace) -> str:
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


def _cmd_merge(args: argparse.Namespace) -> str:
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
    b.set_defaults(func=_cmd_bundle)
    m = sub.add_parser(
        "merge",
        help="build one results folder from several bundles (comparable rows only), then its tables",
        description="Check every bundle against its manifest, refuse rows that are not comparable (task data hash, "
        "shot draws, protocol settings hash, score-schema version), pool the cells (a cell two bundles hold: "
        "identical rows kept once, differing rows refused unless --prefer), write OUT/tables/scores.parquet, "
        "build the leaderboard and analysis tables, draw OUT/figures and write OUT/report/geneb_report.html "
        "(docs/pooling.md).",
    )
    m.add_argument("bundles", nargs="+", metavar="BUNDLE", help="the bundles to merge (`geneb bundle` writes them)")
    m.add_argument("--out", required=True, metavar="DIR", help="the merged results folder to write")
    m.add_argument("--prefer", metavar="BUNDLE", help="the bundle (file name) whose rows win a differing cell")
    m.add_argument("--config", default="config/config.yaml", help="the config whose analysis settings build tables")
    m.add_argument("--task-sheet", default="config/tasks.tsv", help="the task catalogue (categories, task facts)")
    m.add_argument("--captions", default="workflow/report", help="the figure and table caption folder of the report")
    m.add_argument("--no-tables", action="store_true", help="write the pooled scores only: no table, figure or report")
    m.set_defaults(func=_cmd_merge)


#: the caption files of the figures, where the command runs from a checkout (the workflow's report folder)
_CAPTION_DIR = Path("workflow/report")


def cmd_site(args: argparse.Namespace) -> str:
    """Build the site of every --results-dir into --out; the figures' captions from --captions (default
    workflow/report when it exists, else the figures go without captions)."""
    folder = Path(args.captions) if args.captions else _CAPTION_DIR
    captions = report_captions(folder) if (args.captions or folder.is_dir()) else {}
    index = build_site(args.results_dir, args.out, labels=args.label, captions=captions)
    return site_summary(index)


#: where the real tasks are read from without --task-source or $GENEB_TASK_SOURCE (config.yaml's task_source)
_DEFAULT_TASK_SOURCE = "../shared/data/tasks"
DEFAULT_OUT = "resources/zeroshot"


def cmd_zeroshot_build(args: argparse.Namespace) -> str:
    """Build the tasks of `--catalogue` (or `--tasks`) into `--out`/<task>/ with `--seed`; the report lists each
    task's kind, rows and data_sha256. CliError for a missing catalogue or source folder and for a build error."""
    from geneb.zeroshot.build import build_tasks

    source = args.task_source or os.environ.get(ENV_TASK_SOURCE) or _DEFAULT_TASK_SOURCE
    if not Path(source).is_dir():
        raise CliError(f"the real tasks folder {source} is not a folder (--task-source or ${ENV_TASK_SOURCE})")
    catalogue = existing_file(args.catalogue, "zero-shot catalogue")
    try:
        built = build_tasks(args.out, source, args.seed, args.tasks or None, catalogue)
    except (ValueError, TaskSourceError, ZeroShotCatalogueError) as err:
        raise CliError(str(err)) from err
    lines = [f"built {len(built)} zero-shot task(s) under {args.out} (seed {args.seed}, source {source}):"]
    lines.extend(f"  {t.name}\t{t.kind}\t{t.n} rows\tdata_sha256 {t.data_sha256}" for t in built)
    return "\n".join(lines)


def cmd_zeroshot_baselines(args: argparse.Namespace) -> str:
    """The model-free baselines of built zero-shot tasks (`geneb.zeroshot.shortcuts`) and their content overlap
    with real tasks' training splits (`geneb.zeroshot.overlap`): per task its flag and every baseline's value and
    interval, then one line per (task, `--leak-tasks` task). `--out` also writes the baselines table (parquet).
    CliError for a missing folder or task, or a task the baselines cannot score."""
    from geneb.tasks.sources import MirrorFolder
    from geneb.zeroshot.overlap import content_overlap
    from geneb.zeroshot.reference_lms import PRETRAINING_TASK
    from geneb.zeroshot.shortcuts import shortcut_flags, shortcut_table
    from geneb.zeroshot.task import read_zeroshot_task

    root = Path(args.tasks_dir)
    names = args.tasks or sorted(p.parent.name for p in root.glob("*/rows.tsv"))
    if not names:
        raise CliError(f"no zero-shot task (a folder with rows.tsv) under {root}; build them: geneb zeroshot build")
    leak_tasks = args.leak_tasks if args.leak_tasks is not None else [PRETRAINING_TASK]
    source = args.task_source or os.environ.get(ENV_TASK_SOURCE) or _DEFAULT_TASK_SOURCE
    if leak_tasks and not Path(source).is_dir():
        raise CliError(f"the real tasks folder {source} is not a folder (--task-source or ${ENV_TASK_SOURCE})")
    try:
        tasks = [read_zeroshot_task(root / n, name=n) for n in names]
        table = shortcut_table(tasks, n_boot=args.n_boot, seed=args.seed)
        references = {t: MirrorFolder(Path(source)).read_split(t, "train")["sequence"].astype(str) for t in leak_tasks}
    except (ValueError, OSError, TaskSourceError) as err:
        raise CliError(str(err)) from err
    flags = shortcut_flags(table).set_index("task")
    lines = [f"model-free baselines of {len(tasks)} zero-shot task(s) under {root} (n_boot {args.n_boot}, seed {args.seed}):"]  # fmt: skip
    for task in tasks:
        flag = flags.loc[task.name]
        lines.append(f"  {task.name}	shortcut_flag {flag['shortcut_flag']}: {flag['shortcut_reason']}")
        for r in table[table["task"] == task.name].itertuples():
            lines.append(f"    {r.baseline:<16}{r.metric} {r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]")
    for task in tasks:
        for name, seqs in references.items():
            lines.append(
                f"  {task.name} vs {name} (train) by content: {content_overlap(task, seqs.tolist()).describe()}"
            )
    if args.out:
        integrity.write_parquet(table.merge(flags.reset_index(), on="task"), args.out)
        lines.append(f"wrote {args.out}")
    return "\n".join(lines)


def cmd_zeroshot_reference_lms(args: argparse.Namespace) -> str:
    """Pretrain (or keep) the two reference language models (`geneb.zeroshot.reference_lms`); one line per model.
    CliError when the source folder or its training split is missing, or the pretraining task is a zero-shot
    task's source."""
    from geneb.zeroshot.reference_lms import PRETRAINING_TASK, build_reference_lms, check_pretraining_task
    from geneb.zeroshot.task import read_zeroshot_catalogue

    source = args.task_source or os.environ.get(ENV_TASK_SOURCE) or _DEFAULT_TASK_SOURCE
    if not Path(source).is_dir():
        raise CliError(f"the real tasks folder {source} is not a folder (--task-source or ${ENV_TASK_SOURCE})")
    try:
        check_pretraining_task(
            read_zeroshot_catalogue(existing_file("config/zeroshot_tasks.tsv", "zero-shot catalogue"))
        )
        done = build_reference_lms(source, args.out)
    except (ValueError, FileNotFoundError, ZeroShotCatalogueError) as err:
        raise CliError(str(err)) from err
    lines = [f"GENEB-made reference language models (pretrained on {PRETRAINING_TASK}'s training split):"]
    lines += [f"  {name}\t{status}\t{folder}" for name, folder, status in done]
    return "\n".join(lines)
