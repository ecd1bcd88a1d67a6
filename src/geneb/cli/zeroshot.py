"""`geneb zeroshot build`: build the catalogued zero-shot tasks (`config/zeroshot_tasks.tsv`) from the real
tasks' training splits, offline and seeded (`geneb.zeroshot.build`); prints one line per task."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from geneb.cli.common import CliError, existing_file
from geneb.tasks.sources import ENV_TASK_SOURCE, TaskSourceError
from geneb.zeroshot.catalogue import ZeroShotCatalogueError

#: where the real tasks are read from without --task-source or $GENEB_TASK_SOURCE (config.yaml's task_source)
DEFAULT_TASK_SOURCE = "../shared/data/tasks"
DEFAULT_OUT = "resources/zeroshot"


def cmd_zeroshot_build(args: argparse.Namespace) -> str:
    """Build the tasks of `--catalogue` (or `--tasks`) into `--out`/<task>/ with `--seed`; the report lists each
    task's kind, rows and data_sha256. CliError for a missing catalogue or source folder and for a build error."""
    from geneb.zeroshot.build import build_tasks

    source = args.task_source or os.environ.get(ENV_TASK_SOURCE) or DEFAULT_TASK_SOURCE
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


def cmd_zeroshot_reference_lms(args: argparse.Namespace) -> str:
    """Pretrain (or keep) the two reference language models (`geneb.zeroshot.reference_lms`); one line per model.
    CliError when the source folder or its training split is missing, or the pretraining task is a zero-shot
    task's source."""
    from geneb.zeroshot.catalogue import read_zeroshot_catalogue
    from geneb.zeroshot.reference_lms import PRETRAINING_TASK, build_reference_lms, check_pretraining_task

    source = args.task_source or os.environ.get(ENV_TASK_SOURCE) or DEFAULT_TASK_SOURCE
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
