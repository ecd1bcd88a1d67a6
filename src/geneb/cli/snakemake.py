"""`geneb sbatch-preview` and `geneb recover`: two Snakemake calls for clusters; every argument after the
command goes to snakemake, whose paths are checked first."""

from __future__ import annotations

import argparse
from pathlib import Path

from geneb.cli.common import CliError

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


def check_snakemake_paths(args: list[str]) -> None:
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


def cmd_sbatch_preview(args: argparse.Namespace) -> int:
    from geneb.run import sbatch_preview

    check_snakemake_paths(args.snakemake_args)
    return sbatch_preview.main(args.snakemake_args)


def cmd_recover(args: argparse.Namespace) -> int:
    from geneb.run import recover

    check_snakemake_paths(args.snakemake_args)
    return recover.main(args.snakemake_args)
