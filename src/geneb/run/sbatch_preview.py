"""Show the sbatch command every job of a run would be submitted with, without a cluster (so that GPU
requests are seen to reach SLURM).

    geneb sbatch-preview --profile profiles/slurm [other snakemake arguments]
    geneb sbatch-preview --profile profiles/slurm --profile profiles/slurm-gres --configfile c.yaml
    python -m geneb.run.sbatch_preview ...     # the same

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

_PLACEHOLDER_RUN_ID = "<run-id>"


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
    group: str | None = None  # the group it is submitted in (then `sbatch` is the group job's, shared)


@dataclass
class GroupPreview:
    """One group job of a cluster run: the group id, its jobs per rule, the resources Snakemake requests for
    it on a cluster (layered: jobs that may run at once add up, layers of jobs one after another add up
    their minutes) and its sbatch command."""

    group: str
    rules: dict[str, int]
    resources: dict[str, Any]
    sbatch: str


class _JobView:
    """The part of a Snakemake job that the plugin's submit-string functions read."""

    def __init__(self, rule: str, resources: Any, threads: int):
        self.name = rule
        self.resources = resources
        self.threads = threads

    def is_group(self) -> bool:
        return False


def _render_sbatch(rule: str, wildcards: dict[str, str], resources: Any, threads: int) -> str:
    """The sbatch call of one job, built by the Slurm executor plugin's own functions from `resources`
    (a Snakemake Resources object, or anything with `.get(name)` and attribute access)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = _JobView(rule, resources, threads)
    wc = "_".join(str(v) for v in wildcards.values()).replace("/", "_")
    account = resources.get("slurm_account")
    partition = resources.get("slurm_partition")
    params = {
        "run_uuid": _PLACEHOLDER_RUN_ID,
        "slurm_logfile": f"logs/slurm/rule_{rule}/{wc}/%j.log",
        "comment_str": f"rule_{rule}_wildcards_{wc}" if wc else f"rule_{rule}",
        "account": f"-A {shlex.quote(str(account))}" if account else "",
        "partition": f"-p {shlex.quote(str(partition))}" if partition else "",
        "workdir": ".",
    }
    call = get_submit_command(job, params) + set_gres_string(job)
    return " ".join(call.split())


def _cluster_group_resources(group: Any) -> dict[str, Any]:
    """A group job's resources as a cluster run computes them: `GroupResources.basic_layered` with the run's
    global limits, except the core count, which a cluster run leaves unset (a dry run counts local cores)."""
    from snakemake.resources import GroupResources

    limits = group.dag.workflow.global_resources
    constraints = {k: (None if k == "_cores" else v) for k, v in limits.items()}

    class _Limit:
        def __init__(self, value: Any) -> None:
            self.value = getattr(value, "value", value)

    class _Limits(dict):
        def get(self, name: str, default: Any = None) -> _Limit:
            return self[name] if name in self else _Limit(None)  # no limit on a resource the run does not cap

    return GroupResources.basic_layered(
        toposorted_jobs=group.toposorted,
        constraints=_Limits({k: _Limit(v) for k, v in constraints.items()}),
        run_local=False,
        additive_resources=["runtime"],
        sortby=["runtime"],
    )


class _Resources(dict):
    """A resource mapping with the attribute access the plugin's submit functions use."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err


def preview_submissions(snakemake_args: list[str]) -> tuple[list[JobPreview], list[GroupPreview]]:
    """Dry-run Snakemake with `snakemake_args` (profiles, config, targets; `-n` is added) and return every job it
    would run, with the sbatch call the Slurm plugin would make (a grouped job's is its group job's), and the group
    jobs (GroupPreview) the grouped jobs are submitted in: a cluster run submits one sbatch job per group job and
    one per ungrouped non-local job. Raises RuntimeError with Snakemake's output when the dry run fails."""
    import snakemake.cli
    from snakemake.jobs import GroupJob, Job

    seen: list[JobPreview] = []
    groups: list[GroupPreview] = []
    original = Job.log_info
    original_group = GroupJob.log_info

    def record_group(self: GroupJob, *args: Any, **kwargs: Any) -> Any:
        resources = _Resources(_cluster_group_resources(self))
        rules: dict[str, int] = {}
        for job in self.jobs:
            rules[job.rule.name] = rules.get(job.rule.name, 0) + 1
        sbatch = _render_sbatch(f"group_{self.groupid}", {}, resources, int(resources.get("_cores", 1) or 1))
        groups.append(GroupPreview(str(self.groupid), rules, dict(resources), sbatch))
        return original_group(self, *args, **kwargs)

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
                else _render_sbatch(self.rule.name, dict(self.wildcards_dict), resources, int(self.threads)),
                group=None if self.group is None else str(self.group),
            )
        )
        return original(self, *args, **kwargs)

    out = io.StringIO()
    code: str | int  # SystemExit.code: an exit status, or a message (status 1)
    Job.log_info = record
    GroupJob.log_info = record_group
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                snakemake.cli.main([*snakemake_args, "--dry-run", "--quiet", "progress"])
                code = 0
            except SystemExit as exit_:
                code = exit_.code or 0
    finally:
        Job.log_info = original
        GroupJob.log_info = original_group
    if code != 0:
        raise RuntimeError(f"snakemake dry run failed (exit {code}):\n{_head_and_tail(out.getvalue())}")
    by_group = {g.group: g.sbatch for g in groups}
    for job in seen:
        if job.group is not None and not job.local:
            job.sbatch = by_group.get(job.group, job.sbatch)
    return seen, groups


def _head_and_tail(text: str, head: int = 6000, tail: int = 2000) -> str:
    """`text` whole when it has at most `head + tail` characters, else its first `head` and last `tail` characters
    with a line saying how many were cut between them: an error's headline (which model, which fix) comes first
    in Snakemake's output and its traceback last, so both ends are kept."""
    if len(text) <= head + tail:
        return text
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="geneb sbatch-preview",
        description="Print the sbatch call of every job a Slurm run would submit (a dry run; nothing is submitted).",
        epilog="All arguments are passed to snakemake, e.g. --profile profiles/slurm --configfile my.yaml",
    )
    _, rest = parser.parse_known_args(argv)
    try:
        jobs, groups = preview_submissions(rest)
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    for job in jobs:
        wc = ",".join(f"{k}={v}" for k, v in job.wildcards.items())
        # a job that is not local always has its sbatch call (preview_submissions)
        where = (
            "local"
            if job.local or job.sbatch is None
            else job.sbatch + (f"  (group job {job.group})" if job.group else "")
        )
        print(f"{job.rule}[{wc}]\t{where}")
    for group in groups:
        rules = ", ".join(f"{rule} x{n}" for rule, n in group.rules.items())
        print(f"group {group.group} ({rules})\t{group.sbatch}")
    n_local = sum(j.local for j in jobs)
    n_single = sum(not j.local and j.group is None for j in jobs)
    print(
        f"# {len(jobs)} jobs: {n_local} local, {len(jobs) - n_local - n_single} in {len(groups)} group jobs, "
        f"{n_single} alone; {len(groups) + n_single} sbatch submissions",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
