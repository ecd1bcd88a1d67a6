"""The resources/ layout: every cache path of a run and the hash it carries, so two configs that prepare a task,
draw shots, audit or extract differently never write the same file (docs/data-dictionary.md, "Runs kept apart").

One function per kind of path (used by `RunPlan`, geneb.evaluate and geneb.run.migrate) and `ResourceLayout`, the
`RunPlan` methods (its base class) that fill them in from the plan's settings. The `{thash}`, `{dhash}`, `{ahash}`
and `{xhash}` wildcards of the rules are these hashes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from geneb.core.provenance import stable_hash
from geneb.run import partial as partial_run
from geneb.run.rerun import stable_params

#: the files of one prepared task folder (`task_dir`): the two splits, the card and the validation record
TASK_FILES = ("train.parquet", "test.parquet", "card.json", "validation.json")


def params_hash(params: Mapping[str, Any]) -> str:
    """The 12-hex cache key of a path: `stable_hash` of `stable_params(params)` (sorted mappings, so the key order
    of a YAML file never gives a new path), the primitive of the extraction settings hash too."""
    return stable_hash(stable_params(dict(params)))


# ---- the resources/ layout: one function per kind of path, each keyed on everything that decides its content
# (docs/data-dictionary.md). Two configs that prepare a task differently get different folders, so neither
# re-prepares, re-draws or re-extracts the other's files (`RunPlan` methods call these; so do geneb.evaluate and
# geneb.run.migrate). The `{thash}`, `{dhash}`, `{ahash}` and `{xhash}` wildcards of the rules are these hashes.


def task_dir_path(task: str, thash: str) -> str:
    """The folder of one prepared task: resources/tasks/{task}/{thash}/, thash = `params_hash` of its preparation
    params (`RunPlan.task_params`: catalogue row, source identity, alphabet, caps, cap seed, task_checks)."""
    return f"resources/tasks/{task}/{thash}"


def audit_path(task: str, thash: str, ahash: str) -> str:
    """The audit of one prepared task under the audit settings hashed `ahash` (config `task_audit`)."""
    return f"{task_dir_path(task, thash)}/audit-{ahash}.json"


def shot_path(protocol: str, dhash: str, task: str, thash: str) -> str:
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


def check_hash(what: str, wildcard: str, current: str) -> None:
    """Raises ValueError when the hash `wildcard` of a path asking for `what` is not this config's `current`."""
    if wildcard != current:
        raise ValueError(f"{what}: the path has hash {wildcard}, this config's is {current}")


class ResourceLayout:
    """Mixed into `geneb.run.plan.RunPlan`: the paths of its prepared tasks, audits, shot draws and embeddings."""

    if TYPE_CHECKING:
        config: dict[str, Any]
        extraction_hashes: Mapping[str, str]
        partial: dict[str, Any] | None

        @property
        def tasks(self) -> list[str]: ...
        @property
        def models(self) -> list[str]: ...
        def task_params(self, task: str, thash: str | None = None) -> dict[str, Any]: ...
        def shot_draw_params(self, protocol: str, dhash: str | None = None) -> dict[str, Any]: ...

    def task_hash(self, task: str) -> str:
        """The 12-hex hash of `task_params(task)`: the `{thash}` of every path derived from the prepared task."""
        return params_hash(self.task_params(task))

    def task_dir(self, task: str) -> str:
        """The prepared task's folder (`task_dir_path`): its splits, card, validation record and audits."""
        return task_dir_path(task, self.task_hash(task))

    def task_file(self, task: str, name: str) -> str:
        """One file of the prepared task's folder, name one of TASK_FILES (ValueError otherwise)."""
        if name not in TASK_FILES:
            raise ValueError(f"{name!r} is not a prepared task file ({', '.join(TASK_FILES)})")
        return f"{self.task_dir(task)}/{name}"

    def task_inputs(self, task: str) -> dict[str, str]:
        """{"train", "test", "card": path} of the prepared task: the task inputs of extraction and probing."""
        return {
            key: self.task_file(task, f"{key}.{ext}")
            for key, ext in (("train", "parquet"), ("test", "parquet"), ("card", "json"))
        }

    def task_cards(self) -> list[str]:
        """The task cards of every configured task (they record caps, which make a task not the paper's split)."""
        return [self.task_file(task, "card.json") for task in self.tasks]

    def audit_settings(self, ahash: str | None = None) -> dict[str, Any]:
        """The audit settings (config task_audit): the audit_task rerun key. ahash: the `{ahash}` of the path
        asking (ValueError when it is not this config's)."""
        settings = self.config["task_audit"]
        if ahash is not None:
            check_hash("task_audit", ahash, params_hash(settings))
        return settings

    def audit_file(self, task: str) -> str:
        """The task's audit under this config's audit settings (`audit_path`)."""
        return audit_path(task, self.task_hash(task), params_hash(self.audit_settings()))

    def task_audits(self) -> list[str]:
        """The audit of every configured task, in config order."""
        return [self.audit_file(task) for task in self.tasks]

    def embedding_file(self, model: str, task: str) -> str:
        """The HDF5 cache of (model, task) under the model's current settings hash and the task's preparation hash
        (`embedding_path`). Raises KeyError for a model that is not configured."""
        return embedding_path(model, self.extraction_hashes[model], task, self.task_hash(task))

    def task_embedding_files(self, task: str) -> list[str]:
        """The embedding files of one task (every model, current settings): its probes can run when all exist."""
        return [self.embedding_file(model, task) for model in self.models]

    def shot_file(self, protocol: str, task: str) -> str:
        """The shot draws of (protocol, task) under this config's draw settings and task preparation (`shot_path`)."""
        return shot_path(protocol, params_hash(self.shot_draw_params(protocol)), task, self.task_hash(task))

    def probe_inputs(self, protocol: str, model: str, task: str) -> dict[str, str]:
        """Every file one fit_probes job reads: the task's splits and card, the embeddings, the shots, the audit."""
        return {
            **self.task_inputs(task),
            "embeddings": self.embedding_file(model, task),
            "shots": self.shot_file(protocol, task),
            "audit": self.audit_file(task),
        }

    def resource_files(self) -> list[str]:
        """Every resources/ file the score table is computed from (cards, audits, and per kept probe cell its
        embeddings and shots), de-duplicated in order: what `geneb.tables.freshness` records beside it."""
        every = itertools.product(self.config["protocols"], self.models, self.tasks)
        files = [*self.task_cards(), *self.task_audits()]
        for protocol, model, task in partial_run.kept_cells(every, self.partial):
            files += [self.embedding_file(model, task), self.shot_file(protocol, task)]
        return list(dict.fromkeys(files))
