"""Show the sbatch command every job of a run would be submitted with, without a cluster (case B43).

    geneb sbatch-preview --profile profiles/slurm [other snakemake arguments]
    geneb sbatch-preview --profile profiles/slurm --profile profiles/slurm-gres --configfile c.yaml
    python -m geneb.sbatch_preview ...     # the same

Snakemake itself does the work: it reads the profiles, config and rules, builds the DAG as a dry run and
evaluates each job's resources (rule values, `default-resources`, `set-resources`, `attempt`). Each job's
evaluated resources then go through the Slurm executor plugin's own functions (`get_submit_command`,
`set_gres_string`), the code that builds the real sbatch call. What differs from a real submission: the job
name and log path (a placeholder run id), the account when the plugin would guess it, the partition when the
profile names none, and the wrapped command. Local rules are listed as `local`, with no sbatch line.

Use it to check a site profile before a run: a GPU request on every extraction job (`--gpus=` or `--gres=`),
none on probes, the partitions and memory you expect.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import sys
from dataclasses import dataclass
from typing import Any

PLACEHOLDER_RUN_ID = "<run-id>"


@dataclass
class JobPreview:
    """One job of the DAG: rule, wildcards, whether it runs locally, its evaluated resources and threads,
    and the sbatch command (None for local jobs)."""

    rule: str
    wildcards: dict[str, str]
    local: bool
    resources: dict[str, Any]
    threads: int
    sbatch: str | None


class _JobView:
    """The part of a Snakemake job that the plugin's submit-string functions read."""

    def __init__(self, rule: str, resources: Any, threads: int):
        self.name = rule
        self.resources = resources
        self.threads = threads

    def is_group(self) -> bool:
        return False


def render_sbatch(rule: str, wildcards: dict[str, str], resources: Any, threads: int) -> str:
    """The sbatch call of one job, built by the Slurm executor plugin's own functions from `resources`
    (a Snakemake Resources object, or anything with `.get(name)` and attribute access)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = _JobView(rule, resources, threads)
    wc = "_".join(str(v) for v in wildcards.values()).replace("/", "_")
    account = resources.get("slurm_account")
    partition = resources.get("slurm_partition")
    params = {
        "run_uuid": PLACEHOLDER_RUN_ID,
        "slurm_logfile": f"logs/slurm/rule_{rule}/{wc}/%j.log",
        "comment_str": f"rule_{rule}_wildcards_{wc}" if wc else f"rule_{rule}",
        "account": f"-A {shlex.quote(str(account))}" if account else "",
        "partition": f"-p {shlex.quote(str(partition))}" if partition else "",
        "workdir": ".",
    }
    call = get_submit_command(job, params) + set_gres_string(job)
    return " ".join(call.split())


def preview(snakemake_args: list[str]) -> list[JobPreview]:
    """Dry-run Snakemake with `snakemake_args` (profiles, config, targets; `-n` is added) and return every
    job it would run, with the sbatch call the Slurm plugin would make. Raises RuntimeError with Snakemake's
    output when the dry run fails."""
    import snakemake.cli
    from snakemake.jobs import Job

    seen: list[JobPreview] = []
    original = Job.log_info

    def record(self: Job, *args: Any, **kwargs: Any) -> Any:
        resources = self.resources
        wf, rule = self.dag.workflow, self.rule
        # what Workflow.is_local says for a remote executor (a dry run itself counts as local execution)
        local = rule.group is None and (rule.name in wf._localrules or rule.norun or rule.is_template_engine)
        seen.append(
            JobPreview(
                rule=self.rule.name,
                wildcards=dict(self.wildcards_dict),
                local=local,
                resources={k: resources[k] for k in resources.keys()},  # noqa: SIM118 - iterating a ResourceList yields values
                threads=int(self.threads),
                sbatch=None
                if local
                else render_sbatch(self.rule.name, dict(self.wildcards_dict), resources, int(self.threads)),
            )
        )
        return original(self, *args, **kwargs)

    out = io.StringIO()
    Job.log_info = record  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                snakemake.cli.main([*snakemake_args, "--dry-run", "--quiet", "progress"])
                code = 0
            except SystemExit as exit_:
                code = exit_.code or 0
    finally:
        Job.log_info = original  # type: ignore[method-assign]
    if code != 0:
        raise RuntimeError(f"snakemake dry run failed (exit {code}):\n{out.getvalue()[-4000:]}")
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="geneb sbatch-preview",
        description="Print the sbatch call of every job a Slurm run would submit (a dry run; nothing is submitted).",
        epilog="All arguments are passed to snakemake, e.g. --profile profiles/slurm --configfile my.yaml",
    )
    _, rest = parser.parse_known_args(argv)
    try:
        jobs = preview(rest)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    for job in jobs:
        wc = ",".join(f"{k}={v}" for k, v in job.wildcards.items())
        print(f"{job.rule}[{wc}]\t{'local' if job.local else job.sbatch}")
    n_remote = sum(not j.local for j in jobs)
    print(f"# {len(jobs)} jobs: {n_remote} submitted with sbatch, {len(jobs) - n_remote} local", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
