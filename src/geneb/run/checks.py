"""The checks the run plan makes of a configuration before any job: the schema, ids, views, and the
pre-flight of every selected model and task source.

Pre-flight: before Snakemake submits anything, check that every selected model can run where it will run.

`preflight_or_stop` is called by the run plan (`geneb.run.plan.plan_run`, from workflow/rules/common.smk) while the DAG is built (main process, dry runs
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

The pre-flight of the task sources: every configured task whose data cannot be read where it comes from, found
when the run is planned (dry runs too), with the tasks named and the fix, in the same shape as the models'
pre-flight (geneb.run.checks).

A task's source is its catalogue source resolved against the config (`geneb.tasks.catalogue.source_string`:
`task_source` / $GENEB_TASK_SOURCE for mirrored tasks, `paper_task_source` / $GENEB_PAPER_TASK_SOURCE for the
paper's). Checked per source, once:

* a mirror folder: the folder exists and holds each task's train and test split (`missing_splits`);
* `hf:<folder>` (save_to_disk datasets): the folder holds a `<task>` folder per task;
* `hf:<dataset>@<revision>` on the hub: offline ($HF_HUB_OFFLINE / $HF_DATASETS_OFFLINE) the task's files must be
  in the local hub cache; online, the hub API must answer for the dataset at that revision
  (`{HF_ENDPOINT}/api/datasets/<dataset>/revision/<revision>`; a 404 means no such dataset or revision);
* an http(s) mirror: its base URL must answer (any HTTP status; a connection error or timeout does not).

Remote sources are checked only for tasks not yet prepared (`resources/tasks/<task>/<task hash>/` has its parquet
splits and card, `task_prepared`): a prepared task is not read again. Each remote source costs one request of at most
`_TIMEOUT_S` seconds.

The task lock (config `task_lock`, `geneb.tasks.catalogue`): every configured task with a lock entry whose source is
local (a mirror folder, a `save_to_disk` folder) has its files digested now and compared with the entry, so a run
whose files differ is refused before anything is planned, naming task, file, expected and found digests and the
fix; a mirror folder's files are checked against `meta.json`'s `sha256` too. A remote source's files are compared
when `prepare_task` fetches them (downloads and cached copies alike).

Plan-time resolution of the config's `views:` section (`geneb.registry.spec`): every selected model's views
resolved and checked before any job, or one error naming every model that cannot serve them and its valid choices.
Torch-free (called by `geneb.run.plan.plan_run`, in dry runs too).

The checks the run plan makes of a configuration before any job: the schema (defaults filled in), one
spelling per local path, task and model ids, the caps note, the analysis exclusion lists, and the pre-flight of
every selected model and task source. `geneb.run.plan.plan_run` calls them in order; each raises with one message
naming the mistake and its fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.core import yamlio
from geneb.core.envs import DEFAULT_ENV, ENVS_DIR, EnvError, python_for_env
from geneb.core.paths import SCHEMA_DIR, schema_problems, validate_with_defaults
from geneb.registry.families import family as model_family
from geneb.registry.load import load_locked_registry, not_runnable, read_merged, required_packages, runnable
from geneb.registry.registry import Registry, RegistryError, model_spec, write_merged_sheet
from geneb.registry.spec import ModelSpec, View, ViewError, ViewSet, absolute_layer, model_depth, resolve_views
from geneb.registry.weights import is_complete
from geneb.run.layout import canonical_path
from geneb.tasks.catalogue import CatalogueError, changes, fix_hint, read_lock, records, source_string, task_row
from geneb.tasks.sources import (
    ENV_PAPER_TASK_SOURCE,
    ENV_TASK_SOURCE,
    TaskDigestError,
    TaskSourceError,
    missing_splits,
    open_source,
)

#: execution.env_route values (config schema)
_ENV_ROUTES = ("conda", "venv")

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


def _probe_interpreter(python: str | Path, modules: Iterable[str]) -> dict[str, Any]:
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


def _fit_problems(spec: ModelSpec, probe: dict[str, Any], where: str, fix: str) -> list[str]:
    """Why `spec` cannot run in the interpreter described by `probe` (`_probe_interpreter`); `where` names the
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


