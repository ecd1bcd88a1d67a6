"""Pre-flight: before Snakemake submits anything, check that every selected model can run where it will run.

`preflight_problems` is called by workflow/rules/common.smk while the DAG is built (main process, dry runs
too): every problem of every selected model is collected and reported at once, each naming the model, its env
and the fix, and the run stops before any job starts (a refusal inside a GPU job would be resubmitted by the
profile's retries). Checked per model:

* the entry is runnable (adapter family, pinned revision, local folder present: `runnable.runnable`);
* with the Hugging Face hub switched off (HF_HUB_OFFLINE=1), a pinned hub model's files are in the HF cache, and a
  `source.kind: download` model's files are in the weights cache (`geneb weights fetch`; geneb.registry.weights);
* where its extraction will run, its packages are importable and its `load.transformers` range holds: in the
  model's built venv (env route `venv`, a model of a non-default env), or in this interpreter (a model of the
  default env on the venv route; every model when the conda route runs without `--sdm conda`). With `--sdm conda` Snakemake builds the env from the env file,
  which `checks.check_envs` already checked against the entry.

The interpreter checks run one short subprocess per env (no model is loaded). Torch-free.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from geneb.core.envs import DEFAULT_ENV, ENVS_DIR, EnvError, python_for_env
from geneb.registry.load import required_packages, runnable
from geneb.registry.registry import Registry
from geneb.registry.spec import ModelSpec
from geneb.registry.weights import is_complete

#: execution.env_route values (config schema)
ENV_ROUTES = ("conda", "venv")

_PROBE = """import importlib.util, json, sys
from importlib import metadata
out = {"python": sys.executable, "modules": {}}
try:
    out["transformers"] = metadata.version("transformers")
except metadata.PackageNotFoundError:
    out["transformers"] = None
for name in sys.argv[1:]:
    try:
        out["modules"][name] = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        out["modules"][name] = False
print(json.dumps(out))
"""


class PreflightError(ValueError):
    """Models that cannot run where they would run; the message lists every problem with its fix."""


def probe_interpreter(python: str | Path, modules: Iterable[str]) -> dict[str, Any]:
    """{python, transformers: installed version or None, modules: {top-level import name: found}} of the
    interpreter `python`, without importing the modules (importlib.util.find_spec). Raises EnvError when the
    interpreter cannot run."""
    tops = sorted({m.split(".")[0] for m in modules})
    try:
        res = subprocess.run(
            [str(python), "-c", _PROBE, *tops], capture_output=True, text=True, check=False, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise EnvError(f"{python} cannot be run ({err})") from err
    if res.returncode:
        raise EnvError(f"{python} cannot be run: {res.stderr.strip()[-300:]}")
    return json.loads(res.stdout)


def fit_problems(spec: ModelSpec, probe: dict[str, Any], where: str, fix: str) -> list[str]:
    """Why `spec` cannot run in the interpreter described by `probe` (`probe_interpreter`); `where` names the
    interpreter, `fix` is said after each problem."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    out = []
    rng = spec.load.transformers
    have = probe.get("transformers")
    if spec.family not in ("kmer",) and rng and (have is None or Version(have) not in SpecifierSet(rng)):
        out.append(
            f"model {spec.id} (env {spec.env_name}): load.transformers {rng!r}, but {where} has transformers "
            f"{have or 'not installed'}; {fix}"
        )
    modules = dict(required_packages(_raw(spec)))
    modules.update({name: name.split(".")[0] for name in spec.load.preimport or ()})
    for name, pip in sorted(modules.items()):
        if not probe["modules"].get(name.split(".")[0], False):
            out.append(f"model {spec.id} (env {spec.env_name}): {where} cannot import {name} (pip {pip}); {fix}")
    return out


def _raw(spec: ModelSpec) -> dict[str, Any]:
    return {"family": spec.family, "load": spec.load.as_dict()}


def _hub_cache_problem(spec: ModelSpec) -> str | None:
    """With HF_HUB_OFFLINE set, a pinned hub model whose config.json is not in the HF cache at its revision."""
    if spec.source.kind != "hub" or os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("0", "", "false", "no"):
        return None
    from huggingface_hub import try_to_load_from_cache

    hub_id, revision = spec.source.hub_id, spec.source.revision
    if hub_id is None or revision is None:  # not a pinned hub entry (the schema requires both for kind hub)
        return None
    found = try_to_load_from_cache(hub_id, "config.json", revision=revision)
    if isinstance(found, str):
        return None
    return (
        f"model {spec.id}: HF_HUB_OFFLINE is set and {hub_id}@{revision[:12]} is not in the "
        f"Hugging Face cache; fill it on a machine with network: `hf download {hub_id} --revision "
        f"{revision}` with the same HF_HOME (docs/hpc.md, 'Offline compute nodes')"
    )


