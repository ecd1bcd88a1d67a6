"""`geneb.evaluate` and `geneb.leaderboard`, and what they keep between calls of one process.

What `geneb.evaluate` reads again on every call, kept between calls of one process while the files are unchanged.

A notebook calls `evaluate` many times with the same registry file and config; reading and validating them is
not part of the workflow's per-task jobs (the workflow plans once per run). Each entry here is keyed on the
*content* of every file it was built from (sha256 of the bytes, never a modification time) and on the working
directory (relative paths resolve against it), so an edited file is read again and checked again on the next call.
Callers treat what they get as read-only.

`geneb.evaluate` and `geneb.leaderboard`: the workflow's steps in process, for a notebook (no Snakemake).

`evaluate` runs, per task, exactly the functions the workflow's jobs run, with the parameters the workflow's plan
gives them (`geneb.run.plan.RunPlan`'s `task_params`, `shot_draw_params`, `probe_settings`): task preparation with
its caps (`geneb.tasks.prepare.prepare_from_params`), the shot draws (`geneb.probe.job.write_shot_indices`), the
embeddings (`geneb.extract.step.extract_task`, or `geneb.extract.precomputed.import_task`), the probes and their
bootstrap (`geneb.probe.job.fit_probes`) and the aggregation (`geneb.tables.aggregate.concat_tables`). So its rows
are the rows `results/tables/scores.parquet` holds for the same model, tasks and config, and merge with them.

Files go under `workdir` (default: a new temporary folder): `tasks/`, `shots/`, `embeddings/`, `probes/`,
`predictions/`, `tables/scores.parquet`, in the workflow's layout. Nothing here imports torch unless the model needs
it (a registry model of a torch family).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.core import integrity, paths, yamlio
from geneb.core.envs import ENVS_DIR
from geneb.registry.registry import Registry

#: how many registries / probe sections are kept (a notebook switches between a few sheets at most)
_MAX_ENTRIES = 4
_registries: dict[tuple[Any, ...], Registry] = {}
_probe_sections: dict[str, dict[str, Any]] = {}


def _digest(path: str | os.PathLike[str] | None) -> str:
    """sha256 of a file's bytes; "-" for no path, "absent" for a path with no file."""
    if path is None:
        return "-"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"


