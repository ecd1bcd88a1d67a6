"""The fine-tuning stage's part of the run plan (`geneb.run.plan.RunPlan.finetune`): which models the
`finetune-lora` protocol covers and why the others are skipped, each job's inputs, rerun key and cluster resources,
and the plan-time refusal of a model too large for the configured device (docs/protocols.md, "finetune-lora").

One job per (model, task) writes `{results_dir}/probes/finetune-lora/{model}/{task}.parquet` (and its predictions),
beside the probe tables, so aggregation reads it like any probe table. The shot draws are the `shots_from` probe
protocol's own file (`FineTunePlan.shot_protocol` maps the protocol; the run's layout follows it,
`geneb.run.layout.ResourceLayout.shot_file`), so every cell trains on the probe's rows.

What it reads of the run plan is `FineTuneNeeds` (the plan passes itself). Torch-free (planning runs in every job
process).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from geneb.finetune.recipe import FINETUNE_PROTOCOL, RecipeConfigError, from_config
from geneb.registry.registry import Registry
from geneb.registry.spec import model_depth

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
#: memory estimate (`FineTunePlan.memory_mb`): bytes per parameter for fp32 weights, their gradients and AdamW's two
#: moments when every weight trains (an upper bound for LoRA, which trains a small fraction), plus activations
#: per token of a batch held for the backward pass, per million parameters (a transformer's activations scale
#: with width x depth, which grow with the parameter count), plus the process's fixed overhead. A conservative
#: rule of thumb (Rajbhandari et al. 2020, ZeRO, section 3: 16 bytes per parameter for mixed-precision Adam).
_BYTES_PER_PARAM = 16
_ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM = 2048
_OVERHEAD_MB = 1024
#: the parameter count assumed for a model whose registry entry gives none (or 0: random-init's nominal count)
_DEFAULT_PARAMS = 1_000_000


class CellFiles(Protocol):
    """The prepared files a fine-tune cell reads (the run's `geneb.run.layout.ResourceLayout`): the task's splits
    and card, the shot draws, the audit."""

    def task_inputs(self, task: str) -> dict[str, str]: ...

    def shot_file(self, protocol: str, task: str) -> str: ...

    def audit_file(self, task: str) -> str: ...


class FineTuneNeeds(Protocol):
    """What `FineTunePlan` reads of the run plan (`geneb.run.plan.RunPlan`): the validated config, the registry,
    the extraction settings and their hashes, the run's tasks and models, its results folder and its layout."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def registry(self) -> Registry: ...
    @property
    def extraction_settings(self) -> Mapping[str, dict[str, Any]]: ...
    @property
    def extraction_hashes(self) -> Mapping[str, str]: ...
    @property
    def tasks(self) -> list[str]: ...
    @property
    def models(self) -> list[str]: ...
    @property
    def layout(self) -> CellFiles: ...
    def results_path(self, path: str) -> str: ...


class FineTunePlan:
    """The finetune-lora protocol's plan of one run plan (`run`)."""

    def __init__(self, run: FineTuneNeeds) -> None:
        self._run = run

    @property
    def on(self) -> bool:
        """Whether `finetune-lora` is among the configured protocols."""
        return FINETUNE_PROTOCOL in self._run.config["protocols"]

    def shot_protocol(self, protocol: str) -> str:
        """The protocol whose shot file `protocol` reads: itself, or finetune-lora's `shots_from`."""
        if protocol == FINETUNE_PROTOCOL:
            return str(self._run.config["finetune"][FINETUNE_PROTOCOL]["shots_from"])
        return protocol

    def skip_reason(self, model: str) -> str | None:
        """Why `model` cannot be fine-tuned (None when it can): no torch network (k-mer spectra, shortcut
        features, precomputed vectors, python entries), or an adapter that is not a token-level network."""
        settings = self._run.extraction_settings[model]
        fam = str(settings["family"])
        if fam not in _TOKEN_FAMILIES:
            uses_torch = fam in ("enformer", "space", "evo", "evo2")
            what = "its adapter is not a token-level network" if uses_torch else "it has no torch network"
            return f"{FINETUNE_PROTOCOL}: skipped, {what} (family {fam})"
        return None

    def applies(self, protocol: str, model: str) -> bool:
        """Whether the (protocol, model) cell exists: always for a probe protocol, for finetune-lora when the
        model can be fine-tuned."""
        return protocol != FINETUNE_PROTOCOL or self.skip_reason(model) is None

    def protocol_cells(self, tasks: list[str]) -> Iterator[tuple[str, str, str]]:
        """Every (protocol, model, task) of the run's protocols x models x `tasks` (Snakemake's `expand` order)
        whose cell exists (`applies`)."""
        every = itertools.product(self._run.config["protocols"], self._run.models, tasks)
        return (c for c in every if self.applies(c[0], c[1]))

    def coverage(self) -> dict[str, str]:
        """{model: reason} of the configured models finetune-lora skips ({} when the protocol is off): the
        leaderboard's coverage notes."""
        if not self.on:
            return {}
        return {m: r for m in self._run.models if (r := self.skip_reason(m)) is not None}

    def inputs(self, model: str, task: str) -> dict[str, str]:
        """Every file one finetune_lora job reads: the task's splits and card, the shot file, the audit."""
        layout = self._run.layout
        return {
            **layout.task_inputs(task),
            "shots": layout.shot_file(FINETUNE_PROTOCOL, task),
            "audit": layout.audit_file(task),
        }

    def params(self, model: str) -> dict[str, Any]:
        """The finetune_lora rerun key of `model`: the recipe, the shots_from probe settings, the model's resolved
        extraction settings and their hash, its block count, and keep_adapter."""
        config = self._run.config
        section = config["finetune"]
        recipe = section[FINETUNE_PROTOCOL]
        return {
            "recipe": recipe,
            "probe": config["probe"][recipe["shots_from"]],
            "extraction": self._run.extraction_settings[model],
            "settings_hash": self._run.extraction_hashes[model],
            "n_layers": model_depth(self._run.extraction_settings[model]),
            "keep_adapter": bool(section["keep_adapter"]),
        }

    def _n_params(self, model: str) -> int:
        raw = self._run.registry.raw["models"].get(model, {}).get("params")
        return int(raw) if isinstance(raw, (int, float)) and raw > 0 else _DEFAULT_PARAMS

    def memory_mb(self, model: str) -> int:
        """Estimated peak memory (MB) of one fine-tune job of `model`: BYTES_PER_PARAM x parameters, plus
        ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM x batch tokens (batch_size x the model's max_tokens) x millions of
        parameters, plus OVERHEAD_MB. params: the registry entry's `params` (DEFAULT_PARAMS when absent or 0)."""
        params = self._n_params(model)
        ext = self._run.extraction_settings[model].get("extraction", {})
        batch_size = int(self._run.config["finetune"][FINETUNE_PROTOCOL]["batch_size"])
        tokens = int(ext.get("max_tokens") or 512) * batch_size
        mb = (_BYTES_PER_PARAM * params + _ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM * tokens * params / 1e6) / 2**20
        return int(math.ceil(mb + _OVERHEAD_MB))

    def mem_mb(self, model: str, attempt: int) -> int:
        """Host memory (MB) of one fine-tune job (Slurm mem_mb): `memory_mb`, doubled per retry attempt. The GPU
        itself comes from the model's extraction request (`geneb.run.layout.ExtractionResources`: extraction_gpus,
        extraction_gres, extraction_partition): a fine-tune job wants a GPU exactly where its extraction does."""
        return self.memory_mb(model) * 2 ** (attempt - 1)

    def runtime(self, model: str, attempt: int) -> int:
        """Minutes of one fine-tune job (Slurm runtime): 30 per million parameters, at least 60, doubled per
        retry attempt."""
        params = self._n_params(model)
        return int(max(60, 30 * params / 1e6) * 2 ** (attempt - 1))

    def tables(self, kind: str = "probes") -> list[str]:
        """The finetune-lora tables (kind probes or predictions) of every fine-tunable model x task."""
        if not self.on:
            return []
        return [
            self._run.results_path(f"{kind}/{FINETUNE_PROTOCOL}/{m}/{t}.parquet")
            for m in self._run.models
            if self.skip_reason(m) is None
            for t in self._run.tasks
        ]

    def check_config(self) -> None:
        """With finetune-lora configured: its settings present and valid (`geneb.finetune.recipe.from_config`),
        shots_from among the run's probe protocols, and every fine-tunable model's memory estimate within
        finetune.device_memory_mb. Raises ValueError naming the setting, or the model with its estimate. The
        models the protocol skips, with the reason (`coverage`), are the leaderboard's coverage notes
        (`geneb.tables.scores.COVERAGE_NOTES_ATTR`, `geneb leaderboard`). The run plan calls it whenever a plan
        with extraction settings is made (`geneb.run.plan.RunPlan`)."""
        if not self.on:
            return
        config = self._run.config
        section = config["finetune"]
        if FINETUNE_PROTOCOL not in section:
            raise ValueError(f"protocols lists {FINETUNE_PROTOCOL} but config finetune.{FINETUNE_PROTOCOL} is missing")
        recipe = section[FINETUNE_PROTOCOL]
        if recipe["shots_from"] not in config["protocols"]:
            raise ValueError(
                f"finetune.{FINETUNE_PROTOCOL}.shots_from {recipe['shots_from']!r} is not in protocols "
                f"{config['protocols']}: its shot draws are the fine-tune cells' rows"
            )
        try:
            from_config(recipe, config["probe"][recipe["shots_from"]])
        except RecipeConfigError as err:
            raise ValueError(f"config finetune: {err}") from err
        limit = int(section["device_memory_mb"])
        for m in self._run.models:
            if self.skip_reason(m) is None and (need := self.memory_mb(m)) > limit:
                raise ValueError(
                    f"model {m}: {FINETUNE_PROTOCOL} needs about {need} MB (estimate: geneb.finetune.plan), "
                    f"more than finetune.device_memory_mb {limit}; remove it from the run or raise the limit"
                )
