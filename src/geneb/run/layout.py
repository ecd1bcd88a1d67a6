"""What a job carries: the resources/ layout (every cache path and the hash it carries), rerun keys and the
resources jobs ask of a scheduler.

Rerun keys: params that stay equal from one Snakemake call to the next. Params are rerun triggers, compared by
`repr` (Snakemake's persistence): `geneb.core.provenance.stable_params` sorts every mapping (and its `params_hash`
is the hash a path carries), and `canonical_path` gives a local path one spelling.

What the workflow's jobs ask of a scheduler: portable resources (a GPU count, memory, run time).

Rules declare portable resources only; site specifics (partition, account, GPU model, `gres` strings) live in
`profiles/`. The functions here are pure, so common.smk wraps them in one-line input functions and tests call
them directly (docs/hpc.md). Resources are never rerun triggers: changing the device, a memory size or the
retry count reruns nothing (rerun keys: `geneb.run.layout`).

What one model's extraction jobs ask of the scheduler (GPU or not, partition, gres, memory): `ExtractionResources`,
the run plan's `resources` part, over the portable resources of `geneb.run.layout`; site values come from the
config's `slurm:` section that the profiles fill in (docs/hpc.md).

The resources/ layout: every cache path of a run and the hash it carries, so two configs that prepare a task,
draw shots, audit or extract differently never write the same file (docs/data-dictionary.md, "Runs kept apart").

One function per kind of path (used by `ResourceLayout` and geneb.evaluate) and `ResourceLayout`, the run plan's
`layout` part, that fills them in from the plan's settings. The `{thash}`, `{dhash}`, `{ahash}` and `{xhash}`
wildcards of the rules are these hashes.

Each part is built by the run plan (`geneb.run.plan.RunPlan`) with the plan itself, and reads of it only what its
Protocol (`ResourceNeeds`, `LayoutNeeds`) names.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping
from typing import Any, Protocol

import geneb.run.partial as partial_run
from geneb.core.provenance import check_hash, params_hash, stable_params
from geneb.registry.families import family as model_family
from geneb.registry.python_entry import cpu_only
from geneb.registry.registry import Registry, model_spec

#: the config keys the report does not show (execution knobs, weight paths, the task lock's path, download limits)
_REPORT_HIDDEN = ("execution", "model_weights", "slurm", "models_extra", "task_lock", "task_download")


def report_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration a report shows (the report rules' params; `geneb merge`'s report): the validated
    `config` without the keys of REPORT_HIDDEN (they never change a result: the weights' content is in each
    model's settings hash, the task files' in the task's; so they must not rerun the report either), its tasks,
    models and protocols sorted (their order changes no result), every mapping sorted (`stable_params`).
    Raises KeyError when `config` has no tasks, models or protocols (a config not validated)."""
    shown = {key: value for key, value in config.items() if key not in _REPORT_HIDDEN}
    for key in ("tasks", "models", "protocols"):
        shown[key] = sorted(shown[key])
    result: dict[str, Any] = stable_params(shown)
    return result


def canonical_path(path: str) -> str:
    """One spelling for a local path, so that `config/models.yaml`, `./config/models.yaml` and its absolute
    form are the same rerun key: a path inside the working directory becomes relative to it; one
    outside it keeps its form (relative or absolute), normalised (`a/../b` -> `b`, no trailing slash), so the
    same config in another run folder gives the same key. URLs and `hf:` specs are returned unchanged."""
    if "://" in path or path.startswith("hf:"):
        return path
    relative = os.path.relpath(os.path.abspath(path))
    if relative != ".." and not relative.startswith("../"):
        return relative
    return os.path.normpath(path)


#: memory (MB) of an extraction job besides the model weights; k-mer jobs need no more
_EXTRACTION_BASE_MEM_MB = 4000
#: host memory per model parameter (bytes): float32 weights (4) plus loading overhead
_EXTRACTION_BYTES_PER_PARAM = 6
#: first-attempt run time of one (model, task) extraction job, minutes; a group job of a model's tasks asks
#: for the sum (50 tasks: 17 h), so it is sized for a paper task on a GPU (seconds to minutes) with margin
_EXTRACTION_RUNTIME_MIN = 20
#: first-attempt memory and run time of one (protocol, model, task) probe job (all regimes and seeds)
_PROBE_MEM_MB = 4000
_PROBE_RUNTIME_MIN = 60


