"""One config/models.yaml entry from a registry.yaml record or a models.tsv row, with GENEB's curation applied."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .curation import Curation, lookup
from .facts import reconcile, resolve_hub_id
from .parse import arch_family_of, clean_hub_id, parse_params, parse_tokens, tokenizer_type_of

#: adapter families that run a fixed one-hot window (load.window_bp) and pool its output bins: no token cap
WINDOW_FAMILIES = ("enformer", "space")


def _range_row(cur: Curation, spec_name: str, key: str) -> dict[str, Any]:
    """The first row of transformers_ranges.yaml whose names hold `spec_name` or whose prefixes start `spec_name`
    or `key` (the last row matches every model)."""
    for rng in cur.ranges:
        names, prefixes = rng.get("names"), rng.get("prefixes")
        if (
            (names is None and prefixes is None)
            or spec_name in (names or ())
            or any(spec_name.startswith(p) or key.startswith(p) for p in prefixes or ())
        ):
            return rng
    raise AssertionError("transformers_ranges.yaml ends with a catch-all row (checked on load)")


def remote_load(cur: Curation, spec_name: str, key: str, needs_remote: bool) -> dict[str, Any]:
    """The load section for a remote-code model: its transformers range and the range's source (`_range_row`)."""
    if not needs_remote:
        return {}
    rng = _range_row(cur, spec_name, key)
    return {"transformers": rng["transformers"], "transformers_note": rng["note"]}


def env_of(
    cur: Curation, key: str, registry_family: str | None, fam: str, spec_name: str, needs_remote: bool
) -> str | None:
    """The entry's `env:` from envs.yaml: its models row, else its registry family's, else its GENEB family's,
    else (remote code only) the row of the transformers range it was given; None = the default env."""
    envs = cur.envs
    if key in envs["models"]:
        return envs["models"][key]
    if registry_family in envs["registry_families"]:
        return envs["registry_families"][registry_family]
    if fam in envs["families"]:
        return envs["families"][fam]
    if needs_remote:
        return envs["ranges"].get(_range_row(cur, spec_name, key)["id"])
    return None


def _length_rule(cur: Curation, tokenizer: str, extraction: dict[str, Any], note: str) -> str:
    """Set `extraction.length_multiple` from extraction_defaults.yaml's length_rules row for this tokenizer fact (a
    fixed non-overlapping k-mer vocabulary turns a trailing partial k-mer into UNK), saying so in `note`."""
    k = cur.length_multiple.get(str(tokenizer))
    if k is None:
        return note
    extraction["length_multiple"] = k
    said = (
        f"extraction.length_multiple {k}: a fixed non-overlapping {k}-mer vocabulary would read the trailing "
        f"len % {k} bases as UNK, so GENEB trims them (counted per row in trimmed_bases)"
    )
    return f"{note}; {said}" if note else said


def _family(cur: Curation, registry_family: str) -> dict[str, Any]:
    return lookup(cur, "registry_family", registry_family, "registry.yaml family", "registry_families.yaml")