def _remember(store: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(store) >= _MAX_ENTRIES:
        store.pop(next(iter(store)))
    store[key] = value
    return value


def _registry(
    sheet: str | Path,
    *,
    pins: str | Path | None,
    weights: Mapping[str, Any] | None,
    weights_dir: str | Path | None,
    extra: Sequence[str | Path] = (),
) -> Registry:
    """`geneb.registry.load.load_registry(sheet, pins=..., weights=..., weights_dir=..., extra=...)`, validated in
    full, read again only when the sheet, a user registry file of `extra` (config `registry_extra`), the pins file, an
    env file of envs/ or an argument changed (or the working directory, against which relative paths resolve).
    Raises what `load_registry` raises."""
    from geneb.registry.load import load_registry

    envs = tuple(sorted((p.name, _digest(p)) for p in Path(ENVS_DIR).glob("*.yaml")))
    key = (
        os.getcwd(),
        os.path.abspath(sheet),
        _digest(sheet),
        None if pins is None else (os.path.abspath(pins), _digest(pins)),
        repr(sorted((weights or {}).items())),
        None if weights_dir is None else str(weights_dir),
        envs,
        tuple((os.path.abspath(e), _digest(e)) for e in extra),
    )
    if key not in _registries:
        loaded = load_registry(sheet, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
        return _remember(_registries, key, loaded)
    return _registries[key]


def _shipped_probe_section() -> dict[str, Any]:
    """The `probe` section of the checkout's config/config.yaml (the schema has no probe defaults), read again when
    the file changed. A fresh copy each call: the caller's config owns it."""
    import copy

    path = paths.repo_root() / "config" / "config.yaml"
    data = path.read_bytes()
    key = hashlib.sha256(data).hexdigest()
    if key not in _probe_sections:
        _remember(_probe_sections, key, yamlio.safe_load(data.decode("utf-8"))["probe"])
    return copy.deepcopy(_probe_sections[key])


_log = logging.getLogger(__name__)
#: the name score rows give a model handed over as a callable or an object (override with `name=`)
_DEFAULT_NAME = "my-model"
#: config keys holding local paths, resolved like the workflow's (the working directory) or against the checkout
_PATH_KEYS = ("task_sheet", "model_sheet", "model_revisions", "task_source", "task_lock")


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) else value
    return out


def _local(path: str) -> str:
    """A relative local path as the workflow reads it (against the working directory) when it is there, else
    against the GENEB checkout (a notebook started elsewhere); URLs and hf: sources unchanged."""
    if "://" in path or path.startswith("hf:") or Path(path).is_absolute() or Path(path).exists():
        return path
    in_repo = paths.repo_root() / path
    return str(in_repo) if in_repo.exists() else path


def resolve_config(
    config: str | os.PathLike[str] | Mapping[str, Any] | None, tasks: Sequence[str], models: list[str], overrides: Any
) -> dict[str, Any]:
    """The run's configuration: `config` (a YAML file or a mapping; None: the schema's defaults; without a `probe`
    section, the probe settings of the checkout's config/config.yaml, as the schema has none), `overrides` merged in (nested
    mappings key by key), `tasks` and `models` set, validated and its defaults filled as the workflow does
    (`geneb.run.checks.check_config`). Raises ValueError listing every problem of the config."""
    from geneb.core.paths import load_schema
    from geneb.core.provenance import stable_params
    from geneb.run.checks import check_config

    if config is None:
        base: dict[str, Any] = {}
    elif isinstance(config, Mapping):
        base = copy.deepcopy(dict(config))
    else:
        base = yamlio.safe_load(Path(config).read_text()) or {}
    base = _merge(base, dict(overrides))
    if "probe" not in base:  # the schema has no probe defaults: every setting is written out in the shipped config
        base["probe"] = _shipped_probe_section()
    base.update(tasks=list(tasks), models=list(models))
    cfg = check_config(base, load_schema("config"))  # the schema read once per process (check_config copies it)
    cfg.update(stable_params(cfg))
    for key in _PATH_KEYS:
        if isinstance(cfg.get(key), str):
            cfg[key] = _local(cfg[key])
    return cfg


def _model_settings(model: Any, name: str | None, cfg: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """(resolved extraction settings, an encoder built now or None) for a registry id, a callable or an object."""
    from geneb.registry.load import DEFAULT_EXTRACTION, extraction_settings

    if isinstance(model, str):
        sheet = _registry(  # validated in full, read again only when a file it comes from changed
            cfg["model_sheet"],
            pins=cfg["model_revisions"],
            weights=cfg["model_weights"],
            weights_dir=cfg["execution"]["weights_dir"],
            extra=cfg["registry_extra"],
        )
        return extraction_settings(sheet, model, cfg["alphabet"], device=cfg["execution"]["device"]), None
    from geneb.encoders.families.python_encoder import PythonEncoder, wrap_callable

    obj = wrap_callable(model)
    model_id = name or _DEFAULT_NAME
    encoder = PythonEncoder(obj, model=model_id, batch_size=cfg["execution"]["batch_size"])
    settings = {
        "model": model_id,
        "family": "python",
        "source": {"kind": "builtin"},
        "builtin": {},
        "trust_remote_code": False,
        "load": {},  # in process: no entry to fingerprint
        "extraction": {**DEFAULT_EXTRACTION, "dtype": "float32"},
        "alphabet": dict(sorted(cfg["alphabet"].items())),
    }
    return settings, encoder


#: beside a task's prepared files in the workdir: the stable hash of what they were prepared from
_PREPARED_STAMP = "prepared-from.json"


def _prepared_key(params: Mapping[str, Any], source: str) -> str:
    from geneb.core.provenance import stable_hash

    return stable_hash({"params": params, "source": source})


def _prepared(task_dir: Path, params: Mapping[str, Any], source: str) -> bool:
    """Whether `task_dir` holds a task prepared from these rule params (catalogue row, source identity with its
    files' digests, alphabet, caps) and source: the workflow's rerun rule (same params, inputs unchanged) applied
    to a workdir reused across calls. The stamp is written only after a preparation finished (`_stamp`), and a
    preparation removes the card first, so a failed or killed one is never reused."""
    stamp = task_dir / _PREPARED_STAMP
    files = [task_dir / n for n in ("card.json", "train.parquet", "test.parquet")]
    if not stamp.is_file() or not all(f.is_file() for f in files):
        return False
    return json.loads(stamp.read_text()).get("key") == _prepared_key(params, source)


def _stamp(task_dir: Path, params: Mapping[str, Any], source: str) -> None:
    from geneb.core.integrity import atomic_path

    with atomic_path(task_dir / _PREPARED_STAMP) as tmp:
        Path(tmp).write_text(json.dumps({"key": _prepared_key(params, source)}))


def evaluate(
    model: str | Callable[[list[str]], Any] | Any,
    tasks: str | Sequence[str],
    protocol: str | Sequence[str] = "geneb-paper",
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    workdir: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> pd.DataFrame:
    """Score `model` on `tasks` under `protocol` the way the workflow does, in this process; returns the score
    rows (long format, the score-table schema of `geneb.tables.scores`, with the data-hygiene columns of
    `results/tables/scores.parquet`).

    model: a registry id (of the config's `model_sheet`: any family, `python` and `precomputed` included); a
    callable `list[str] -> array (n, d)` (float32/float64, one finite row per sequence, in order); or an object
    with such an `embed` method and optional `max_length` (nucleotides) and `device` (the `python` family's
    contract and load-time checks: `geneb.encoders.families.python_encoder`). tasks: task ids of the config's
    task sheet. protocol: one protocol or several. config: a workflow config file (or mapping) whose task source,
    caps, alphabet, probe and execution settings are used; None: the schema's defaults (no caps) and the shipped
    probe settings. name: the model's id in the rows when `model` is not a registry id (default "my-model").
    workdir: where the workflow's files go (default a new temporary folder, its path in the log); a workdir used
    again keeps each prepared task while its preparation params and source files are unchanged, as a workflow
    rerun does (`_PREPARED_STAMP`); embeddings, shot draws and probes are made again on every call. overrides:
    config keys merged over `config`, e.g. `caps={"default": {"max_train": 500}}`.

    Raises ValueError for a bad config, an unknown task or protocol, RegistryError for an unknown model id,
    TypeError for a model of none of the three kinds, and what the workflow's steps raise (task data problems,
    EncoderContractError, PrecomputedError, ProbeInputError), each naming the model, task, split or row.
    """
    from geneb.extract.step import LoadedModel, extract_task, load_model
    from geneb.probe.job import fit_probes, write_shot_indices
    from geneb.registry.load import extraction_hash
    from geneb.registry.spec import ExtractionSettings
    from geneb.run.layout import embedding_path
    from geneb.run.plan import RunPlan
    from geneb.tables.aggregate import concat_tables
    from geneb.tasks.catalogue import read_catalogue, read_lock, source_string, task_row
    from geneb.tasks.prepare import prepare_from_params

    task_list = [tasks] if isinstance(tasks, str) else list(tasks)
    protocols = [protocol] if isinstance(protocol, str) else list(protocol)
    model_ids = [model] if isinstance(model, str) else [name or _DEFAULT_NAME]
    cfg = resolve_config(config, task_list, model_ids, {**overrides, "protocols": protocols})
    unknown = [p for p in protocols if p not in cfg["probe"]]
    if unknown:
        raise ValueError(f"protocol(s) {unknown} not in the config's probe section ({sorted(cfg['probe'])})")
    sheet = read_catalogue(cfg["task_sheet"])
    for task in task_list:
        task_row(sheet, task)  # an unknown task id fails here, with close matches
    settings, encoder = _model_settings(model, name, cfg)
    settings_hash = extraction_hash(settings)
    model_id = settings["model"]
    plan = RunPlan(
        config=cfg,
        task_sheet=sheet,
        registry=None,  # type: ignore[arg-type]
        extraction_settings={},
        extraction_hashes={},
        task_lock=read_lock(cfg["task_lock"]),
    )
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="geneb-evaluate-"))
    _log.info("geneb.evaluate: model %s on %d task(s), files under %s", model_id, len(task_list), root)
    execution = cfg["execution"]
    loaded = None
    if encoder is not None:
        loaded = LoadedModel(
            settings=ExtractionSettings.of(settings),
            settings_hash=settings_hash,
            encoder=encoder,
            identity=encoder.identity(),
            seconds_load=0.0,
            load_id=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}",
            load_checks_sha256="run at construction",
            checks_run=True,
        )
    tables: list[str | Path] = []
    cards: list[str | Path] = []
    for task in task_list:
        # the workflow's layout: the folder is the preparation params' hash
        task_dir = root / plan.layout.task_dir(task)
        task_dir.mkdir(parents=True, exist_ok=True)
        card = task_dir / "card.json"
        source = source_string(task_row(sheet, task), cfg)
        params = plan.task_params(task)
        if not _prepared(task_dir, params, source):
            # the task lock as in the workflow: files that differ from it are refused, a new task is recorded
            prepare_from_params(task, params, source, card, lock_path=cfg["task_lock"], download=cfg["task_download"])
            _stamp(task_dir, params, source)
        cards.append(card)
        h5 = root / embedding_path(model_id, settings_hash, task, plan.layout.task_hash(task))
        h5.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if settings["family"] == "precomputed":
            from geneb.extract.precomputed import import_task

            import_task(settings, task_dir, h5, hdf5_locking=execution["hdf5_locking"])
        else:
            if loaded is None:
                loaded = load_model(
                    settings,
                    checks_dir=h5.parents[1],  # <model>/<settings hash>/, as in the workflow
                    device=execution["device"],
                    batch_size=execution["batch_size"],
                    batch_tokens=execution["batch_tokens"],
                    threads=execution["threads"],
                    progress=False,
                )
            extract_task(
                settings,
                task_dir,
                h5,
                device=execution["device"],
                batch_size=execution["batch_size"],
                hdf5_locking=execution["hdf5_locking"],
                progress=False,
                loaded=loaded,
            )
        _log.info("task %s: embeddings in %.1f s", task, time.perf_counter() - t0)
        for proto in protocols:
            shots = root / plan.layout.shot_file(proto, task)
            shots.parent.mkdir(parents=True, exist_ok=True)
            write_shot_indices(
                train=task_dir / "train.parquet",
                card=card,
                output=shots,
                task=task,
                protocol=proto,
                settings=plan.shot_draw_params(proto),
            )
            scores = root / "results" / "probes" / proto / model_id / f"{task}.parquet"
            predictions = root / "results" / "predictions" / proto / model_id / f"{task}.parquet"
            scores.parent.mkdir(parents=True, exist_ok=True)
            predictions.parent.mkdir(parents=True, exist_ok=True)
            fit_probes(
                train=task_dir / "train.parquet",
                test=task_dir / "test.parquet",
                card=card,
                embeddings=h5,
                shots=shots,
                scores_out=scores,
                predictions_out=predictions,
                task=task,
                model=model_id,
                protocol=proto,
                settings=plan.probe_settings(proto),
                hdf5_locking=execution["hdf5_locking"],
                settings_hash=settings_hash,
            )
            tables.append(scores)
    out = root / "results" / "tables" / "scores.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    return concat_tables(tables, out, cards=cards)