def _scaled(base: int, attempt: int) -> int:
    """`base` doubled for every retry: attempt 1 -> base, 2 -> 2 x base, 3 -> 4 x base. Used for memory and
    run time, so a job killed for memory or walltime gets more on its retry (`retries:` in the profile)."""
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    return int(base) * 2 ** (attempt - 1)


def _extraction_gpus(uses_torch: bool, device: str) -> int:
    """GPUs one extraction job asks for: 1 when the model runs on torch and the configured device is a GPU
    ("cuda", "cuda:N", or "auto", which uses one when present), else 0 (k-mer models, device cpu)."""
    if not uses_torch:
        return 0
    return 1 if device == "auto" or device.startswith("cuda") else 0


def _extraction_mem_mb(n_params: int | float | None, attempt: int) -> int:
    """Host memory (MB) of one extraction job: a base plus room for the weights, doubled on each retry."""
    weights = math.ceil(float(n_params or 0) * _EXTRACTION_BYTES_PER_PARAM / 1e6)
    return _scaled(_EXTRACTION_BASE_MEM_MB + weights, attempt)


def extraction_runtime(attempt: int) -> int:
    """Run time (minutes) of one extraction job, doubled on each retry (a walltime kill is retried longer)."""
    return _scaled(_EXTRACTION_RUNTIME_MIN, attempt)


def probe_mem_mb(attempt: int) -> int:
    """Memory (MB) of one probe job, doubled on each retry."""
    return _scaled(_PROBE_MEM_MB, attempt)


def probe_runtime(attempt: int) -> int:
    """Run time (minutes) of one probe job, doubled on each retry."""
    return _scaled(_PROBE_RUNTIME_MIN, attempt)


