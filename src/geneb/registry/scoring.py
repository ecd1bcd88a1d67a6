"""Which zero-shot scorers apply to a registry model: its language-model head (`lm_head`) and its `scoring:` list,
each with the family's default when the entry says nothing (docs/data-dictionary.md, "Inputs: the model registry").

* `lm_head`: masked | causal | none, the head the checkpoint's architecture has (the paper's 40 models carry
  the fact and its source, `lm_head_source`; otherwise the family's `Family.lm_head`).
* `scoring`: the scorers among `SCORERS` (`llr`: the language model's log-likelihood ratio,
  geneb.zeroshot.llr; `embedding`: distances between ref and alt embeddings, every model). Default: both for a
  model with a head whose family GENEB can load a head for (the transformers families), else `embedding` only;
  `llr` is never a default without a head.

Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geneb.registry.families import FAMILIES

#: the zero-shot scorers a registry entry may list under `scoring:`
SCORERS: tuple[str, ...] = ("llr", "embedding")
#: the `lm_head` values
LM_HEADS: tuple[str, ...] = ("masked", "causal", "none")
#: the adapter entry whose families can load a language-model head (geneb.zeroshot.llr_load)
HEAD_LOADER_ENTRY = "geneb.encoders.families.hf:from_settings"


def resolved_lm_head(entry: Mapping[str, Any]) -> str:
    """The entry's `lm_head`, or its family's default ("none" for an unknown family)."""
    head = entry.get("lm_head")
    if head is not None:
        return str(head)
    fam = FAMILIES.get(str(entry.get("family")))
    return fam.lm_head if fam is not None else "none"


def default_scoring(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """("llr", "embedding") for a model with a head whose family loads heads, else ("embedding",)."""
    fam = FAMILIES.get(str(entry.get("family")))
    loads_head = fam is not None and fam.entry == HEAD_LOADER_ENTRY
    return ("llr", "embedding") if loads_head and resolved_lm_head(entry) != "none" else ("embedding",)


def resolved_scoring(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The entry's `scoring:` list, or `default_scoring`."""
    given = entry.get("scoring")
    return tuple(str(s) for s in given) if given is not None else default_scoring(entry)


def scoring_problems(model: str, entry: Mapping[str, Any]) -> list[str]:
    """Every problem of the entry's `lm_head` / `scoring` (for check_registry): an unknown head or scorer (named
    with the value), an empty list, and `llr` for a model whose lm_head is none."""
    where = f"model {model}"
    problems: list[str] = []
    head = entry.get("lm_head")
    if head is not None and head not in LM_HEADS:
        problems.append(f"{where}: lm_head {head!r} is not one of {list(LM_HEADS)}")
    given = entry.get("scoring")
    if given is None:
        return problems
    if not isinstance(given, (list, tuple)) or not given:
        return [*problems, f"{where}: scoring must be a non-empty list of {list(SCORERS)}, got {given!r}"]
    for name in given:
        if name not in SCORERS:
            problems.append(f"{where}: scoring names an unknown scorer {name!r} (known: {list(SCORERS)})")
    if "llr" in given and resolved_lm_head(entry) == "none":
        problems.append(
            f"{where}: scoring lists llr but the model has no language-model head (lm_head none"
            f"{'' if head is not None else ', the default of family ' + repr(entry.get('family'))}); set lm_head or "
            "drop llr"
        )
    return problems