def leaderboard(
    scores: pd.DataFrame | str | os.PathLike[str],
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The leaderboard frame (`results/tables/leaderboard.parquet`'s columns: model x category mean MCC per
    protocol and regime, macro and micro means, ranks) of score rows: `evaluate`'s frame, the workflow's
    `scores.parquet`, or both concatenated. config: whose `analysis` settings, model sheet (facts, contamination)
    and task sheet apply (None: the schema's defaults). Models not in the model sheet count as clean, unnamed
    facts. Raises AnalysisInputError for rows that are not a score table."""
    from geneb.analysis import inputs, ranking, run
    from geneb.tables.scores import check_scores

    table = integrity.read_parquet(scores) if not isinstance(scores, pd.DataFrame) else scores
    table = check_scores(table)
    cfg = resolve_config(config, ["unused"], sorted(set(table["model"])), {})
    settings = run.resolve_settings(cfg["analysis"], "geneb")
    meta = inputs.load_model_meta(cfg["model_sheet"])
    others = sorted(set(table["model"]) - set(meta.index))
    if others:
        meta = pd.concat([meta, inputs.model_frame({m: {} for m in others})])
    used, _ = run.prepare_cells(table, meta, inputs.load_task_meta(cfg["task_sheet"]), settings)
    return ranking.leaderboard(used)
