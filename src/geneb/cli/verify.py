"""`geneb verify`: check a run's content-digested files offline (`geneb.run.verify`); exit 1 naming every bad
file, 0 with a one-line summary when all match."""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path
from typing import Any

import yaml

from geneb.cli.common import CliError, existing_file
from geneb.core.paths import load_schema
from geneb.run.plan import plan_run
from geneb.run.verify import verify_files


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Snakemake's merge of config files: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in overlay.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def cmd_verify(args: argparse.Namespace) -> int:
    """Plan the run of `--config` (files merged in order, `--results-dir` applied) without touching anything, then
    check its files and every digested file under resources/ and the results folder; print the bad ones and the
    summary. Returns 1 when any file is bad or has no digest (and `--adopt` was not given), else 0."""
    config: dict[str, Any] = {}
    for name in args.config or ["config/config.yaml"]:
        loaded = yaml.safe_load(existing_file(name, "config file").read_text(encoding="utf-8")) or {}
        config = _merge(config, loaded)
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
        plan.trusted_files(),
        roots=[Path("resources"), Path(plan.results_dir)],
        adopt=args.adopt,
        hdf5_locking=plan.config["execution"]["hdf5_locking"],
    )
    print("\n".join(report.lines()))
    return 0 if report.ok else 1