class ResourceNeeds(Protocol):
    """What `ExtractionResources` reads of the run plan (`geneb.run.plan.RunPlan`): the validated config (its
    execution device and `slurm:` section), the registry and the resolved extraction settings."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def extraction_settings(self) -> Mapping[str, dict[str, Any]]: ...


class ExtractionResources:
    """The resources of each configured model's extraction jobs (`geneb.run.plan.RunPlan.resources`; fine-tune and
    zero-shot scoring jobs ask for the same GPU)."""

    def __init__(self, run: ResourceNeeds) -> None:
        self._run = run

    def extraction_wants_gpu(self, model: str) -> bool:
        """Whether the model's extraction jobs need a GPU node: a torch model when execution.device is cuda/auto;
        never a CPU-only encoder (a family that does not use torch: the k-mer spectra, the shortcut features; a python
        entry with `load.cpu_only`; precomputed vectors) or device cpu."""
        settings = self._run.extraction_settings[model]
        uses_gpu = model_family(settings["family"]).uses_torch and not cpu_only(settings)  # load.cpu_only: no GPU
        return _extraction_gpus(uses_gpu, self._run.config["execution"]["device"]) > 0

    def extraction_gpus(self, model: str) -> int:
        """The `gpu` resource (sbatch --gpus) of the model's extraction jobs: 1 when it needs a GPU
        (`extraction_wants_gpu`) and the site takes --gpus; 0 for a CPU job, and where the profile asks for GPUs
        as --gres instead (config slurm.gpu_gres, `extraction_gres`)."""
        return int(self.extraction_wants_gpu(model) and not self._run.config["slurm"]["gpu_gres"])

    def extraction_partition(self, model: str) -> str | None:
        """The `slurm_partition` resource of the model's extraction jobs: the profile's slurm.gpu_partition for a
        job that needs a GPU, slurm.cpu_partition for a CPU job (a k-mer model, device cpu), so a CPU-only
        encoder never lands in the GPU partition; None (the profile's default partition) when not set."""
        slurm = self._run.config["slurm"]
        return slurm["gpu_partition"] if self.extraction_wants_gpu(model) else slurm["cpu_partition"]

    def extraction_gres(self, model: str) -> str | None:
        """The `gres` resource (sbatch --gres) of the model's extraction jobs: the profile's slurm.gpu_gres for a
        job that needs a GPU (sites that refuse --gpus, profiles/slurm-gres), None for a CPU job or when unset."""
        return self._run.config["slurm"]["gpu_gres"] if self.extraction_wants_gpu(model) else None

    def extraction_mem_mb(self, model: str, attempt: int) -> int:
        """Host memory (MB) of one extraction job: base + weights (registry `params`), doubled on each retry."""
        return _extraction_mem_mb(model_spec(self._run.registry, model).params, attempt)


#: the files of one prepared task folder (`task_dir`): the two splits, the card and the validation record
_TASK_FILES = ("train.parquet", "test.parquet", "card.json", "validation.json")


# ---- the resources/ layout: one function per kind of path, each keyed on everything that decides its content
# (docs/data-dictionary.md). Two configs that prepare a task differently get different folders, so neither
# re-prepares, re-draws or re-extracts the other's files (`ResourceLayout` calls these; so does geneb.evaluate). The `{thash}`, `{dhash}`, `{ahash}` and `{xhash}` wildcards of the rules are these hashes.


def task_dir_path(task: str, thash: str) -> str:
    """The folder of one prepared task: resources/tasks/{task}/{thash}/, thash = `params_hash` of its preparation
    params (`RunPlan.task_params`: catalogue row, source identity, alphabet, caps, cap seed, task_checks)."""
    return f"resources/tasks/{task}/{thash}"


def _audit_path(task: str, thash: str, ahash: str) -> str:
    """The audit of one prepared task under the audit settings hashed `ahash` (config `task_audit`)."""
    return f"{task_dir_path(task, thash)}/audit-{ahash}.json"


def _shot_path(protocol: str, dhash: str, task: str, thash: str) -> str:
    """The shot draws of one prepared task under `protocol`'s draw settings hashed `dhash`
    (`RunPlan.shot_draw_params`): two configs with one protocol name and other draw settings never share it."""
    return f"resources/shots/{protocol}/{dhash}/{task}/{thash}.json"


def model_embeddings_dir(model: str, xhash: str) -> str:
    """The folder of a model's embeddings under the extraction settings hashed `xhash`; it also holds the model's
    load-time checks record (geneb.extract.step), which zero-shot scoring shares."""
    return f"resources/embeddings/{model}/{xhash}"


def embedding_path(model: str, xhash: str, task: str, thash: str) -> str:
    """The HDF5 embedding cache of (model under the extraction settings hashed `xhash`, prepared task `thash`)."""
    return f"{model_embeddings_dir(model, xhash)}/{task}/{thash}.h5"


class ShotProtocols(Protocol):
    """Which protocol's shot draws a protocol reads (the run's `geneb.finetune.plan.FineTunePlan`: finetune-lora
    reads its `shots_from` probe protocol's draws)."""

    def shot_protocol(self, protocol: str) -> str: ...


class LayoutNeeds(Protocol):
    """What `ResourceLayout` reads of the run plan (`geneb.run.plan.RunPlan`): the validated config, the extraction
    settings hashes, a partial run's failures, the run's tasks and models, the rerun keys that the task and shot
    hashes are made of, and the fine-tune stage's protocol mapping (`shot_file`)."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def extraction_hashes(self) -> Mapping[str, str]: ...
    @property
    def partial(self) -> dict[str, Any] | None: ...
    @property
    def tasks(self) -> list[str]: ...
    @property
    def models(self) -> list[str]: ...
    @property
    def finetune(self) -> ShotProtocols: ...
    def task_params(self, task: str, thash: str | None = None) -> dict[str, Any]: ...
    def shot_draw_params(self, protocol: str, dhash: str | None = None) -> dict[str, Any]: ...


class ResourceLayout:
    """The paths of a run plan's prepared tasks, audits, shot draws and embeddings (`geneb.run.plan.RunPlan.layout`)."""

    def __init__(self, run: LayoutNeeds) -> None:
        self._run = run

    def task_hash(self, task: str) -> str:
        """The 12-hex hash of `task_params(task)`: the `{thash}` of every path derived from the prepared task."""
        return params_hash(self._run.task_params(task))

    def task_dir(self, task: str) -> str:
        """The prepared task's folder (`task_dir_path`): its splits, card, validation record and audits."""
        return task_dir_path(task, self.task_hash(task))

    def task_file(self, task: str, name: str) -> str:
        """One file of the prepared task's folder, name one of TASK_FILES (ValueError otherwise)."""
        if name not in _TASK_FILES:
            raise ValueError(f"{name!r} is not a prepared task file ({', '.join(_TASK_FILES)})")
        return f"{self.task_dir(task)}/{name}"

    def task_inputs(self, task: str) -> dict[str, str]:
        """{"train", "test", "card": path} of the prepared task: the task inputs of extraction and probing."""
        return {
            key: self.task_file(task, f"{key}.{ext}")
            for key, ext in (("train", "parquet"), ("test", "parquet"), ("card", "json"))
        }

    def task_cards(self) -> list[str]:
        """The task cards of every configured task (they record caps, which make a task not the paper's split)."""
        return [self.task_file(task, "card.json") for task in self._run.tasks]

    def audit_settings(self, ahash: str | None = None) -> dict[str, Any]:
        """The audit settings (config task_audit): the audit_task rerun key. ahash: the `{ahash}` of the path
        asking (ValueError when it is not this config's)."""
        settings = self._run.config["task_audit"]
        if ahash is not None:
            check_hash("task_audit", ahash, params_hash(settings))
        return settings

    def audit_file(self, task: str) -> str:
        """The task's audit under this config's audit settings (`_audit_path`)."""
        return _audit_path(task, self.task_hash(task), params_hash(self.audit_settings()))

    def task_audits(self) -> list[str]:
        """The audit of every configured task, in config order."""
        return [self.audit_file(task) for task in self._run.tasks]

    def embedding_file(self, model: str, task: str) -> str:
        """The HDF5 cache of (model, task) under the model's current settings hash and the task's preparation hash
        (`embedding_path`). Raises KeyError for a model that is not configured."""
        return embedding_path(model, self._run.extraction_hashes[model], task, self.task_hash(task))

    def task_embedding_files(self, task: str) -> list[str]:
        """The embedding files of one task (every model, current settings): its probes can run when all exist."""
        return [self.embedding_file(model, task) for model in self._run.models]

    def shot_file(self, protocol: str, task: str) -> str:
        """The shot draws of (protocol, task) under this config's draw settings and task preparation (`_shot_path`),
        of the protocol whose draws `protocol` reads (`geneb.finetune.plan.FineTunePlan.shot_protocol`: finetune-lora
        reads its shots_from protocol's)."""
        drawn = self._run.finetune.shot_protocol(protocol)
        return _shot_path(drawn, params_hash(self._run.shot_draw_params(drawn)), task, self.task_hash(task))

    def probe_inputs(self, protocol: str, model: str, task: str) -> dict[str, str]:
        """Every file one fit_probes job reads: the task's splits and card, the embeddings, the shots, the audit."""
        return {
            **self.task_inputs(task),
            "embeddings": self.embedding_file(model, task),
            "shots": self.shot_file(protocol, task),
            "audit": self.audit_file(task),
        }

    def embedding_files(self) -> list[str]:
        """The embedding file of every kept (model, task) cell of any protocol, de-duplicated in order: what the cost
        table (`geneb.tables.cost`, rule cost_table) reads."""
        run = self._run
        every = itertools.product(run.config["protocols"], run.models, run.tasks)
        cells = partial_run.kept_cells(every, run.partial)
        return list(dict.fromkeys(self.embedding_file(model, task) for _, model, task in cells))

    def resource_files(self) -> list[str]:
        """Every resources/ file the score table is computed from (cards, audits, and per kept probe cell its
        embeddings and shots), de-duplicated in order: what `geneb.tables.freshness` records beside it."""
        run = self._run
        every = itertools.product(run.config["protocols"], run.models, run.tasks)
        files = [*self.task_cards(), *self.task_audits()]
        for protocol, model, task in partial_run.kept_cells(every, run.partial):
            files += [self.embedding_file(model, task), self.shot_file(protocol, task)]
        return list(dict.fromkeys(files))