def registry_entry(cur: Curation, e: dict[str, Any], key: str) -> dict[str, Any]:
    """A GENEB entry for one registry.yaml record (not a paper model)."""
    row = _family(cur, e["family"])
    fam, ext_extra, load_extra, note = (
        row["family"],
        row.get("extraction", {}),
        row.get("load", {}),
        row.get("note", ""),
    )
    fam = cur.model_family.get(key, fam)
    hub, hub_ok = clean_hub_id(e.get("hf_id"))
    remote = bool(e["needs_remote_code"])
    d = cur.registry_extraction
    extraction: dict[str, Any] = {
        "pooling": d["pooling"],
        "layer": d["layer"],
        "exclude_special_tokens": d["exclude_special_tokens"],
        "max_tokens": parse_tokens(e["max_length"]),
        "long_policy": d["long_policy"],
        "rc": d["rc"],
    }
    extraction.update(ext_extra)
    note = _length_rule(cur, e["tokenizer"], extraction, note)
    if e["family"] == "DNABERT":  # DNABERT-k reads overlapping k-mers (registry.yaml loader_notes)
        extraction["input_transform"] = {"kind": "overlapping-kmers", "k": int(e["name"].split("-")[1])}
    if fam == "evo2":
        if key in cur.evo2_layer:
            extraction["layer"] = cur.evo2_layer[key]
        else:
            fam, note = (
                "unsupported",
                "which Evo 2 block gives the best embeddings is not established for this size (evo2 #124); set family evo2 and a module name as layer to run it",
            )
    if fam in WINDOW_FAMILIES:
        extraction.pop("max_tokens")
    load = {**load_extra, **remote_load(cur, e["name"], key, remote), **cur.family_load.get(fam, {})}
    if fam in ("evo", "evo2"):
        load["package_model_name"] = key
    if e["family"] == "Caduceus" and "-ps_" in key:  # registry.yaml Caduceus architecture: 'ps' = RC-equivariant
        note = (
            note + "; " if note else ""
        ) + "RC-equivariant: the hidden size is 2 x d_model (forward and RC channels)"
    entry: dict[str, Any] = {
        "display": e["name"],
        "family": fam,
        "source": (
            {"kind": "hub-unpinned", "hub_id": hub}
            if hub and hub_ok
            else {
                "kind": "external",
                "where": f"hub id unverified: {e.get('hf_id')}" if hub else "not on the hub (see notes)",
            }
        ),
        "architecture": e["architecture"],
        "architecture_family": arch_family_of(e["architecture"]),
        "tokenizer_type": tokenizer_type_of(e["tokenizer"]),
        "tokenizer": e["tokenizer"],
        "params": parse_params(e["params"]),
        "params_note": str(e["params"]),
        "context_tokens": parse_tokens(e["max_length"]),
        "context": str(e["max_length"]),
        "pretraining_data": e["pretraining_data"],
        "pretraining_domain": e["domain"],
        "license": e["license"],
        "trust_remote_code": remote,
        "env": env_of(cur, key, e["family"], fam, e["name"], remote),
        "load": load,
        "extraction": extraction,
        "trained_on_tasks": [],
        "registry_name": e["name"],
        "verified": str(e["verified"]).split(" ")[0],
        "loading_notes": " ".join(str(e["loader_notes"]).split()),
    }
    if key in cur.supervised or e["name"] in cur.supervised:
        entry["supervised"] = True
    if note:
        entry["notes"] = note
    return tidy(entry)


