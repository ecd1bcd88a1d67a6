"""The `finetune-lora` protocol and the errors of the fine-tuning stage.

Errors of the fine-tuning stage, each naming the model, task, regime and seed where they apply.

The `finetune-lora` protocol: one fixed fine-tuning recipe for every model, from config `finetune: finetune-lora:`.

Every output-affecting setting is written out in the config (docs/protocols.md, "finetune-lora", gives each value
and its source), validated against `$defs/finetune_protocol` of workflow/schemas/config.schema.yaml, and hashed
into `recipe_hash`, the `config_hash` column of every fine-tune score row. The shot draws are the probe protocol's
(`shots_from`): the same rows per (regime, seed) as the probes, so a probe and a fine-tune cell differ only in how
the model is adapted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from geneb.core.paths import schema_errors, section
from geneb.core.provenance import stable_hash


class FineTuneInputError(ValueError):
    """Input the fine-tune job refuses: a model without a torch network, an unknown row, mismatched hashes."""


class NonFiniteLossError(RuntimeError):
    """The training loss of one (model, task, regime, seed) cell became NaN or infinite: that cell stops, the
    job's other cells go on (the message names the cell, the epoch and the step)."""


#: the protocol's name in config `protocols:` and on every score row
FINETUNE_PROTOCOL = "finetune-lora"
#: what a family without LoRA targets trains instead (recorded on its rows, `finetune_method`)
FALLBACK = "last_block+head"
LORA = "lora+head"


class RecipeConfigError(ValueError):
    """The finetune-lora settings are missing, unknown, of the wrong type, or inconsistent with `shots_from`."""


@dataclass(frozen=True)
class Recipe:
    """One fine-tuning recipe (all output-affecting; see docs/protocols.md, "finetune-lora").

    shots_from: the probe protocol whose shot file, bootstrap settings and macro-F1 rule are reused. seeds /
    few_shot_k: subsets of that protocol's (the same draws). rank, alpha, dropout: LoRA (Hu et al. 2021) on the
    modules named in target_modules[family] (suffix match on module names); a family without an entry, or
    whose names match no linear module, trains its last block and the head (FALLBACK). learning_rate, schedule
    ("linear": linear warm-up over warmup_fraction of the steps, then linear decay to 0; "constant": warm-up then
    flat), epochs (maximum), batch_size (rows per step), weight_decay (AdamW, decoupled), max_grad_norm
    (gradient clipping). patience: epochs without a better validation MCC before stopping; val_fraction /
    val_seed: the validation rows carved per class from each cell's training rows only. Rows longer than the
    model's maximum are chunked as in extraction, and the chunks' pooled vectors averaged before the head.
    """

    shots_from: str
    seeds: tuple[int, ...]
    few_shot_k: tuple[int, ...]
    rank: int
    alpha: int
    dropout: float
    target_modules: dict[str, tuple[str, ...]]
    learning_rate: float
    schedule: str
    warmup_fraction: float
    epochs: int
    batch_size: int
    weight_decay: float
    max_grad_norm: float
    patience: int
    val_fraction: float
    val_seed: int

    @property
    def regimes(self) -> tuple[str, ...]:
        """Regime names in output order: "full", then "{k}shot" for each k of few_shot_k."""
        return ("full",) + tuple(f"{k}shot" for k in self.few_shot_k)

    def settings(self) -> dict[str, Any]:
        """The settings as plain JSON-able values (the config section), for hashing and provenance."""
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        d["few_shot_k"] = list(self.few_shot_k)
        d["target_modules"] = {k: list(v) for k, v in sorted(self.target_modules.items())}
        return d

    def recipe_hash(self) -> str:
        """12-hex sha256 of (protocol, settings): the `config_hash` of every fine-tune score row."""
        return stable_hash({"protocol": FINETUNE_PROTOCOL, "settings": self.settings()})

    def targets_for(self, family: str) -> tuple[str, ...]:
        """The LoRA target-name suffixes of `family` (() when the recipe names none: the fallback)."""
        return self.target_modules.get(family, ())


def from_config(settings: dict[str, Any], probe_settings: dict[str, Any]) -> Recipe:
    """Build and validate the recipe from `config["finetune"]["finetune-lora"]`.

    probe_settings: `config["probe"][shots_from]`, whose seeds and few_shot_k must contain the recipe's (the same
    shot draws). Raises RecipeConfigError naming the key and value of the first problem (missing or unknown
    keys, a type or range the schema refuses, a seed or k the probe protocol does not draw).
    """
    if not isinstance(settings, dict):
        raise RecipeConfigError(f"{FINETUNE_PROTOCOL}: settings must be a mapping, got {type(settings).__name__}")
    errors = schema_errors(settings, section("config", "finetune_protocol"))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.path)) or "settings"
        raise RecipeConfigError(f"{FINETUNE_PROTOCOL}: {where}: {e.message}")
    s = settings
    for key in ("seeds", "few_shot_k"):
        extra = sorted(set(s[key]) - set(probe_settings[key]))
        if extra:
            raise RecipeConfigError(
                f"{FINETUNE_PROTOCOL}: {key} {extra} are not among probe protocol {s['shots_from']!r}'s "
                f"{key} {list(probe_settings[key])}: the fine-tune cells reuse its shot draws"
            )
    return Recipe(
        shots_from=str(s["shots_from"]),
        seeds=tuple(int(x) for x in s["seeds"]),
        few_shot_k=tuple(int(k) for k in s["few_shot_k"]),
        rank=int(s["rank"]),
        alpha=int(s["alpha"]),
        dropout=float(s["dropout"]),
        target_modules={str(f): tuple(str(n) for n in names) for f, names in s["target_modules"].items()},
        learning_rate=float(s["learning_rate"]),
        schedule=str(s["schedule"]),
        warmup_fraction=float(s["warmup_fraction"]),
        epochs=int(s["epochs"]),
        batch_size=int(s["batch_size"]),
        weight_decay=float(s["weight_decay"]),
        max_grad_norm=float(s["max_grad_norm"]),
        patience=int(s["patience"]),
        val_fraction=float(s["val_fraction"]),
        val_seed=int(s["val_seed"]),
    )
