"""The whole registry document from the shared sources and the curation, and its text (config/models.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .curation import Curation, CurationError, load_curation
from .entries import paper_entry, registry_entry
from .facts import reg_verified
from .parse import clean_hub_id


def build(
    shared: Path,
    log: list[str] | None = None,
    existing: dict[str, Any] | None = None,
    curation: Curation | Path | None = None,
) -> dict[str, Any]:
    """The whole registry document; `log` collects each place where the paper's sheet and registry.yaml
    disagree and which value was taken (the same text as the entry's notes). existing: the current
    config/models.yaml document; its entries the tool does not generate (models users added by hand, one YAML
    entry each: docs/adding-a-model.md) are kept, after the generated ones, in their order. curation: the
    tables (or their folder; default config/curation of this checkout)."""
    cur = curation if isinstance(curation, Curation) else load_curation(curation)
    reg = yaml.safe_load((shared / "reference" / "registry.yaml").read_text())
    by_hub = {clean_hub_id(e["hf_id"])[0].lower(): e for e in reg if e.get("hf_id")}
    by_name = {e["name"]: e for e in reg}
    verified_orgs: dict[str, set[str]] = {}  # registry family -> hub organisations of its verified records
    for e in reg:
        hub, hub_ok = clean_hub_id(e.get("hf_id"))
        if hub and hub_ok and reg_verified(e):
            verified_orgs.setdefault(e["family"], set()).add(hub.split("/")[0])
    paper = pd.read_csv(shared / "reference" / "geneb_paper" / "models.tsv", sep="\t", dtype=str, keep_default_na=False)
    models = dict(cur.builtin_models)
    used: set[str] = set()
    for _, row in paper.iterrows():
        mid = row["geneb_model_id"]
        pc = cur.paper.get(mid, {})
        match = (
            by_name.get(pc["registry_name"])
            if pc.get("registry_name")
            else by_hub.get(str(row["hub_id_or_source"]).lower())
        )
        if match is not None:
            used.add(match["name"])
        models[mid] = paper_entry(cur, row, match, verified_orgs, log)
    stray = sorted(m for m in cur.paper_weights if (models.get(m) or {}).get("source", {}).get("kind") != "external")
    if stray:  # a row that would be written nowhere
        raise CurationError(
            f"{cur.folder / 'paper_models.yaml'}: weights rows for {stray}, which are not paper models whose weights "
            "are outside the hub (source.kind external)"
        )
    for e in reg:
        if e["name"] in used:
            continue
        hub, _ = clean_hub_id(e.get("hf_id"))
        key = hub.split("/")[-1] if hub else e["name"]
        if key in models:
            raise SystemExit(f"registry key collision: {key}")
        models[key] = registry_entry(cur, e, key)
    for key, entry in cur.extra_models.items():
        if key in models:
            raise SystemExit(f"builtin_models.yaml extra_models key collision: {key}")
        models[key] = entry
    generated = set(models)
    for key, entry in ((existing or {}).get("models") or {}).items():
        if key not in generated:
            models[key] = entry
    pairs = list(cur.pairs) + [p for p in (existing or {}).get("matched_pairs") or [] if p not in cur.pairs]
    return {"schema_version": 1, "matched_pairs": pairs, "models": models}


HEADER = """\
# GENEB model registry. Validated against workflow/schemas/models.schema.yaml plus the cross-field checks of
# geneb.registry.load.check_registry; field meanings in docs/data-dictionary.md ("Inputs: the model registry");
# adding a model: docs/adding-a-model.md.
#
# Built by tools/build_model_registry.py from ../shared/reference (the paper's models.tsv and registry.yaml) and
# GENEB's curation tables in config/curation/*.yaml (one row each, with its reason): change a row there and rerun
# the tool (a test checks this file is its output). To ADD a model, append one entry at the end of `models:`
# (and, optionally, a matched pair): the tool keeps entries and pairs it does not generate when it reruns. Hub
# commits are pinned separately, in config/model_revisions.yaml (`geneb pin-revisions`).
#
# Runnable entries: the builtins, local folders that exist, and hub ids pinned to a 40-hex commit
# (source.kind: hub). No commit is known for any hub model in the shared sources, so those are
# `hub-unpinned` and refused until someone pins them. Paper models (with a `paper:` section)
# default to the paper's reference extraction; `paper.geneb_changes` says where GENEB fixes a known defect.
"""


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # shared lists are written out, not as &id001 anchors
        return True


def render(doc: dict[str, Any]) -> str:
    """The text of config/models.yaml for `doc` (header included)."""
    return HEADER + yaml.dump(
        doc, Dumper=_NoAliases, sort_keys=False, width=120, allow_unicode=True, default_flow_style=None
    )