def _download_cache_problem(spec: ModelSpec, weights_dir: str) -> str | None:
    """With HF_HUB_OFFLINE set (the sign of offline compute nodes), a `source.kind: download` model whose folder
    is not in the weights cache (and no model_weights copy is given): its job could not fetch it."""
    if spec.source.kind != "download" or spec.source.path:
        return None
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("0", "", "false", "no"):
        return None
    from geneb.registry.weights import settings_source

    source = settings_source(spec, weights_dir)
    if is_complete(source):
        return None
    return (
        f"model {spec.id}: HF_HUB_OFFLINE is set and its weights ({source['url']}) are not in the weights cache "
        f"{source['path']}; fetch them where there is network: `geneb weights fetch {spec.id}` with the same "
        "execution.weights_dir (docs/hpc.md, 'Offline compute nodes')"
    )


def preflight_problems(*args: Any, **kwargs: Any) -> list[str]:
    """Every reason a model cannot run in this run (`preflight`'s two lists together); same arguments."""
    blocking, here = preflight(*args, **kwargs)
    return blocking + here


def preflight(
    registry: Registry,
    models: Iterable[str],
    *,
    env_route: str,
    conda_deploys: bool,
    envs_dir: str | Path = ENVS_DIR,
    env_cache: str | Path | None = None,
) -> tuple[list[str], list[str]]:
    """(problems, here): every reason a model of `models` cannot run in this run (both empty = all can; see the
    module docstring). `here` holds the problems of this interpreter on the conda route without `--sdm conda`
    (they hold only because every job would run here: the workflow stops a real run on them before its first
    job, while a dry run that plans a `--sdm conda` run on another machine lists them); `problems` the rest.

    env_route: `conda` or `venv` (config execution.env_route); conda_deploys: whether Snakemake deploys conda envs
    (`--sdm conda`); env_cache: where built venvs live (default $GENEB_ENV_DIR or .geneb/envs). Raises
    ValueError for an unknown route.
    """
    if env_route not in ENV_ROUTES:
        raise ValueError(f"execution.env_route {env_route!r}: expected one of {ENV_ROUTES}")
    problems: list[str] = []
    by_env: dict[str, list[ModelSpec]] = {}
    for model in models:
        spec = registry.spec(model)
        ok, why = runnable(spec)
        if not ok:
            problems.append(f"model {model} is in the registry but not runnable: {why}")
            continue
        hub = _hub_cache_problem(spec) or _download_cache_problem(spec, registry.weights_dir)
        if hub:
            problems.append(hub)
        by_env.setdefault(spec.env_name, []).append(spec)
    if env_route == "conda" and conda_deploys:
        return problems, []  # Snakemake builds each env from its file, which check_envs matched with every entry
    # the default env's models run in this interpreter on both routes; the venv route runs the others in their venv
    here: list[str] = []
    interpreters: dict[str, list[ModelSpec]] = {}
    for env_name, specs in sorted(by_env.items()):
        if env_route == "conda" or env_name == DEFAULT_ENV:
            interpreters.setdefault(sys.executable, []).extend(specs)
            continue
        try:
            interpreters[str(python_for_env(env_name, envs_dir=envs_dir, prefix=env_cache))] = specs
        except EnvError as err:
            problems.append(f"model(s) {', '.join(s.id for s in specs)}: {err}")
    for python, specs in interpreters.items():
        if python != sys.executable:
            where, fix = (
                f"the venv of env {specs[0].env_name} ({python})",
                (f"rebuild it from envs/{specs[0].env_name}.yaml (`geneb env build {specs[0].env_name}`)"),
            )
        elif env_route == "venv":
            where = f"this interpreter ({python}; the venv route runs the default env's models here)"
            fix = f"install envs/{DEFAULT_ENV}.yaml's packages here, or name the model's env in its registry entry"
        else:
            where = f"this interpreter ({python}; without --sdm conda every job runs here)"
            fix = "run with --sdm conda, or set execution.env_route: venv after `geneb env build <env>`"
        modules = {n for s in specs for n in (*required_packages(_raw(s)), *(s.load.preimport or ()))}
        try:
            probe = probe_interpreter(python, modules)
        except EnvError as err:
            problems.append(f"model(s) {', '.join(s.id for s in specs)}: {err}")
            continue
        found = [p for spec in specs for p in fit_problems(spec, probe, where, fix)]
        if env_route == "conda":
            here += found
        else:
            problems += found
    return problems, here


def format_problems(problems: list[str], *, here: bool = False) -> str:
    """The pre-flight report: a count, then one problem per line. here: the warning about this interpreter's
    problems (conda route without --sdm conda) while the DAG is built; a real run then stops before its first
    job, a dry run plans on."""
    if here:
        head = (
            f"pre-flight: {len(problems)} problem(s) of this interpreter, where this command runs every job (conda "
            "route without --sdm conda); a real run stops before its first job, a run with --sdm conda or the venv "
            "route runs each model in its env:"
        )
    else:
        head = f"pre-flight: {len(problems)} problem(s); nothing was submitted. Fix them and run again:"
    return head + "\n" + "\n".join(f"  - {p}" for p in problems)
