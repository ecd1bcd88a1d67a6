"""`python tests/slurm/steady_polling.py <snakemake arguments>`: Snakemake with the Slurm executor plugin as installed,
its status polling held at a steady interval for the tests on the single-node test cluster.

The plugin waits `--slurm-init-seconds-before-status-checks` before its first `sacct` query and then adds 10 s to the
wait after every query that finds no job finished (up to 180 s; snakemake-executor-plugin-slurm, `check_active_jobs`),
a courtesy to a busy shared `slurmctld`. On the test cluster a job of a few seconds was seen only 20-40 s after it
ended, and the Slurm tests spent most of their time waiting for that. Here the wait never grows past the initial
interval; submission, `sacct`, retries, cancellation and every other part of the plugin run unchanged.
"""

from __future__ import annotations

import sys

from snakemake.cli import main
from snakemake_executor_plugin_slurm import Executor


def _never_above_initial(executor: Executor, seconds: float | None) -> None:
    initial = executor.workflow.executor_settings.init_seconds_before_status_checks
    executor._next_seconds_between_status_checks = (
        seconds if seconds is None or initial is None else min(seconds, initial)
    )


Executor.next_seconds_between_status_checks = property(
    Executor.next_seconds_between_status_checks.fget, _never_above_initial
)

if __name__ == "__main__":
    sys.argv[0] = "snakemake"
    sys.exit(main())