def _preflight(
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
    if env_route not in _ENV_ROUTES:
        raise ValueError(f"execution.env_route {env_route!r}: expected one of {_ENV_ROUTES}")
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
            probe = _probe_interpreter(python, modules)
        except EnvError as err:
            problems.append(f"model(s) {', '.join(s.id for s in specs)}: {err}")
            continue
        found = [p for spec in specs for p in _fit_problems(spec, probe, where, fix)]
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


#: seconds one reachability request may take (a hub or mirror that does not answer in this time is unreachable)
_TIMEOUT_S = 5.0
#: the hub endpoint when $HF_ENDPOINT is not set (huggingface_hub's default)
_DEFAULT_HF_ENDPOINT = "https://huggingface.co"
#: environment variables that put the Hugging Face libraries offline (huggingface_hub, datasets)
_OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


@dataclass(frozen=True)
class SourceProblem:
    """Tasks that cannot be read from one source: the source string, the task ids (config order), why, the fix."""

    source: str
    tasks: tuple[str, ...]
    why: str
    fix: str


def _offline() -> bool:
    return any(os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on") for var in _OFFLINE_ENV)


def _reachable(url: str, timeout: float = _TIMEOUT_S) -> tuple[bool, str]:
    """(whether `url` answers an HTTP HEAD request within `timeout` seconds, the HTTP status or the error).
    Any HTTP status counts as reachable (a 404 is checked by the caller where it matters); a DNS failure,
    refused connection or timeout does not."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as response:
            return True, str(response.status)
    except urllib.error.HTTPError as err:
        return True, str(err.code)
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return False, f"{type(err).__name__}: {reason}"


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def _in_hub_cache(repo: str, revision: str, task: str) -> bool:
    """Whether the hub cache holds the task's two split files of `repo` at `revision` (what an offline load needs)."""
    snapshot = _hub_cache() / f"datasets--{repo.replace('/', '--')}" / "snapshots" / revision / "tasks" / task
    return all((snapshot / f"{split}.csv").is_file() for split in ("train", "test"))


def task_prepared(folder: str | os.PathLike[str]) -> bool:
    """Whether the prepared task folder `folder` (`geneb.run.layout.ResourceLayout.task_dir`: resources/tasks/<task>/<task
    hash>) holds its splits and card, so its source is not read again."""
    folder = Path(folder)
    return all((folder / name).is_file() for name in ("train.parquet", "test.parquet", "card.json"))


def _fix(paper: bool, what: str) -> str:
    if paper:
        return (
            f"{what}: set `paper_task_source:` in your config (or ${ENV_PAPER_TASK_SOURCE}) to a local copy of the "
            "paper's tasks, a mirror folder ({task}/{train,test}.csv.gz) or hf:/path of save_to_disk datasets, or "
            "plan where the hub is reachable (a login node; prepare_task reads each task once) (docs/hpc.md, "
            '"Offline compute nodes")'
        )
    return (
        f"{what}: point `task_source:` (or ${ENV_TASK_SOURCE}) at a mirror that has the tasks: a folder, an http(s) "
        'base URL or hf:<dataset>@<revision> (README, "Pointing the workflow at another task mirror")'
    )


def _check_source(
    spec: str, tasks: list[str], paper: bool, probe: Callable[[str], tuple[bool, str]]
) -> list[SourceProblem]:
    """The problems of one source string for `tasks` (all from it, `paper`: they are paper tasks)."""
    if spec.startswith(("http://", "https://")):
        ok, detail = probe(spec.rstrip("/") + "/")
        if ok:
            return []
        return [SourceProblem(spec, tuple(tasks), f"the mirror does not answer ({detail})", _fix(paper, "fix"))]
    if spec.startswith("hf:"):
        body = spec[3:]
        if Path(body).is_dir():
            lacking = [t for t in tasks if not (Path(body) / t).is_dir()]
            why = f"no <task> folder of save_to_disk datasets under {body}"
            return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
        repo, _, revision = body.partition("@")
        if not revision:
            why = f"{body} is not a folder, and a hub dataset needs a pinned revision (hf:<dataset>@<40-hex revision>)"
            return [SourceProblem(spec, tuple(tasks), why, _fix(paper, "fix"))]
        if _offline():
            lacking = [t for t in tasks if not _in_hub_cache(repo, revision, t)]
            why = (
                f"offline ({' / '.join(v for v in _OFFLINE_ENV if os.environ.get(v))} set) and not in the hub cache "
                f"{_hub_cache()}"
            )
            return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
        endpoint = os.environ.get("HF_ENDPOINT") or _DEFAULT_HF_ENDPOINT
        ok, detail = probe(f"{endpoint.rstrip('/')}/api/datasets/{repo}/revision/{revision}")
        if ok and detail != "404":
            return []
        lacking = [t for t in tasks if not _in_hub_cache(repo, revision, t)]
        why = (
            f"the hub has no dataset {repo} at revision {revision} (HTTP 404 from {endpoint})"
            if ok
            else f"the hub at {endpoint} cannot be reached ({detail}) and the tasks are not in the hub cache"
        )
        return [SourceProblem(spec, tuple(lacking), why, _fix(paper, "fix"))] if lacking else []
    if not Path(spec).is_dir():
        return [SourceProblem(spec, tuple(tasks), f"the mirror folder {spec} does not exist", _fix(paper, "fix"))]
    problems = []
    by_missing: dict[tuple[str, ...], list[str]] = {}
    for task in tasks:
        missing = tuple(missing_splits(spec, task))
        if missing:
            by_missing.setdefault(missing, []).append(task)
    for missing, lacking in by_missing.items():
        why = f"no {'/'.join(missing)} split ({{split}}.csv.gz or {{split}}.csv) under {spec}/<task>"
        fix = _fix(paper, "add the task's files there (docs/adding-a-task.md), or")
        problems.append(SourceProblem(spec, tuple(lacking), why, fix))
    return problems


def _is_remote(spec: str) -> bool:
    return spec.startswith(("http://", "https://")) or (spec.startswith("hf:") and not Path(spec[3:]).is_dir())


def _lock_problems(config: Mapping[str, Any], task_sheet: pd.DataFrame) -> list[SourceProblem]:
    """The configured tasks from a local source (mirror folder, save_to_disk folder) whose files differ from
    their entry in the task lock (config `task_lock`; no key or no file: nothing to check), or whose split files
    fail `meta.json`'s digests: one problem per task, naming each file with its expected and found digests, and
    the fix (`geneb tasks lock`). A task without a lock entry, and a missing split (a `source_problems` problem of
    its own), are not problems here."""
    lock_path = config.get("task_lock")
    if not lock_path:
        return []
    entries = read_lock(lock_path)
    problems: list[SourceProblem] = []
    for task in config["tasks"]:
        row = task_row(task_sheet, task)
        spec = source_string(row, dict(config))
        if _is_remote(spec) or (not spec.startswith("hf:") and missing_splits(spec, task)):
            continue
        try:
            files = open_source(spec).source_files(task)
        except TaskDigestError as err:
            problems.append(SourceProblem(spec, (task,), str(err), "restore the file, or fix meta.json's sha256"))
            continue
        except TaskSourceError:
            continue  # a missing folder or split, an unreadable meta.json: reported by _check_source or prepare_task
        entry = entries.get(task)
        if entry is None:
            continue
        diff = changes(entry, records(files), files)
        if diff:
            why = f"its files differ from the task lock {lock_path} ({'; '.join(c.describe() for c in diff)})"
            problems.append(SourceProblem(spec, (task,), why, fix_hint(task, lock_path)))
    return problems


def source_problems(
    config: Mapping[str, Any],
    task_sheet: pd.DataFrame,
    *,
    prepared: Callable[[str], bool] | None = None,
    probe: Callable[[str], tuple[bool, str]] = _reachable,
) -> list[SourceProblem]:
    """Every configured task (config `tasks`) whose source cannot give it, grouped by source and reason.

    A local mirror folder is checked for every task (its files are the prepare_task rerun key); a remote source
    (http(s), a hub dataset) only for the tasks `prepared` says are not prepared yet, with one `probe` request
    per source (`_reachable`; tests pass a stand-in); then the task lock's problems (`_lock_problems`). Raises
    nothing but TaskLockError for a lockfile that cannot be read: the caller reports the problems
    (`_format_source_problems`) with the models' pre-flight."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for task in config["tasks"]:
        row = task_row(task_sheet, task)
        spec = source_string(row, dict(config))
        if _is_remote(spec) and prepared is not None and prepared(task):
            continue
        groups.setdefault((spec, row["source"] != "mirror"), []).append(task)
    problems: list[SourceProblem] = []
    for (spec, paper), tasks in groups.items():
        problems += _check_source(spec, tasks, paper, probe)
    return problems + _lock_problems(config, task_sheet)


def _format_source_problems(problems: Iterable[SourceProblem]) -> str:
    """The task-source part of the pre-flight report: a count, then per problem its source, why, every task it
    affects and the fix. "" when there is none."""
    problems = list(problems)
    if not problems:
        return ""
    n = sum(len(p.tasks) for p in problems)
    lines = [f"{n} selected task(s) cannot be read from their source, so nothing was planned:"]
    for p in problems:
        lines.append(f"- {len(p.tasks)} from {p.source}: {p.why}: {', '.join(p.tasks)}")
        lines.append(f"  {p.fix}")
    return "\n".join(lines)


def plan_views(config: Mapping[str, Any], settings: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{model: its resolved extraction settings}, with a `views` entry (`ViewSet.as_dict`) added to each when the
    config has a `views:` section; the settings unchanged (same mapping, same hash) when it has none.

    Raises ViewError listing every model whose views cannot be served (a layer beyond its depth, cls/first
    pooling of a causal model, an empty list, reverse_complement with long_policy truncate, a depth unknown
    before loading), each line naming the model and its valid choices.
    """
    request = config.get("views")
    if request is None:
        return dict(settings)
    if not request:
        raise ViewError("views: the section is empty; name layers, poolings or reverse_complement, or leave it out")
    out: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for model, resolved in settings.items():
        ext = resolved["extraction"]
        try:
            views = resolve_views(
                request,
                model=model,
                token_states=model_family(resolved["family"], model=model).uses_torch,
                n_layers=model_depth(resolved),
                causal=bool(ext.get("causal", False)),
                registry_layer=ext.get("layer", -1),
                registry_pooling=str(ext.get("pooling", "mean")),
            )
        except ViewError as err:
            problems.append(str(err))
            continue
        if True in views.reverse_complement and ext.get("long_policy") == "truncate":
            problems.append(
                f"model {model}: reverse_complement true with long_policy truncate would average two different "
                "windows of a long row; valid reverse_complement for it: [false]"
            )
            continue
        problem = _registry_view_problem(config, model, resolved, views)
        if problem:
            problems.append(problem)
            continue
        out[model] = {**resolved, "views": views.as_dict()}
    problems += _unknown_view_protocols(config)
    if problems:
        raise ViewError(
            f"views: {len(problems)} model(s) cannot serve the requested views:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def _view_protocols(config: Mapping[str, Any]) -> list[str]:
    """The protocols that probe every view (`views.protocols`; default: every protocol of the run). The run's other
    protocols probe each model's registry view only (`probed_views`): the protocol comparison of the sensitivity
    analysis needs nothing else, and each view costs one set of probe fits per protocol."""
    request = config.get("views") or {}
    return list(request.get("protocols") or config.get("protocols") or [])


def _registry_view(settings: Mapping[str, Any], views: ViewSet) -> View:
    """The view of a model's registry settings in a views run: its `layer` as an absolute index (None for an encoder
    without layers), its `pooling` ("mean" for k-mer spectra) and the reverse complement off."""
    ext = settings["extraction"]
    if not views.layers:
        return View(None, "mean", False)
    return View(absolute_layer(int(ext.get("layer", -1)), views.n_layers), str(ext.get("pooling", "mean")), False)


def probed_views(config: Mapping[str, Any], settings: Mapping[str, Any], protocol: str) -> list[str] | None:
    """The view ids a probe job of `protocol` scores for a model with resolved extraction `settings`: None (every
    view of its embedding file) in a run without `views:` or when `protocol` is in `_view_protocols`; otherwise
    [the model's registry view id] (`_registry_view`)."""
    if config.get("views") is None or protocol in _view_protocols(config):
        return None
    return [_registry_view(settings, ViewSet.from_dict(settings["views"])).id]


def _registry_view_problem(
    config: Mapping[str, Any], model: str, settings: Mapping[str, Any], views: ViewSet
) -> str | None:
    """A model whose registry view is not among its views while some protocol probes that view only."""
    narrow = [p for p in config.get("protocols") or [] if p not in _view_protocols(config)]
    if not narrow:
        return None
    wanted = _registry_view(settings, views)
    if wanted in views.views():
        return None
    return (
        f"model {model}: protocol(s) {narrow} probe only its registry view {wanted.id} (views.protocols leaves them "
        f"out), which its views {[v.id for v in views.views()]} do not include; add that layer, pooling and "
        "reverse_complement false to views:, or list the protocol(s) under views.protocols"
    )


def _unknown_view_protocols(config: Mapping[str, Any]) -> list[str]:
    run = list(config.get("protocols") or [])
    unknown = [p for p in (config.get("views") or {}).get("protocols") or [] if p not in run]
    if not unknown:
        return []
    return [f"views.protocols names {unknown}, which the run does not probe; valid: {run}"]


def default_schema_files() -> dict[str, Path]:
    """{"config" | "tasks" | "models": workflow/schemas/<name>.schema.yaml of this checkout}."""
    return {name: SCHEMA_DIR / f"{name}.schema.yaml" for name in ("config", "tasks", "models")}


def read_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yamlio.safe_load(handle)


def check_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`config` validated against the config schema and its defaults filled in, in place (as Snakemake's
    `validate`). Returns `config`. Raises ValueError listing every problem, one short line each (key path and
    what is wrong), not jsonschema's dump of the whole schema."""
    problems = schema_problems(config, schema)
    if problems:
        raise ValueError(
            f"the configuration does not match workflow/schemas/config.schema.yaml ({len(problems)} problem(s)):\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return validate_with_defaults(config, schema)


def canonical_config_paths(config: dict[str, Any]) -> None:
    # the sheets are rule inputs, and `config/x` vs `/abs/config/x` would rerun them
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = canonical_path(config[key])
    config["registry_extra"] = [canonical_path(os.path.expanduser(p)) for p in config["registry_extra"]]
    config["model_weights"] = {m: canonical_path(os.path.expanduser(p)) for m, p in config["model_weights"].items()}
    published = config["analysis"]["published"]
    for key in ("dir", "registry", "claims"):
        published[key] = canonical_path(published[key])


def check_task_ids(config: dict[str, Any], task_sheet: pd.DataFrame) -> None:
    for task in config["tasks"]:
        task_row(task_sheet, task)  # unknown task ids fail here, with close matches
    for task in config["caps"].get("per_task") or {}:  # a misspelled id would cap nothing, silently
        try:
            task_row(task_sheet, task)
        except CatalogueError as err:
            raise ValueError(f"caps.per_task: {err}") from None


def caps_default_line(config: dict[str, Any]) -> str | None:
    # caps.default applies to every configured task, added ones too: say so once, when the run is planned
    default_caps = {k: v for k, v in (config["caps"].get("default") or {}).items() if v is not None}
    by_default = [t for t in config["tasks"] if t not in (config["caps"].get("per_task") or {})]
    if not default_caps or not by_default:
        return None
    return (
        f"caps.default {default_caps} applies to {len(by_default)} task(s) without caps.per_task: "
        f"{', '.join(by_default)} (keep one whole with caps.per_task.<task>: {{max_train: null, max_test: null}})"
    )


def load_run_registry(
    config: dict[str, Any],
    schema: dict[str, Any],
    *,
    resolve: bool,
    source: str,
    entries: Mapping[str, str] | None = None,
) -> tuple[Registry, list[str], str]:
    """`geneb.registry.load.load_locked_registry` for the run's config (model_sheet, model_revisions, the selected
    models, model_weights, execution.weights_dir, registry_extra; `resolve`: pin what is unpinned), an unknown model
    named with its setting in the config file(s) `source`, or as `entries` names it ({model: "<file>: <key>: entry
    <n>"}, the file that added it: `geneb.run.overlays.Composition.entries`) (`_model_settings`); then, with registry_extra files, the
    merged registry made the config's model_sheet (`_use_merged_sheet`). Returns what load_locked_registry returns;
    raises what it raises."""
    out = load_locked_registry(
        config["model_sheet"],
        schema,
        config["model_revisions"],
        config["models"],
        resolve=resolve,
        weights=config["model_weights"],
        weights_dir=config["execution"]["weights_dir"],
        extra=config["registry_extra"],
        where={**_model_settings(config, source), **(entries or {})},
    )
    _use_merged_sheet(config)  # jobs and analyses read the one merged file
    return out


def _use_merged_sheet(config: dict[str, Any]) -> None:
    """With `registry_extra` files: write the merged registry (`geneb.registry.registry.write_merged_sheet`, under
    results_dir) and make it the config's model_sheet (registry_extra then empty), in place, so every job and
    analysis reads the same entries. Call after the registry loaded, so errors name the user's files."""
    if config["registry_extra"]:
        data = read_merged(config["model_sheet"], config["registry_extra"])
        config["model_sheet"] = canonical_path(write_merged_sheet(data, config["results_dir"]))
        config["registry_extra"] = []


def config_source(config_files: Sequence[str]) -> str:
    """The config files a run was read from, for an error about a setting: each once, in the order first read
    (Snakemake lists the Snakefile's default `configfile:` as an absolute path and again when it is
    also given on the command line), in its shortest spelling; "the config" when there is none."""
    seen: dict[str, str] = {}
    for name in config_files:
        key = os.path.realpath(name)
        seen[key] = min(seen.get(key, name), name, key=len)
    return " + ".join(seen.values()) or "the config"


def _model_settings(config: dict[str, Any], source: str) -> dict[str, str]:
    """{model: the setting of the config (file(s) `source`) that names it}: "models_extra: entry 1" for a model
    models_extra adds, else "models: entry 3"; the prefix of its error when it is not in the registry."""
    where: dict[str, str] = {}
    # `models` already holds models_extra's additions (plan_run): the models_extra entry, read last, names them
    for key in ("models", "models_extra"):
        for i, model in enumerate(config[key]):
            where[model] = f"{source}: {key}: entry {i + 1}"
    return where


def check_exclusion_lists(config: dict[str, Any], registry: Registry, source: str = "the config") -> None:
    """Every model id of the analysis exclusion lists is in the registry; else ValueError naming the config file(s)
    `source`, the setting and its entry (a misspelled id would silently exclude nothing)."""
    analysis = config["analysis"]
    for where, scale in (
        ("analysis.scale", analysis["scale"]),
        ("analysis.published.scale", analysis["published"].get("scale", {})),
    ):
        for key, items in (
            ("rho_exclusions", scale.get("rho_exclusions") or []),
            ("in_domain.exclude_models", (scale.get("in_domain") or {}).get("exclude_models") or []),
        ):
            for i, item in enumerate(items):
                try:
                    model_spec(registry, item["model"])
                except RegistryError as err:
                    raise ValueError(f"{source}: {where}.{key}: entry {i + 1}: {err}") from None


def preflight_or_stop(
    config: dict[str, Any],
    registry: Registry,
    not_runnable_message: str,
    *,
    conda_deploys: bool,
    task_sheet: pd.DataFrame,
    prepared: Callable[[str], bool] | None = None,
) -> list[str]:
    """The pre-flight of every selected model (geneb.run.checks) and task source (geneb.run.checks):
    returns the problems of this interpreter on the conda route without --sdm conda. Raises PreflightError listing
    every other problem at once, each with its fix (the models that cannot run at all first, `not_runnable_message`
    from load_locked_registry, then the others' env problems, then the tasks whose source cannot give them), so no
    job starts for a model or task that cannot run and nothing is retried. prepared: whether a task is prepared
    under this config (its remote source is then not asked; `geneb.run.checks.source_problems`)."""
    sources = _format_source_problems(source_problems(config, task_sheet, prepared=prepared))
    blocked = not_runnable(registry, config["models"]) if not_runnable_message else {}
    problems, here = _preflight(
        registry,
        [m for m in config["models"] if m not in blocked],
        env_route=config["execution"]["env_route"],
        conda_deploys=conda_deploys,
        env_cache=config["execution"]["env_dir"],
    )
    if not_runnable_message or problems or sources:
        report = [format_problems(problems + here)] if problems else []
        parts = [not_runnable_message, *report, sources]
        raise PreflightError("\n".join(part for part in parts if part))
    return here
