"""Random-init twins: a model's own architecture and tokenizer with seeded random weights, the control that shows
whether pretraining helps at all (the same network, extraction and probe; only the weights differ).

A twin is a registry entry like any other, made from its model's entry:

* implicitly, as `<model>-twin` (seed 0) for every entry that can be re-initialised (`add_implicit_twins`, run by
  the registry's reader, so every reader of the registry knows them), which is what config `twins: true` adds to
  a run for each of its models;
* explicitly, `<id>: {twin_of: <model>, twin_seed: <int>}` in a registry file (optional `display`, `notes`).

The twin keeps its model's family, source (for the configuration, tokenizer and remote code; the weights are
never read), extraction options and parameter count, and records `twin: {of, seed}`, which enters the extraction
settings and so the cache key. Its facts say what it is: pretraining data none, no language-model head (a random
head scores nothing). The encoder builds the network from the configuration with `torch.manual_seed(seed)` then
the model class's own initialisation (`geneb.encoders.loading.twin`), so one seed and one torch version give one
set of weights, whose hash is in the encoder's identity.

Families GENEB re-initialises: the transformers families (hf-encoder, hf-decoder, hf-ssm, hyena with its remote
code, caduceus, gpn), whose classes build from their configuration. `twin_refusal` says why any other cannot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geneb.registry.families import FAMILIES

#: the id suffix of an implicit twin
TWIN_SUFFIX = "-twin"
#: what an explicit twin entry may set itself (the rest comes from its model's entry)
TWIN_ENTRY_KEYS = ("twin_of", "twin_seed", "display", "notes")
#: the adapter of the families whose networks build from their configuration (`AutoModel.from_config`)
HF_ENTRY = "geneb.encoders.families.hf:from_settings"
#: the facts of the model's entry a twin does not inherit (they describe the trained weights)
NOT_INHERITED = ("paper", "trained_on_tasks", "lm_head", "lm_head_source", "scoring", "registry_name", "verified")


def twin_id(model: str) -> str:
    """The id of `model`'s implicit twin."""
    return f"{model}{TWIN_SUFFIX}"


def implicit_parent(model: str) -> str | None:
    """The model an implicit twin id names (`x-twin` -> `x`), None for any other id."""
    return model[: -len(TWIN_SUFFIX)] if model.endswith(TWIN_SUFFIX) and len(model) > len(TWIN_SUFFIX) else None


def twin_refusal(entry: Mapping[str, Any]) -> str | None:
    """Why the registry entry `entry` (a raw mapping) has no random-init twin, None when it can have one."""
    if entry.get("twin"):
        return "it is a random-init twin itself"
    family = str(entry.get("family"))
    if family == "random-init":
        return "it is random-init already"
    if family in ("kmer", "shortcut"):
        return f"family {family} has no trained weights to re-initialise"
    if family in ("python", "precomputed"):
        return f"family {family}: GENEB does not build the network (user code or vectors computed elsewhere)"
    fam = FAMILIES.get(family)
    if fam is None or fam.entry != HF_ENTRY:
        return f"family {family}: GENEB's adapter for it loads trained weights only (no build from a configuration)"
    return None


def twin_entry(
    parent: str, parent_entry: Mapping[str, Any], seed: int = 0, own: Mapping[str, Any] | None = None
) -> dict:
    """The registry entry (raw mapping) of the twin of `parent` (whose raw entry is `parent_entry`) at `seed`;
    `own`: what an explicit twin entry sets itself (display, notes). Raises ValueError naming the model when
    `twin_refusal` refuses it."""
    refusal = twin_refusal(parent_entry)
    if refusal is not None:
        raise ValueError(f"model {parent} has no random-init twin: {refusal}")
    own = dict(own or {})
    entry = {k: v for k, v in parent_entry.items() if k not in NOT_INHERITED}
    entry.update(
        display=own.get("display") or f"{parent_entry.get('display', parent)} (random-init twin)",
        twin={"of": parent, "seed": int(seed)},
        pretraining_data=f"none: random-init twin of {parent} (its configuration and tokenizer, weights from seed {seed})",
        pretraining_domain="none",
        lm_head="none",
        lm_head_source="a random-init twin: its head is random",
        notes=own.get("notes")
        or f"GENEB-made control: {parent}'s architecture with seeded random weights; nothing was trained.",
    )
    entry.pop("supervised", None)
    return entry


def expand_twin_entries(models: dict[str, Any]) -> list[str]:
    """Replace each explicit twin entry (`twin_of`) of the registry's `models` mapping, in place, by its full
    entry (`twin_entry`). Returns the problems, each naming the entry: an unknown `twin_of`, a key a twin cannot
    set, a model that cannot have a twin."""
    problems = []
    for name, entry in list(models.items()):
        if not isinstance(entry, Mapping) or "twin_of" not in entry:
            continue
        parent = str(entry["twin_of"])
        extra = sorted(set(entry) - set(TWIN_ENTRY_KEYS))
        if extra:
            problems.append(f"model {name}: a twin entry sets only {list(TWIN_ENTRY_KEYS)}, not {extra}")
            continue
        if parent not in models or "twin_of" in (models[parent] or {}):
            problems.append(f"model {name}: twin_of {parent!r} is not a (non-twin) entry of the registry")
            continue
        try:
            models[name] = twin_entry(parent, models[parent], int(entry.get("twin_seed", 0)), entry)
        except ValueError as err:
            problems.append(f"model {name}: {err}")
    return problems


def add_implicit_twins(models: dict[str, Any]) -> None:
    """Add, in place, the implicit twin `<model>-twin` (seed 0) of every entry of the registry's `models` mapping
    that can have one (`twin_refusal`) and has no entry of that id already (an explicit entry of the same id
    wins). Run after validation: a twin entry is made of its model's validated fields."""
    for name, entry in list(models.items()):
        if twin_refusal(entry) is None and twin_id(name) not in models:
            models[twin_id(name)] = twin_entry(name, entry)


def twins_of(models: list[str], refusal: Any) -> tuple[list[str], list[str]]:
    """The twin ids of `models` (in their order) and, for each model that has none, a line naming it and why;
    `refusal(model)`: the reason it cannot have one, or None. A model that is a twin itself is skipped silently,
    as is a twin already in `models`."""
    twins, skipped = [], []
    for model in models:
        if implicit_parent(model) is not None and implicit_parent(model) in models:
            continue
        reason = refusal(model)
        if reason is None:
            if twin_id(model) not in models:
                twins.append(twin_id(model))
        elif reason != "it is a random-init twin itself":
            skipped.append(f"{model}: {reason}")
    return twins, skipped


def with_twins(models: list[str], raw_models: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Config `twins: true`: `models` followed by the twin of each that can have one (`twins_of`; `raw_models`:
    the registry's raw entries), and the log lines: one naming the models without one and why (none when every
    model has one)."""
    twins, skipped = twins_of(models, lambda m: twin_refusal(raw_models[m]))
    return [*models, *twins], (["twins: no random-init twin for " + "; ".join(skipped)] if skipped else [])
