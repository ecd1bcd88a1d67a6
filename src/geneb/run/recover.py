"""Resume a GENEB run that was killed hard (SIGKILL, walltime, scancel, a lost login session).

    geneb recover [snakemake arguments]                 # e.g. --cores 8, or --profile profiles/slurm
    python -m geneb.run.recover [snakemake arguments]       # the same

A hard kill gives Snakemake no chance to clean up. It leaves three things behind, and a plain `snakemake`
stops on the first: the directory lock (LockException), outputs marked incomplete
(IncompleteFilesException), and temporary `.tmp-*` files of GENEB's atomic writers (never read, but they
hold disk). This command:

1. refuses to touch anything while a Snakemake process still runs in the run directory on this machine, or
   Slurm jobs submitted from it are still queued or running (their ids are printed; wait or scancel them);
2. removes the directory lock (`snakemake --unlock`);
3. deletes the `.tmp-*` leftovers under resources/ and results/ (no writer is alive, see 1);
4. runs `snakemake --rerun-incomplete` with your arguments, which rebuilds every job the kill interrupted
   and everything downstream of it, and nothing else.

Every GENEB output is written under a temporary name and renamed when complete, and readers check
completeness markers (the HDF5 `complete` attribute), so nothing a killed job wrote is trusted in between.
Exit status: Snakemake's, or 3 when step 1 refuses. docs/hpc.md, "Resuming".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: folders whose `.tmp-*` files are GENEB atomic-write leftovers (geneb.core.integrity)
_OUTPUT_ROOTS = ("resources", "results")
#: Slurm job states in which a job may still write into the run directory
_ACTIVE_SLURM_STATES = "PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED,REQUEUED,RESIZING,STOPPED"


def _run_directory(args: list[str]) -> Path:
    """The run directory a snakemake command line works in: its --directory/-d value, else the cwd."""
    for i, arg in enumerate(args):
        if arg in ("-d", "--directory") and i + 1 < len(args):
            return Path(args[i + 1]).resolve()
        if arg.startswith("--directory="):
            return Path(arg.split("=", 1)[1]).resolve()
    return Path.cwd().resolve()


def _running_snakemake(workdir: Path, *, proc: Path = Path("/proc")) -> list[int]:
    """Process ids of Snakemake processes (other than this one) whose working directory is `workdir`.
    Linux /proc only; returns [] where /proc is not readable."""
    found: list[int] = []
    if not proc.is_dir():
        return found
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(entry / "cwd")).resolve()
        except OSError:
            continue
        if cwd != workdir:
            continue
        # `snakemake ...` (argv[0] or the script after the interpreter) or `python -m snakemake ...`
        if "snakemake" in (Path(w.decode(errors="replace")).name for w in cmdline[:3] if w):
            found.append(int(entry.name))
    return sorted(found)


def _active_slurm_jobs(workdir: Path) -> list[str]:
    """Ids of this user's Slurm jobs that are still queued or running with `workdir` as their work dir
    (Snakemake's Slurm plugin submits with -D <run dir>). [] where squeue is absent or fails."""
    if shutil.which("squeue") is None:
        return []
    try:
        out = subprocess.run(
            ["squeue", "--me", "--noheader", f"--states={_ACTIVE_SLURM_STATES}", "--format=%i|%Z"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    jobs = []
    for line in out.splitlines():
        job, _, wd = line.partition("|")
        if wd.strip() and Path(wd.strip()).resolve() == workdir:
            jobs.append(job.strip())
    return jobs


def _stale_temporaries(workdir: Path) -> list[Path]:
    """`.tmp-*` files left by GENEB's atomic writers under resources/ and results/ of `workdir`."""
    return sorted(
        p
        for root in _OUTPUT_ROOTS
        if (workdir / root).is_dir()
        for p in (workdir / root).rglob(".tmp-*")
        if p.is_file()
    )


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    workdir = _run_directory(args)
    busy = _running_snakemake(workdir)
    if busy:
        print(
            f"geneb.run.recover: Snakemake still runs in {workdir} (pid {', '.join(map(str, busy))}); "
            "let it finish or stop it first",
            file=sys.stderr,
        )
        return 3
    jobs = _active_slurm_jobs(workdir)
    if jobs:
        print(
            f"geneb.run.recover: Slurm jobs of this run directory are still queued or running ({', '.join(jobs)}); "
            "wait for them or `scancel` them, then run this again",
            file=sys.stderr,
        )
        return 3
    snakemake = [sys.executable, "-m", "snakemake"]
    unlock = subprocess.run([*snakemake, *args, "--unlock"], capture_output=True, text=True)
    if unlock.returncode != 0:
        print(unlock.stdout + unlock.stderr, file=sys.stderr)
        print("geneb.run.recover: `snakemake --unlock` failed (see above)", file=sys.stderr)
        return unlock.returncode
    print(f"geneb.run.recover: unlocked {workdir}", file=sys.stderr)
    for tmp in _stale_temporaries(workdir):
        tmp.unlink(missing_ok=True)
        print(f"geneb.run.recover: removed partial file {tmp.relative_to(workdir)}", file=sys.stderr)
    return subprocess.run([*snakemake, *args, "--rerun-incomplete"]).returncode


if __name__ == "__main__":
    sys.exit(main())
