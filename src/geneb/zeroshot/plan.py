"""The zero-shot stage's part of the run plan (`geneb.run.plan.RunPlan.zeroshot`): which zero-shot tasks and
models, each file's path and the rerun key it carries (docs/zeroshot.md, "In the workflow").

Paths, each keyed on everything that decides its content (like the probing caches, geneb.run.layout):

* `resources/zeroshot/tasks/{zstask}/{zthash}/{rows.tsv,meta.json}`: a built or fetched task; zthash = the hash of
  its catalogue entry, build seed and its sources' content identity;
* `resources/zeroshot/scores/{model}/{xhash}/{zstask}/{zthash}-{shash}.parquet`: one model's per-row scores of one
  task; xhash = the model's extraction settings hash (weights, tokenizer, pooling: what the embeddings are keyed
  on), shash = the hash of its scorers;
* `resources/zeroshot/baselines/{zstask}/{zthash}-{bhash}.parquet`: the k-mer Markov baselines of one task; bhash =
  the hash of the orders, the pseudocount and the background tasks' preparation hashes;
* `{results_dir}/tables/zeroshot_*.parquet` and `{results_dir}/figures/zeroshot.png`: the tables and figure.

What it reads of the run plan is `ZeroShotNeeds` (the plan passes itself). Torch-free (planning runs in every job
process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, Protocol

from geneb.core.provenance import check_hash, params_hash
from geneb.registry.families import resolved_lm_head, resolved_scoring
from geneb.registry.registry import Registry, model_spec
from geneb.tasks.sources import resolve_source_string, source_identity
from geneb.zeroshot.overlap import K as OVERLAP_K
from geneb.zeroshot.task import (
    EMBEDDING_SCORERS,
    LLR,
    SCORE_FILE_VERSION,
    SOURCE_BUILDER,
    CatalogueEntry,
    ZeroShotCatalogueError,
    catalogue_entry,
    zeroshot_source_identity,
)

#: the config's scorer names -> the scorer columns they produce (geneb.zeroshot.task)
_SCORER_OUTPUTS: Mapping[str, tuple[str, ...]] = {LLR: (LLR,), "embedding": EMBEDDING_SCORERS}

#: the zero-shot tables under results_dir/tables (`ZeroShotPlan.outputs`)
_ZEROSHOT_TABLES = (
    "zeroshot_scores",
    "zeroshot_row_scores",
    "zeroshot_leaderboard",
    "zeroshot_vs_probe",
    "zeroshot_not_applicable",
    "zeroshot_shortcuts",
)
_ZEROSHOT_FIGURE = "figures/zeroshot.png"

#: what the report's zero-shot section reads (geneb.report.sections), in the order the report rule passes them
ZEROSHOT_REPORT_INPUTS = (
    "zeroshot_leaderboard",
    "zeroshot_vs_probe",
    "zeroshot_not_applicable",
    "zeroshot_figure",
    "zeroshot_shortcuts",
)


class PreparedTasks(Protocol):
    """The prepared probing tasks' paths the zero-shot stage reads (the run's `geneb.run.layout.ResourceLayout`):
    their preparation hashes (the baselines' key) and their training splits (the baselines' background)."""

    def task_hash(self, task: str) -> str: ...

    def task_file(self, task: str, name: str) -> str: ...


class ZeroShotNeeds(Protocol):
    """What `ZeroShotPlan` reads of the run plan (`geneb.run.plan.RunPlan`): the validated config, the registry,
    the extraction settings hashes, the run's (probing) tasks and models, its results folder and its layout."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def extraction_hashes(self) -> Mapping[str, str]: ...
    @property
    def tasks(self) -> list[str]: ...
    @property
    def models(self) -> list[str]: ...
    @property
    def layout(self) -> PreparedTasks: ...
    def results_path(self, path: str) -> str: ...


