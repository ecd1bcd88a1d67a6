"""The fine-tuning stage's part of the run plan, as `RunPlan` methods (a base class): which models the
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
from typing import TYPE_CHECKING, Any

from geneb.finetune.recipe import FINETUNE_PROTOCOL, RecipeConfigError, from_config
from geneb.registry.registry import Registry
from geneb.registry.spec import model_depth

#: families whose adapter is a token-level torch network (`geneb.encoders.engine.tokenmodel.TokenModelEncoder`)
TOKEN_FAMILIES = frozenset(
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
BYTES_PER_PARAM = 16
ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM = 2048
OVERHEAD_MB = 1024
#: the parameter count assumed for a model whose registry entry gives none (or 0: random-init's nominal count)
DEFAULT_PARAMS = 1_000_000


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
        if fam not in TOKEN_FAMILIES:
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
        return int(raw) if isinstance(raw, (int, float)) and raw > 0 else DEFAULT_PARAMS

    def finetune_memory_mb(self, model: str) -> int:
        """Estimated peak memory (MB) of one fine-tune job of `model`: BYTES_PER_PARAM x parameters, plus
        ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM x batch tokens (batch_size x the model's max_tokens) x millions of
        parameters, plus OVERHEAD_MB. params: the registry entry's `params` (DEFAULT_PARAMS when absent or 0)."""
        params = self._params(model)
        ext = self.extraction_settings[model].get("extraction", {})
        tokens = int(ext.get("max_tokens") or 512) * int(self.config["finetune"][FINETUNE_PROTOCOL]["batch_size"])
        mb = (BYTES_PER_PARAM * params + ACTIVATION_BYTES_PER_TOKEN_PER_MPARAM * tokens * params / 1e6) / 2**20
        return int(math.ceil(mb + OVERHEAD_MB))

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
                    f"model {m}: {FINETUNE_PROTOCOL} needs about {need} MB (estimate: geneb.run.finetune_plan), "
                    f"more than finetune.device_memory_mb {limit}; remove it from the run or raise the limit"
                )
