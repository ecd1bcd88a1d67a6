"""The zero-shot stage's part of the run plan, as `RunPlan` methods (its base class): which zero-shot tasks and
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

Torch-free (planning runs in every job process).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from geneb.registry.families import resolved_lm_head, resolved_scoring
from geneb.registry.registry import Registry, model_spec
from geneb.run.layout import check_hash, params_hash
from geneb.tasks.sources import resolve_source_string, source_identity
from geneb.zeroshot.catalogue import SOURCE_BUILDER, CatalogueEntry, ZeroShotCatalogueError, catalogue_entry
from geneb.zeroshot.scores import EMBEDDING_SCORERS, LLR, SCORE_FILE_VERSION, markov_scorer
from geneb.zeroshot.sources import zeroshot_source_identity
from geneb.zeroshot.tables import ZEROSHOT_REPORT_INPUTS

#: the config's scorer names -> the scorer columns they produce (geneb.zeroshot.scores)
SCORER_OUTPUTS: Mapping[str, tuple[str, ...]] = {LLR: (LLR,), "embedding": EMBEDDING_SCORERS}

#: the zero-shot tables under results_dir/tables (`RunPlan.zeroshot_outputs`)
ZEROSHOT_TABLES = (
    "zeroshot_scores",
    "zeroshot_row_scores",
    "zeroshot_leaderboard",
    "zeroshot_vs_probe",
    "zeroshot_not_applicable",
)
ZEROSHOT_FIGURE = "figures/zeroshot.png"


class ZeroShotPlan:
    """Mixed into `geneb.run.plan.RunPlan`: the zero-shot tasks, models, scorers and every zero-shot path."""

    if TYPE_CHECKING:
        config: dict[str, Any]
        registry: Registry
        extraction_hashes: Mapping[str, str]

        @property
        def tasks(self) -> list[str]: ...
        @property
        def models(self) -> list[str]: ...
        def results_path(self, path: str) -> str: ...
        def task_hash(self, task: str) -> str: ...
        def task_file(self, task: str, name: str) -> str: ...

    # ---- what is scored --------------------------------------------------------------------------------------

    @property
    def zeroshot_tasks(self) -> list[str]:
        """The configured zero-shot task ids (config zeroshot.tasks), in config order; [] = no zero-shot stage."""
        return list(self.config["zeroshot"]["tasks"])

    @property
    def zeroshot_models(self) -> list[str]:
        """The models scored zero-shot: config zeroshot.models, else every model of the run."""
        chosen = self.config["zeroshot"]["models"]
        return list(self.models if chosen is None else chosen)

    def zeroshot_entry(self, zstask: str) -> CatalogueEntry:
        """The catalogue entry of `zstask` (config zeroshot.task_sheet). Raises ZeroShotCatalogueError naming the
        task and the catalogue's ids when it is not catalogued."""
        return catalogue_entry(self.config["zeroshot"]["task_sheet"], zstask)

    def zeroshot_scorers(self, model: str) -> list[str]:
        """The scorers of `model` (config zeroshot.scorers, else the registry's `scoring:`), in SCORER_OUTPUTS
        order."""
        chosen = self.config["zeroshot"]["scorers"]
        declared = list(resolved_scoring(self._scoring_entry(model)) if chosen is None else chosen)
        return [s for s in SCORER_OUTPUTS if s in declared]

    def zeroshot_lm_head(self, model: str) -> str:
        """The model's language-model head (registry `lm_head`, else its family's default): masked, causal or none."""
        return resolved_lm_head(self._scoring_entry(model))

    def _scoring_entry(self, model: str) -> dict[str, Any]:
        spec = model_spec(self.registry, model)
        return {"family": spec.family, "lm_head": spec.lm_head, "scoring": spec.scoring}

    def check_zeroshot_config(self) -> None:
        """Raise ValueError listing every mistake of the config's zeroshot section at once: a task the catalogue
        lacks, a model the run does not configure, a background task the run does not prepare (its training split
        must be a prepared task of this run)."""
        problems: list[str] = []
        for zstask in self.zeroshot_tasks:
            try:
                self.zeroshot_entry(zstask)
            except ZeroShotCatalogueError as err:
                problems.append(str(err))
        if self.config["zeroshot"]["models"] is not None:
            stray = [m for m in self.zeroshot_models if m not in self.models]
            if stray:
                problems.append(f"zeroshot.models {stray} are not models of this run (models: {self.models})")
        background = self.config["zeroshot"]["background"] or []
        unprepared = [t for t in background if t not in self.tasks]
        if unprepared:
            problems.append(
                f"zeroshot.background {unprepared} are not tasks of this run: a background is the training split of "
                f"a task the run prepares (tasks: {self.tasks})"
            )
        if problems:
            raise ValueError("config zeroshot section:\n  " + "\n  ".join(problems))

    # ---- tasks -----------------------------------------------------------------------------------------------

    def zeroshot_task_params(self, zstask: str, zthash: str | None = None) -> dict[str, Any]:
        """What decides a zero-shot task's rows (the build_zeroshot_task rerun key; its hash is the folder): the
        catalogue entry, and for a built task the build seed and the content identity of each source task (the
        mirror's split files), for a fetched one the identity of its source's files. zthash: the `{zthash}` of the
        path asking (ValueError when it is not this config's)."""
        zs = self.config["zeroshot"]
        entry = self.zeroshot_entry(zstask)
        params: dict[str, Any] = {"entry": asdict(entry)}
        if entry.builder == SOURCE_BUILDER:
            params["source"] = zs["task_source"]
            params["source_identity"] = zeroshot_source_identity(zs["task_source"], zstask)
        else:
            # the sources' content, not where they are read from: the same files under another path are the same
            build_source = self.zeroshot_build_source()
            params["seed"] = zs["build_seed"]
            params["source_identity"] = {t: source_identity(build_source, t) for t in entry.source_tasks}
        if zthash is not None:
            check_hash(f"zero-shot task {zstask}", zthash, params_hash(params))
        return params

    def zeroshot_build_source(self) -> str:
        """The mirror folder built tasks read their source tasks from (zeroshot.build_source, else task_source)."""
        zs = self.config["zeroshot"]
        return str(zs["build_source"] or resolve_source_string(self.config["task_source"]))

    def zeroshot_task_hash(self, zstask: str) -> str:
        """The 12-hex hash of `zeroshot_task_params(zstask)`: the `{zthash}` of every path derived from the task."""
        return params_hash(self.zeroshot_task_params(zstask))

    def zeroshot_task_dir(self, zstask: str) -> str:
        """The folder of the built or fetched zero-shot task."""
        return f"resources/zeroshot/tasks/{zstask}/{self.zeroshot_task_hash(zstask)}"

    def zeroshot_task_file(self, zstask: str, name: str = "rows.tsv") -> str:
        """rows.tsv or meta.json of the zero-shot task's folder."""
        if name not in ("rows.tsv", "meta.json"):
            raise ValueError(f"{name!r} is not a zero-shot task file (rows.tsv, meta.json)")
        return f"{self.zeroshot_task_dir(zstask)}/{name}"

    # ---- model scores ----------------------------------------------------------------------------------------

    def zeroshot_score_params(self, model: str, shash: str | None = None) -> dict[str, Any]:
        """What decides one model's zero-shot scores beyond the task: its extraction settings hash (the weights,
        tokenizer, pooling and policies the embeddings are keyed on), its scorers, its language-model head and the
        score file's version (the score_zeroshot rerun key; shash: the `{shash}` of the path asking, checked)."""
        params = {
            "settings_hash": self.extraction_hashes[model],
            "scorers": self.zeroshot_scorers(model),
            "lm_head": self.zeroshot_lm_head(model),
            "version": SCORE_FILE_VERSION,
        }
        if shash is not None:
            check_hash(f"zero-shot scorers of {model}", shash, params_hash(params))
        return params

    def zeroshot_score_file(self, model: str, zstask: str) -> str:
        """The per-row scores of (model, zero-shot task) under this config's settings and scorers."""
        xhash = self.extraction_hashes[model]
        shash = params_hash(self.zeroshot_score_params(model))
        return f"resources/zeroshot/scores/{model}/{xhash}/{zstask}/{self.zeroshot_task_hash(zstask)}-{shash}.parquet"

    # ---- baselines -------------------------------------------------------------------------------------------

    def zeroshot_background(self, zstask: str) -> list[str]:
        """The probing tasks whose training splits fit the Markov baselines of `zstask`: config
        zeroshot.background (else the run's tasks) without the zero-shot task's own source tasks."""
        chosen = self.config["zeroshot"]["background"]
        excluded = set(self.zeroshot_entry(zstask).source_tasks) | {zstask}
        return [t for t in (self.tasks if chosen is None else chosen) if t not in excluded]

    def zeroshot_baseline_params(self, zstask: str, bhash: str | None = None) -> dict[str, Any]:
        """The Markov baselines' rerun key: orders, pseudocount and {background task: its preparation hash}."""
        zs = self.config["zeroshot"]
        params = {
            "orders": list(zs["markov_orders"]),
            "pseudocount": zs["pseudocount"],
            "background": {t: self.task_hash(t) for t in self.zeroshot_background(zstask)},
        }
        if bhash is not None:
            check_hash(f"zero-shot baselines of {zstask}", bhash, params_hash(params))
        return params

    def zeroshot_baseline_file(self, zstask: str) -> str:
        """The Markov baselines' per-row scores of one zero-shot task."""
        bhash = params_hash(self.zeroshot_baseline_params(zstask))
        return f"resources/zeroshot/baselines/{zstask}/{self.zeroshot_task_hash(zstask)}-{bhash}.parquet"

    def zeroshot_baseline_inputs(self, zstask: str) -> dict[str, Any]:
        """The zero-shot task's rows and the training split of every background task."""
        return {
            "rows": self.zeroshot_task_file(zstask),
            "background": [self.task_file(t, "train.parquet") for t in self.zeroshot_background(zstask)],
        }

    def zeroshot_baseline_scorers(self) -> list[str]:
        """The baseline scorer names (markov-<order>) of this config."""
        return [markov_scorer(o) for o in self.config["zeroshot"]["markov_orders"]]

    # ---- tables ----------------------------------------------------------------------------------------------

    def zeroshot_score_files(self) -> list[str]:
        """Every (model, zero-shot task) score file, models outer."""
        return [self.zeroshot_score_file(m, t) for m in self.zeroshot_models for t in self.zeroshot_tasks]

    def zeroshot_baseline_files(self) -> list[str]:
        """The baseline file of every zero-shot task ([] when config zeroshot.markov_orders is empty)."""
        if not self.config["zeroshot"]["markov_orders"]:
            return []
        return [self.zeroshot_baseline_file(t) for t in self.zeroshot_tasks]

    def zeroshot_table_inputs(self) -> dict[str, Any]:
        """Everything the zeroshot_tables rule reads: the tasks' rows, the score and baseline files and the probe
        leaderboard (the zero-shot-vs-probe rank correlation)."""
        return {
            "rows": [self.zeroshot_task_file(t) for t in self.zeroshot_tasks],
            "scores": self.zeroshot_score_files(),
            "baselines": self.zeroshot_baseline_files(),
            "leaderboard": self.results_path("tables/leaderboard.parquet"),
        }

    def zeroshot_table_params(self) -> dict[str, Any]:
        """The zeroshot_tables rerun key: the bootstrap and the configured tasks and models (the tables' scope)."""
        zs = self.config["zeroshot"]
        return {"bootstrap": dict(zs["bootstrap"]), "tasks": self.zeroshot_tasks, "models": self.zeroshot_models}

    def zeroshot_outputs(self) -> list[str]:
        """The zero-shot tables and figure under results_dir ([] without a zero-shot stage)."""
        if not self.zeroshot_tasks:
            return []
        return [
            *(self.results_path(f"tables/{t}.parquet") for t in ZEROSHOT_TABLES),
            self.results_path(ZEROSHOT_FIGURE),
        ]

    def zeroshot_report_inputs(self) -> list[str]:
        """The report rule's zero-shot inputs, in `geneb.zeroshot.tables.ZEROSHOT_REPORT_INPUTS` order: the leaderboard,
        the rank correlation, the not-applicable list and the figure; [] without a zero-shot stage."""
        if not self.zeroshot_tasks:
            return []
        return [
            self.results_path(ZEROSHOT_FIGURE if key == "zeroshot_figure" else f"tables/{key}.parquet")
            for key in ZEROSHOT_REPORT_INPUTS
        ]

    def zeroshot_trusted_files(self) -> list[str]:
        """The zero-shot files a later step reads back (written with content digests): scores, baselines, tables."""
        if not self.zeroshot_tasks:
            return []
        tables = [self.results_path(f"tables/{t}.parquet") for t in ZEROSHOT_TABLES]
        return [*self.zeroshot_score_files(), *self.zeroshot_baseline_files(), *tables]