class ZeroShotPlan:
    """The zero-shot tasks, models, scorers and every zero-shot path of one run plan (`run`)."""

    def __init__(self, run: ZeroShotNeeds) -> None:
        self._run = run

    # ---- what is scored --------------------------------------------------------------------------------------

    @property
    def tasks(self) -> list[str]:
        """The configured zero-shot task ids (config zeroshot.tasks), in config order; [] = no zero-shot stage."""
        return list(self._run.config["zeroshot"]["tasks"])

    @property
    def models(self) -> list[str]:
        """The models scored zero-shot: config zeroshot.models, else every model of the run."""
        chosen = self._run.config["zeroshot"]["models"]
        return list(self._run.models if chosen is None else chosen)

    def entry(self, zstask: str) -> CatalogueEntry:
        """The catalogue entry of `zstask` (config zeroshot.task_sheet). Raises ZeroShotCatalogueError naming the
        task and the catalogue's ids when it is not catalogued."""
        return catalogue_entry(self._run.config["zeroshot"]["task_sheet"], zstask)

    def scorers(self, model: str) -> list[str]:
        """The scorers of `model` (config zeroshot.scorers, else the registry's `scoring:`), in SCORER_OUTPUTS
        order."""
        chosen = self._run.config["zeroshot"]["scorers"]
        declared = list(resolved_scoring(self._scoring_entry(model)) if chosen is None else chosen)
        return [s for s in _SCORER_OUTPUTS if s in declared]

    def lm_head(self, model: str) -> str:
        """The model's language-model head (registry `lm_head`, else its family's default): masked, causal or none."""
        return resolved_lm_head(self._scoring_entry(model))

    def _scoring_entry(self, model: str) -> dict[str, Any]:
        spec = model_spec(self._run.registry, model)
        return {"family": spec.family, "lm_head": spec.lm_head, "scoring": spec.scoring}

    def check_config(self) -> None:
        """Raise ValueError listing every mistake of the config's zeroshot section at once: a task the catalogue
        lacks, a model the run does not configure, a background task the run does not prepare (its training split
        must be a prepared task of this run)."""
        run = self._run
        problems: list[str] = []
        for zstask in self.tasks:
            try:
                self.entry(zstask)
            except ZeroShotCatalogueError as err:
                problems.append(str(err))
        if run.config["zeroshot"]["models"] is not None:
            stray = [m for m in self.models if m not in run.models]
            if stray:
                problems.append(f"zeroshot.models {stray} are not models of this run (models: {run.models})")
        background = run.config["zeroshot"]["background"] or []
        unprepared = [t for t in background if t not in run.tasks]
        if unprepared:
            problems.append(
                f"zeroshot.background {unprepared} are not tasks of this run: a background is the training split of "
                f"a task the run prepares (tasks: {run.tasks})"
            )
        if problems:
            raise ValueError("config zeroshot section:\n  " + "\n  ".join(problems))

    # ---- tasks -----------------------------------------------------------------------------------------------

    def task_params(self, zstask: str, zthash: str | None = None) -> dict[str, Any]:
        """What decides a zero-shot task's rows (the build_zeroshot_task rerun key; its hash is the folder): the
        catalogue entry, and for a built task the build seed, the builder's version (from 2 on: a builder that now
        makes other rows from the same seed and files) and the content identity of each source task (the mirror's
        split files), for a fetched one the identity of its source's files. zthash: the `{zthash}` of the
        path asking (ValueError when it is not this config's)."""
        zs = self._run.config["zeroshot"]
        entry = self.entry(zstask)
        params: dict[str, Any] = {"entry": asdict(entry)}
        if entry.builder == SOURCE_BUILDER:
            params["source"] = zs["task_source"]
            params["source_identity"] = zeroshot_source_identity(zs["task_source"], zstask)
        else:
            # the sources' content, not where they are read from: the same files under another path are the same
            from geneb.zeroshot.build import BUILDERS

            build_source = self.build_source()
            params["seed"] = zs["build_seed"]
            builder = BUILDERS.get(entry.builder)
            if builder is not None and builder.version != 1:
                # a builder's version 1 adds no key: folders built before builders had versions keep their hash
                params["builder_version"] = builder.version
            params["source_identity"] = {t: source_identity(build_source, t) for t in entry.source_tasks}
        if zthash is not None:
            check_hash(f"zero-shot task {zstask}", zthash, params_hash(params))
        return params

    def build_source(self) -> str:
        """The mirror folder built tasks read their source tasks from (zeroshot.build_source, else task_source)."""
        config = self._run.config
        return str(config["zeroshot"]["build_source"] or resolve_source_string(config["task_source"]))

    def task_hash(self, zstask: str) -> str:
        """The 12-hex hash of `task_params(zstask)`: the `{zthash}` of every path derived from the task."""
        return params_hash(self.task_params(zstask))

    def task_dir(self, zstask: str) -> str:
        """The folder of the built or fetched zero-shot task."""
        return f"resources/zeroshot/tasks/{zstask}/{self.task_hash(zstask)}"

    def task_file(self, zstask: str, name: str = "rows.tsv") -> str:
        """rows.tsv or meta.json of the zero-shot task's folder."""
        if name not in ("rows.tsv", "meta.json"):
            raise ValueError(f"{name!r} is not a zero-shot task file (rows.tsv, meta.json)")
        return f"{self.task_dir(zstask)}/{name}"

    # ---- model scores ----------------------------------------------------------------------------------------

    def score_params(self, model: str, shash: str | None = None) -> dict[str, Any]:
        """What decides one model's zero-shot scores beyond the task: its extraction settings hash (the weights,
        tokenizer, pooling and policies the embeddings are keyed on), its scorers, its language-model head and the
        score file's version (the score_zeroshot rerun key; shash: the `{shash}` of the path asking, checked)."""
        params = {
            "settings_hash": self._run.extraction_hashes[model],
            "scorers": self.scorers(model),
            "lm_head": self.lm_head(model),
            "version": SCORE_FILE_VERSION,
        }
        if shash is not None:
            check_hash(f"zero-shot scorers of {model}", shash, params_hash(params))
        return params

    def score_file(self, model: str, zstask: str) -> str:
        """The per-row scores of (model, zero-shot task) under this config's settings and scorers."""
        xhash = self._run.extraction_hashes[model]
        shash = params_hash(self.score_params(model))
        return f"resources/zeroshot/scores/{model}/{xhash}/{zstask}/{self.task_hash(zstask)}-{shash}.parquet"

    # ---- baselines -------------------------------------------------------------------------------------------

    def background(self, zstask: str) -> list[str]:
        """The probing tasks whose training splits fit the Markov baselines of `zstask`: config
        zeroshot.background (else the run's tasks) without the zero-shot task's own source tasks."""
        chosen = self._run.config["zeroshot"]["background"]
        excluded = set(self.entry(zstask).source_tasks) | {zstask}
        return [t for t in (self._run.tasks if chosen is None else chosen) if t not in excluded]

    def baseline_params(self, zstask: str, bhash: str | None = None) -> dict[str, Any]:
        """The Markov baselines' rerun key: orders, pseudocount, {background task: its preparation hash} and the
        k of the content check that leaves out background sequences sharing a k-mer with the task."""
        zs = self._run.config["zeroshot"]
        params = {
            "orders": list(zs["markov_orders"]),
            "pseudocount": zs["pseudocount"],
            "background": {t: self._run.layout.task_hash(t) for t in self.background(zstask)},
            # background sequences sharing a k-mer with the task are left out (geneb.zeroshot.overlap)
            "content_check_k": OVERLAP_K,
        }
        if bhash is not None:
            check_hash(f"zero-shot baselines of {zstask}", bhash, params_hash(params))
        return params

    def baseline_file(self, zstask: str) -> str:
        """The Markov baselines' per-row scores of one zero-shot task."""
        bhash = params_hash(self.baseline_params(zstask))
        return f"resources/zeroshot/baselines/{zstask}/{self.task_hash(zstask)}-{bhash}.parquet"

    def baseline_inputs(self, zstask: str) -> dict[str, Any]:
        """The zero-shot task's rows and the training split of every background task."""
        return {
            "rows": self.task_file(zstask),
            "background": [self._run.layout.task_file(t, "train.parquet") for t in self.background(zstask)],
        }

    # ---- tables ----------------------------------------------------------------------------------------------

    def score_files(self) -> list[str]:
        """Every (model, zero-shot task) score file, models outer."""
        return [self.score_file(m, t) for m in self.models for t in self.tasks]

    def baseline_files(self) -> list[str]:
        """The baseline file of every zero-shot task ([] when config zeroshot.markov_orders is empty)."""
        if not self._run.config["zeroshot"]["markov_orders"]:
            return []
        return [self.baseline_file(t) for t in self.tasks]

    def table_inputs(self) -> dict[str, Any]:
        """Everything the zeroshot_tables rule reads: the tasks' rows, the score and baseline files and the probe
        leaderboard (the zero-shot-vs-probe rank correlation)."""
        return {
            "rows": [self.task_file(t) for t in self.tasks],
            "scores": self.score_files(),
            "baselines": self.baseline_files(),
            "leaderboard": self._run.results_path("tables/leaderboard.parquet"),
        }

    def table_params(self) -> dict[str, Any]:
        """The zeroshot_tables rerun key: the bootstrap, the configured tasks and models (the tables' scope) and
        {twin: its model} of the scored random-init twins (the leaderboard sets each model beside its twin)."""
        zs = self._run.config["zeroshot"]
        twins = {m: str(spec.twin["of"]) for m in self.models if (spec := model_spec(self._run.registry, m)).twin}
        return {"bootstrap": dict(zs["bootstrap"]), "tasks": self.tasks, "models": self.models, "twins": twins}

    def outputs(self) -> list[str]:
        """The zero-shot tables and figure under results_dir ([] without a zero-shot stage)."""
        if not self.tasks:
            return []
        return [
            *(self._run.results_path(f"tables/{t}.parquet") for t in _ZEROSHOT_TABLES),
            self._run.results_path(_ZEROSHOT_FIGURE),
        ]

    def report_inputs(self) -> list[str]:
        """The report rule's zero-shot inputs, in `ZEROSHOT_REPORT_INPUTS` order: the leaderboard,
        the rank correlation, the not-applicable list and the figure; [] without a zero-shot stage."""
        if not self.tasks:
            return []
        return [
            self._run.results_path(_ZEROSHOT_FIGURE if key == "zeroshot_figure" else f"tables/{key}.parquet")
            for key in ZEROSHOT_REPORT_INPUTS
        ]

    def trusted_files(self) -> list[str]:
        """The zero-shot files a later step reads back (written with content digests): scores, baselines, tables."""
        if not self.tasks:
            return []
        tables = [self._run.results_path(f"tables/{t}.parquet") for t in _ZEROSHOT_TABLES]
        return [*self.score_files(), *self.baseline_files(), *tables]
