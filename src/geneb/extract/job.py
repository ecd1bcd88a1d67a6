"""One extraction job of the workflow, in the model's environment (docs/hpc.md, "Environments").

`run_rule_job` is what the extract_embeddings shim calls. On the conda route (`execution.env_route: conda`, the
default) Snakemake has already put the job in the model's env (`--sdm conda`; the rule's `conda:` comes from the
model, workflow/rules/common.smk), so the extraction runs in this process. On the venv route
(`execution.env_route: venv`, for sites without conda) a model whose registry entry names a non-default env is
extracted by `python -m geneb.extract.job` run with that env's venv interpreter (`geneb.core.envs.python_for_env`,
built by `geneb env build NAME`), with this checkout's `src` first on its PYTHONPATH so the job runs the
workflow's own code; the request goes on stdin as JSON and the child appends to the job's log, so the log's
last line is still the job's one-line GENEB error. A model of the default env runs in this process on both
routes. With `execution.model_server: true` (the default) the job instead sends its task to the node's model
server for its model (geneb.extract.server), started in the same interpreter (this one, or the env's venv), which
loads the model once for every job of the node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from geneb.core import paths
from geneb.extract.batch_plan import ExecutionOptions


def _extract(request: dict[str, Any]) -> None:
    """Run one extraction request (`run_rule_job`'s JSON: settings, task_dir, out, threads, execution) here."""
    from geneb.extract.step import extract_task

    execution = ExecutionOptions.of(request["execution"])
    extract_task(
        request["settings"],
        Path(request["task_dir"]),
        request["out"],
        device=execution.device,
        batch_size=execution.batch_size,
        batch_tokens=execution.batch_tokens,
        threads=request["threads"],
        hdf5_locking=execution.hdf5_locking,
        load_checks_policy=execution.load_checks,
    )


def _model_env(config: dict[str, Any], model: str) -> str:
    """The env of `model` in the run's registry (config model_sheet and model_revisions)."""
    from geneb.registry.load import load_registry
    from geneb.registry.registry import model_spec

    registry = load_registry(config["model_sheet"], pins=config.get("model_revisions"))
    return model_spec(registry, model).env_name


def model_interpreter(config: dict[str, Any], model: str, options: ExecutionOptions) -> tuple[str, str, dict[str, str]]:
    """(env name, interpreter, child environment) a job of `model` runs in: on the venv route
    (`execution.env_route: venv`) the venv of the model's registry env (`geneb.core.envs.python_for_env`), else
    this interpreter and the default env. The child environment puts GENEB's source first on PYTHONPATH, so the
    env's interpreter imports this checkout's geneb. Raises EnvError naming `geneb env build NAME` for an env
    that is not built."""
    from geneb.core.envs import DEFAULT_ENV, python_for_env

    env = _model_env(config, model) if options.env_route == "venv" else DEFAULT_ENV
    python = sys.executable if env == DEFAULT_ENV else str(python_for_env(env, prefix=options.env_dir))
    child_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(paths.SOURCE_ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    return env, python, child_env


def run_rule_job(
    settings: dict[str, Any],
    task_dir: str | Path,
    out: str | Path,
    *,
    log: str,
    execution: ExecutionOptions | Mapping[str, Any],
    threads: int,
    config: dict[str, Any],
) -> None:
    """Extract one (model, task) as rule extract_embeddings does (its shim has called `log_to_file(log)`): embed
    here or, on the venv route for a model of a non-default env, in that env's venv, whose process appends to
    `log` (module docstring); a precomputed model's vectors are imported here (`geneb.extract.precomputed`). execution: the config's execution knobs (`ExecutionOptions`, or the config's
    mapping, absent knobs taking the schema's defaults); threads: the rule's threads. Raises what extract_task
    raises (here), ValueError for execution knobs the config schema refuses, EnvError naming `geneb env build
    NAME` for an env that is not built, and SystemExit with the child's status when the extraction in the venv
    fails (its error is the log's last line)."""
    from geneb.core.envs import DEFAULT_ENV

    options = ExecutionOptions.of(execution)
    if settings.get("family") == "precomputed":  # vectors computed elsewhere: checked and copied, no model, no env
        from geneb.extract.precomputed import import_task

        import_task(settings, task_dir, out, hdf5_locking=options.hdf5_locking)
        return
    request = {
        "settings": settings,
        "task_dir": str(task_dir),
        "out": str(out),
        "log": log,
        "threads": threads,
        "execution": options.as_dict(),
    }
    env, python, child_env = model_interpreter(config, settings["model"], options)
    import logging

    if env != DEFAULT_ENV:
        logging.getLogger(__name__).info("model %s: extracting in env %s (%s)", settings["model"], env, python)
    if options.model_server:
        from geneb.extract.server import extract_via_server

        extract_via_server(
            settings,
            task_dir,
            out,
            execution=options,
            threads=threads,
            python=python,
            env=None if env == DEFAULT_ENV else child_env,
        )
        return
    if env == DEFAULT_ENV:
        _extract(request)
        return
    for handler in logging.getLogger().handlers:
        handler.flush()
    res = subprocess.run([python, "-m", "geneb.extract.job"], input=json.dumps(request), text=True, env=child_env)
    if res.returncode:
        raise SystemExit(res.returncode)


def _main() -> None:
    """`python -m geneb.extract.job`: read one request (JSON, stdin), append to its log, extract."""
    request = json.loads(sys.stdin.read())
    from geneb.extract.cache import configure_hdf5_locking

    configure_hdf5_locking(request["execution"]["hdf5_locking"])  # before anything imports h5py (NFS locks)
    from geneb.core.logs import log_to_file

    log_to_file(request["log"], append=True)
    _extract(request)


if __name__ == "__main__":
    _main()
