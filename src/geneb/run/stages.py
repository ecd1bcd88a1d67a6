"""The zero-shot and fine-tuning stages' parts of the run plan.

The zero-shot stage's part of the run plan, as `RunPlan` methods (its base class): which zero-shot tasks and
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

The fine-tuning stage's part of the run plan, as `RunPlan` methods (a base class): which models the
`finetune-lora` protocol covers and why the others are skipped, each job's inputs, rerun key and cluster resources,
and the plan-time refusal of a model too large for the configured device (docs/protocols.md, "finetune-lora").

One job per (model, task) writes `{results_dir}/probes/finetune-lora/{model}/{task}.parquet` (and its predictions),
beside the probe tables, so aggregation reads it like any probe table. The shot draws are the `shots_from` probe
protocol's own file (`shot_file` maps the protocol), so every cell trains on the probe's rows.

Torch-free (planning runs in every job process).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from geneb.core.provenance import check_hash, params_hash
from geneb.finetune.recipe import FINETUNE_PROTOCOL, RecipeConfigError, from_config
from geneb.registry.families import resolved_lm_head, resolved_scoring
from geneb.registry.registry import Registry, model_spec
from geneb.registry.spec import model_depth
from geneb.tasks.sources import resolve_source_string, source_identity
from geneb.zeroshot.tables import ZEROSHOT_REPORT_INPUTS
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

#: the zero-shot tables under results_dir/tables (`RunPlan.zeroshot_outputs`)
_ZEROSHOT_TABLES = (
    "zeroshot_scores",
    "zeroshot_row_scores",
    "zeroshot_leaderboard",
    "zeroshot_vs_probe",
    "zeroshot_not_applicable",
)
_ZEROSHOT_FIGURE = "figures/zeroshot.png"


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
        return [s for s in _SCORER_OUTPUTS if s in declared]

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
            *(self.results_path(f"tables/{t}.parquet") for t in _ZEROSHOT_TABLES),
            self.results_path(_ZEROSHOT_FIGURE),
        ]

    def zeroshot_report_inputs(self) -> list[str]:
        """The report rule's zero-shot inputs, in `geneb.zeroshot.tables.ZEROSHOT_REPORT_INPUTS` order: the leaderboard,
        the rank correlation, the not-applicable list and the figure; [] without a zero-shot stage."""
        if not self.zeroshot_tasks:
            return []
        return [
            self.results_path(_ZEROSHOT_FIGURE if key == "zeroshot_figure" else f"tables/{key}.parquet")
            for key in ZEROSHOT_REPORT_INPUTS
        ]

    def zeroshot_trusted_files(self) -> list[str]:
        """The zero-shot files a later step reads back (written with content digests): scores, baselines, tables."""
        if not self.zeroshot_tasks:
            return []
        tables = [self.results_path(f"tables/{t}.parquet") for t in _ZEROSHOT_TABLES]
        return [*self.zeroshot_score_files(), *self.zeroshot_baseline_files(), *tables]


#: families whose adapter is a token-level torch network (`geneb.encoders.engine.tokenmodel.TokenModelEncoder`)
_TOKEN_FAMILIES = frozenset(
    {
        "random-init",
        "hf-encoder",
        "hf-decoder",
        "hf-ssm",
        "hyena",
        "caduceus",
        "biofm",
        "gpn",
        "genomics-fm",
        "deepgene",
        "dnagpt",
        "lucaone",
    }
)
#: memory estimate (`finetune_memory_mb`): bytes per parameter for fp32 weights, their gradients and AdamW's two
#: moments when every weight trains (an upper bound for LoRA, which trains a small fraction), plus activations
#: per token of a batch held for the backward pass, per million parameters (a transformer's activations scale
#: with width x depth, which grow with the parameter count), plus the process's fixed overhead. A conservative
#: rule of thumb (Rajbhandari et al. 2020, ZeRO, section 3: 16 bytes per parameter for mixed-precision Adam).
_BYTES_PER_PARAM = 16
_ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM = 2048
_OVERHEAD_MB = 1024
#: the parameter count assumed for a model whose registry entry gives none (or 0: random-init's nominal count)
_DEFAULT_PARAMS = 1_000_000


class FineTunePlan:
    """Mixed into `geneb.run.plan.RunPlan` before `ResourceLayout`: the finetune-lora protocol's plan."""

    if TYPE_CHECKING:
        config: dict[str, Any]
        registry: Registry
        extraction_settings: Mapping[str, dict[str, Any]]
        extraction_hashes: Mapping[str, str]

        @property
        def tasks(self) -> list[str]: ...
        @property
        def models(self) -> list[str]: ...
        def results_path(self, path: str) -> str: ...
        def task_inputs(self, task: str) -> dict[str, str]: ...
        def audit_file(self, task: str) -> str: ...

    @property
    def finetune_on(self) -> bool:
        """Whether `finetune-lora` is among the configured protocols."""
        return FINETUNE_PROTOCOL in self.config["protocols"]

    def shot_protocol(self, protocol: str) -> str:
        """The protocol whose shot file `protocol` reads: itself, or finetune-lora's `shots_from`."""
        if protocol == FINETUNE_PROTOCOL:
            return str(self.config["finetune"][FINETUNE_PROTOCOL]["shots_from"])
        return protocol

    def shot_file(self, protocol: str, task: str) -> str:
        """`ResourceLayout.shot_file` of the protocol whose draws `protocol` uses (`shot_protocol`)."""
        return super().shot_file(self.shot_protocol(protocol), task)  # type: ignore[misc]

    def finetune_skip_reason(self, model: str) -> str | None:
        """Why `model` cannot be fine-tuned (None when it can): no torch network (k-mer spectra, shortcut
        features, precomputed vectors, python entries), or an adapter that is not a token-level network."""
        settings = self.extraction_settings[model]
        fam = str(settings["family"])
        if fam not in _TOKEN_FAMILIES:
            uses_torch = fam in ("enformer", "space", "evo", "evo2")
            what = "its adapter is not a token-level network" if uses_torch else "it has no torch network"
            return f"{FINETUNE_PROTOCOL}: skipped, {what} (family {fam})"
        return None

    def finetune_applies(self, protocol: str, model: str) -> bool:
        """Whether the (protocol, model) cell exists: always for a probe protocol, for finetune-lora when the
        model can be fine-tuned."""
        return protocol != FINETUNE_PROTOCOL or self.finetune_skip_reason(model) is None

    def protocol_cells(self, tasks: list[str]) -> Iterator[tuple[str, str, str]]:
        """Every (protocol, model, task) of the run's protocols x models x `tasks` (Snakemake's `expand` order)
        whose cell exists (`finetune_applies`)."""
        every = itertools.product(self.config["protocols"], self.models, tasks)
        return (c for c in every if self.finetune_applies(c[0], c[1]))

    def finetune_coverage(self) -> dict[str, str]:
        """{model: reason} of the configured models finetune-lora skips ({} when the protocol is off): the
        leaderboard's coverage notes."""
        if not self.finetune_on:
            return {}
        return {m: r for m in self.models if (r := self.finetune_skip_reason(m)) is not None}

    def finetune_inputs(self, model: str, task: str) -> dict[str, str]:
        """Every file one finetune_lora job reads: the task's splits and card, the shot file, the audit."""
        return {
            **self.task_inputs(task),
            "shots": self.shot_file(FINETUNE_PROTOCOL, task),
            "audit": self.audit_file(task),
        }

    def finetune_params(self, model: str) -> dict[str, Any]:
        """The finetune_lora rerun key of `model`: the recipe, the shots_from probe settings, the model's resolved
        extraction settings and their hash, its block count, and keep_adapter."""
        section = self.config["finetune"]
        recipe = section[FINETUNE_PROTOCOL]
        return {
            "recipe": recipe,
            "probe": self.config["probe"][recipe["shots_from"]],
            "extraction": self.extraction_settings[model],
            "settings_hash": self.extraction_hashes[model],
            "n_layers": model_depth(self.extraction_settings[model]),
            "keep_adapter": bool(section["keep_adapter"]),
        }

    def _params(self, model: str) -> int:
        raw = self.registry.raw["models"].get(model, {}).get("params")
        return int(raw) if isinstance(raw, (int, float)) and raw > 0 else _DEFAULT_PARAMS

    def finetune_memory_mb(self, model: str) -> int:
        """Estimated peak memory (MB) of one fine-tune job of `model`: BYTES_PER_PARAM x parameters, plus
        ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM x batch tokens (batch_size x the model's max_tokens) x millions of
        parameters, plus OVERHEAD_MB. params: the registry entry's `params` (DEFAULT_PARAMS when absent or 0)."""
        params = self._params(model)
        ext = self.extraction_settings[model].get("extraction", {})
        tokens = int(ext.get("max_tokens") or 512) * int(self.config["finetune"][FINETUNE_PROTOCOL]["batch_size"])
        mb = (_BYTES_PER_PARAM * params + _ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM * tokens * params / 1e6) / 2**20
        return int(math.ceil(mb + _OVERHEAD_MB))

    def finetune_mem_mb(self, model: str, attempt: int) -> int:
        """Host memory (MB) of one fine-tune job (Slurm mem_mb): `finetune_memory_mb`, doubled per retry attempt.
        The GPU itself comes from the model's extraction request (`extraction_gpus` / `extraction_gres` /
        `extraction_partition`): a fine-tune job wants a GPU exactly where its extraction does."""
        return self.finetune_memory_mb(model) * 2 ** (attempt - 1)

    def finetune_runtime(self, model: str, attempt: int) -> int:
        """Minutes of one fine-tune job (Slurm runtime): 30 per million parameters, at least 60, doubled per
        retry attempt."""
        params = self._params(model)
        return int(max(60, 30 * params / 1e6) * 2 ** (attempt - 1))

    def finetune_tables(self, kind: str = "probes") -> list[str]:
        """The finetune-lora tables (kind probes or predictions) of every fine-tunable model x task."""
        if not self.finetune_on:
            return []
        return [
            self.results_path(f"{kind}/{FINETUNE_PROTOCOL}/{m}/{t}.parquet")
            for m in self.models
            if self.finetune_skip_reason(m) is None
            for t in self.tasks
        ]

    def __post_init__(self) -> None:
        """`check_finetune_config` whenever a plan with extraction settings is made (`geneb.run.plan.plan_run`)."""
        if self.extraction_settings:
            self.check_finetune_config()

    def check_finetune_config(self) -> None:
        """With finetune-lora configured: its settings present and valid (`geneb.finetune.recipe.from_config`),
        shots_from among the run's probe protocols, and every fine-tunable model's memory estimate within
        finetune.device_memory_mb. Raises ValueError naming the setting, or the model with its estimate. The
        models the protocol skips, with the reason (`finetune_coverage`), are the leaderboard's coverage notes
        (`geneb.tables.scores.COVERAGE_NOTES_ATTR`, `geneb leaderboard`)."""
        if not self.finetune_on:
            return
        section = self.config["finetune"]
        if FINETUNE_PROTOCOL not in section:
            raise ValueError(f"protocols lists {FINETUNE_PROTOCOL} but config finetune.{FINETUNE_PROTOCOL} is missing")
        recipe = section[FINETUNE_PROTOCOL]
        if recipe["shots_from"] not in self.config["protocols"]:
            raise ValueError(
                f"finetune.{FINETUNE_PROTOCOL}.shots_from {recipe['shots_from']!r} is not in protocols "
                f"{self.config['protocols']}: its shot draws are the fine-tune cells' rows"
            )
        try:
            from_config(recipe, self.config["probe"][recipe["shots_from"]])
        except RecipeConfigError as err:
            raise ValueError(f"config finetune: {err}") from err
        limit = int(section["device_memory_mb"])
        for m in self.models:
            if self.finetune_skip_reason(m) is None and (need := self.finetune_memory_mb(m)) > limit:
                raise ValueError(
                    f"model {m}: {FINETUNE_PROTOCOL} needs about {need} MB (estimate: geneb.run.stages), "
                    f"more than finetune.device_memory_mb {limit}; remove it from the run or raise the limit"
                )