def paper_entry(
    cur: Curation,
    row: pd.Series,
    reg: dict[str, Any] | None,
    verified_orgs: dict[str, set[str]] | None = None,
    log: list[str] | None = None,
) -> dict[str, Any]:
    """A GENEB entry for one of the paper's models, with the paper's reference extraction as default."""
    mid = row["geneb_model_id"]
    pc = lookup(cur, "paper", mid, "models.tsv model", "paper_models.yaml")
    fam = pc["family"]
    src_text = str(row["hub_id_or_source"])
    remote = bool(reg["needs_remote_code"]) if reg else pc.get("remote_if_unregistered", pc.get("remote", False))
    if pc.get("remote") is not None:
        remote = bool(pc["remote"])
    cap = str(row["extractor_max_input"])
    pooling_ref = str(row["pooling_reference"])
    pooling, exclude = lookup(
        cur, "reference_pooling", pooling_ref, "models.tsv pooling_reference", "vocabularies.yaml"
    )
    d = cur.paper_extraction
    extraction: dict[str, Any] = {
        "pooling": pooling,
        "layer": d["layer"],
        "exclude_special_tokens": exclude,
        "max_tokens": parse_tokens(cap),
        "long_policy": d["long_policy"],
        "rc": d["rc"],
        "dtype": lookup(cur, "paper_dtype", mid, "models.tsv model", "paper_models.yaml (dtypes)"),
        "embedding_dim": int(row["emb_dim"]) if str(row["emb_dim"]).isdigit() else None,
    }
    if pc.get("max_tokens"):
        extraction["max_tokens"] = pc["max_tokens"]
    # the checkpoint's own tokenizer fact where the curation gives one (registry.yaml's may cover a whole family)
    tokenizer = pc.get("tokenizer") or (reg["tokenizer"] if reg else row["tokenizer"])
    length_note = _length_rule(cur, tokenizer, extraction, "")
    load: dict[str, Any] = {}
    reg_row = _family(cur, reg["family"]) if reg else {}
    load.update(reg_row.get("load", {}))
    load.update(remote_load(cur, reg["name"] if reg else mid, mid, remote))
    if pc.get("package_model_name"):
        load["package_model_name"] = pc["package_model_name"]
    if fam in WINDOW_FAMILIES:
        extraction.pop("max_tokens")
    load.update(cur.family_load.get(fam, {}))
    notes = [n for n in (pc.get("note"), reg_row.get("note"), length_note) if n]
    fact_notes: list[str] = []
    if "/" in src_text and " " not in src_text:
        hub_id, hub_note = resolve_hub_id(src_text, reg, verified_orgs or {})
        source: dict[str, Any] = {"kind": "hub-unpinned", "hub_id": hub_id}
        fact_notes += [hub_note] if hub_note else []
    else:
        source = {"kind": "external", "where": pc.get("where", src_text), **cur.paper_weights.get(mid, {})}
    # the three factors of matched-pair derivation: the paper's sheet against registry.yaml (reconcile)
    arch_family, n1 = reconcile(
        "architecture_family",
        lookup(cur, "arch_family", row["family"], "models.tsv family", "vocabularies.yaml"),
        f"{row['family']}",
        reg,
        arch_family_of(reg["architecture"]) if reg else "",
        reg["architecture"] if reg else "",
    )
    tokenizer_type, n2 = reconcile(
        "tokenizer_type",
        cur.tokenizer_type.get(row["tokenizer"], row["tokenizer"]),
        row["tokenizer"],
        reg,
        tokenizer_type_of(reg["tokenizer"]) if reg else "",
        reg["tokenizer"] if reg else "",
    )
    paper_domain = lookup(cur, "paper_domain", mid, "models.tsv model", "paper_models.yaml (domains)")
    domain, n3 = reconcile(
        "pretraining_domain",
        paper_domain,
        row["pretraining_data_unverified"],
        reg,
        reg["domain"] if reg else "",
        reg["pretraining_data"] if reg else "",
    )
    fact_notes += [n for n in (n1, n2, n3) if n]
    lm_head, lm_head_source = lookup(cur, "paper_lm_head", mid, "models.tsv model", "paper_models.yaml (lm_heads)")
    data_from_paper = reg is None or (domain != reg["domain"] and domain == paper_domain)
    context_text = str(reg["max_length"]) if reg else cap
    if mid in cur.paper_context:
        context_text, why = cur.paper_context[mid]
        fact_notes.append(f"context {context_text}: {why}")
    if mid in cur.beyond_trained_context:
        fact_notes.append("extraction.max_tokens exceeds context_tokens on purpose (beyond_trained_context)")
    notes += fact_notes
    if log is not None:
        log += [f"{mid}: {n}" for n in fact_notes]
    notes.append(
        "default extraction = the paper's reference (last hidden state, its pooling with special tokens "
        "included, its input cap, truncation beyond it, no RC)"
    )
    paper = {
        "model_id": mid,
        "display": row["leaderboard_display"],
        "name": row["model_paper_name_v4"],
        "source": src_text,
        "params": int(row["params_current"]),
        "reference_extraction": {
            "max_input": cap,
            "hidden_tap": row["hidden_tap_reference"],
            "pooling": pooling_ref,
            "embedding_dim": extraction["embedding_dim"],
        },
    }
    if isinstance(row["reference_extractor_notes"], str) and row["reference_extractor_notes"].strip():
        paper["reference_defects"] = row["reference_extractor_notes"].strip()
    if pc.get("geneb_changes"):
        paper["geneb_changes"] = pc["geneb_changes"]
    entry: dict[str, Any] = {
        "display": row["leaderboard_display"],
        "family": fam,
        "source": source,
        "architecture": row["architecture"],
        "architecture_family": arch_family,
        "tokenizer_type": tokenizer_type,
        "tokenizer": tokenizer,
        "params": int(row["params_current"]),
        "params_paper": int(row["params_early_meta"])
        if str(row["params_early_meta"]).strip() not in ("", "nan")
        else None,
        "context_tokens": parse_tokens(context_text),
        "context": context_text,
        "beyond_trained_context": cur.beyond_trained_context.get(mid),
        "pretraining_data": row["pretraining_data_unverified"] if data_from_paper else reg["pretraining_data"],
        "pretraining_domain": domain,
        "license": reg["license"] if reg else "unknown (not in the shared registry)",
        "trust_remote_code": remote,
        "lm_head": lm_head,
        "lm_head_source": lm_head_source,
        "env": env_of(cur, mid, reg["family"] if reg else None, fam, reg["name"] if reg else mid, remote),
        "load": load,
        "extraction": extraction,
        "trained_on_tasks": [],
        "paper": paper,
        "registry_name": reg["name"] if reg else None,
        "verified": str(reg["verified"]).split(" ")[0] if reg else None,
        "loading_notes": " ".join(str(reg["loader_notes"]).split()) if reg else None,
        "notes": "; ".join(notes),
    }
    if mid in cur.supervised:
        entry["supervised"] = True
    return tidy(entry)


def tidy(entry: dict[str, Any]) -> dict[str, Any]:
    """Drop empty optional fields (None, {}) so the YAML stays readable; required fields stay."""
    keep = {
        "params",
        "display",
        "family",
        "source",
        "architecture_family",
        "tokenizer_type",
        "pretraining_domain",
        "license",
    }
    out = {k: v for k, v in entry.items() if k in keep or v not in (None, {}, "")}
    if "extraction" in out:
        out["extraction"] = {k: v for k, v in out["extraction"].items() if v is not None or k == "max_tokens"}
    return out
