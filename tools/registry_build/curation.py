"""GENEB's curation tables (config/curation/*.yaml): read, validated, and turned into the lookups the builder uses.

Each file is checked against a small JSON schema (below): every row is an object of known keys with a non-empty
`reason` (why this value, with its source). Anything else (an unknown key, a missing `reason`, a duplicated row,
a file that is not YAML) raises CurationError naming the file and the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

#: the curation folder of this checkout (tools/registry_build/ -> config/curation/)
CURATION_DIR = Path(__file__).resolve().parents[2] / "config" / "curation"


class CurationError(ValueError):
    """A curation file that does not follow its schema; the message names the file and the row."""


# ---- schemas -----------------------------------------------------------------------------------------------------

_STR = {"type": "string", "minLength": 1}
_STRS = {"type": "array", "items": _STR, "minItems": 1}
_REASON = {"type": "string", "pattern": r"\S"}  # non-empty, not only blanks
_ANY_OBJ = {"type": "object"}
_SCALAR = {"type": ["string", "integer", "boolean"]}


def _rows(key: str, required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    """A list of rows: objects of exactly `key`, `props` and `reason`; `key` and `required` must be present."""
    return {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": [key, *required, "reason"],
            "properties": {key: _STR, **props, "reason": _REASON},
        },
    }


def _file(**tables: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(tables), "properties": tables}


_FAMILY = _STR
SCHEMAS: dict[str, dict[str, Any]] = {
    "vocabularies.yaml": _file(
        architecture_families=_rows("paper_family", ("architecture_family",), architecture_family=_STR),
        tokenizer_types=_rows("paper_tokenizer", ("tokenizer_type",), tokenizer_type=_STR),
        reference_pooling=_rows(
            "pooling_reference",
            ("pooling", "exclude_special_tokens"),
            pooling=_STR,
            exclude_special_tokens={"type": "boolean"},
        ),
    ),
    "transformers_ranges.yaml": _file(
        ranges=_rows("id", ("transformers", "note"), transformers=_STR, note=_STR, names=_STRS, prefixes=_STRS)
    ),
    "registry_families.yaml": _file(
        families=_rows("registry_family", ("family",), family=_FAMILY, extraction=_ANY_OBJ, load=_ANY_OBJ, note=_STR),
        model_families=_rows("model", ("family",), family=_FAMILY),
        evo2_layers=_rows("model", ("layer",), layer=_STR),
    ),
    "paper_models.yaml": _file(
        models=_rows(
            "model",
            ("family",),
            family=_FAMILY,
            registry_name=_STR,
            where=_STR,
            package_model_name=_STR,
            tokenizer=_STR,
            note=_STR,
            geneb_changes=_STR,
            remote={"type": "boolean"},
            remote_if_unregistered={"type": "boolean"},
            max_tokens={"type": "integer", "minimum": 1},
        ),
        domains=_rows("model", ("domain",), domain=_STR),
        lm_heads=_rows("model", ("lm_head",), lm_head={"enum": ["masked", "causal", "none"]}),
        dtypes=_rows("model", ("dtype",), dtype={"enum": ["float32", "bfloat16", "float16"]}),
        weights=_rows(
            "model",
            ("fetch",),
            fetch=_STR,
            url=_STR,
            expect=_STRS,
            sha256={"type": "string", "pattern": "^[0-9a-f]{64}$"},
            file_sha256={"type": "object", "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
        ),
    ),
    "context.yaml": _file(
        paper_context=_rows("model", ("context", "note"), context=_STR, note=_STR),
        beyond_trained_context=_rows("model", ("why",), why=_STR),
    ),
    "supervised.yaml": _file(supervised=_rows("model")),
    "matched_pairs.yaml": _file(
        pairs=_rows(
            "id",
            ("models", "differs_in", "held_equal", "note"),
            models={"type": "array", "items": _STR, "minItems": 2, "maxItems": 2},
            differs_in=_STR,
            held_equal=_STRS,
            note=_STR,
        )
    ),
    "envs.yaml": _file(
        models=_rows("model", ("env",), env=_STR),
        registry_families=_rows("registry_family", ("env",), env=_STR),
        families=_rows("family", ("env",), env=_STR),
        ranges=_rows("range", ("env",), env=_STR),
    ),
    "builtin_models.yaml": _file(
        builtin_models=_rows("key", ("entry",), entry=_ANY_OBJ),
        extra_models=_rows("key", ("entry",), entry=_ANY_OBJ),
    ),
    "extraction_defaults.yaml": _file(
        paper=_rows("field", ("value",), value=_SCALAR),
        registry=_rows("field", ("value",), value=_SCALAR),
        family_load=_rows("family", ("field", "value"), field=_STR, value=_SCALAR),
        length_rules=_rows("tokenizer", ("length_multiple",), length_multiple={"type": "integer", "minimum": 2}),
    ),
}
#: the extraction fields each default table must give, exactly (the builder writes them in its own order)
DEFAULT_FIELDS = {
    "paper": {"layer", "long_policy", "rc"},
    "registry": {"pooling", "layer", "exclude_special_tokens", "long_policy", "rc"},
}


# ---- reading -----------------------------------------------------------------------------------------------------


def _where(doc: Any, path: list[Any]) -> str:
    """'families[3] (Evo 2)' for an error at doc['families'][3]...; the table name alone above the rows."""
    out, node = "", doc
    for i, step in enumerate(path):
        if isinstance(step, int):
            out += f"[{step}]"
            node = node[step] if isinstance(node, list) and step < len(node) else None
            if isinstance(node, dict) and node:
                out += f" ({next(iter(node.values()))})"
            if i + 1 < len(path):
                out += f", key {'.'.join(str(s) for s in path[i + 1 :])}"
            return out
        out += ("." if out else "") + str(step)
        node = node.get(step) if isinstance(node, dict) else None
    return out or "(top level)"


def read_table(path: Path, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """One curation file, parsed and validated; CurationError names the file and the offending row."""
    schema = schema or SCHEMAS[path.name]
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise CurationError(f"{path}: cannot be read as YAML: {err}") from err
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors[:10]:
            msg = err.message
            if err.validator == "additionalProperties":
                msg = f"unknown key ({msg})"
            elif err.validator == "pattern" and err.absolute_path and err.absolute_path[-1] == "reason":
                msg = "the reason is empty"
            lines.append(f"  {_where(doc, list(err.absolute_path))}: {msg}")
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise CurationError(f"{path}: {len(errors)} problem(s):\n" + "\n".join(lines) + more)
    for table, rows in doc.items():
        key = next(iter(schema["properties"][table]["items"]["required"]))
        seen: set[Any] = set()
        for i, row in enumerate(rows):
            ident = (row["family"], row["field"]) if table == "family_load" else row[key]
            if ident in seen:
                raise CurationError(f"{path}: {table}[{i}] ({row[key]}): a second row for {ident!r}")
            seen.add(ident)
    return doc


def _strip(row: dict[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("reason", *drop)}


@dataclass(frozen=True)
class Curation:
    """The curation tables as the builder reads them (reasons stay in the files)."""

    folder: Path
    arch_family: dict[str, str]  # models.tsv family -> architecture_family
    tokenizer_type: dict[str, str]  # models.tsv tokenizer -> tokenizer_type, where the words differ
    reference_pooling: dict[str, tuple[str, bool]]  # models.tsv pooling_reference -> (pooling, exclude specials)
    ranges: list[dict[str, Any]]  # transformers ranges, first match wins; the last one matches all
    registry_family: dict[str, dict[str, Any]]  # registry.yaml family -> {family, extraction, load, note}
    model_family: dict[str, str]
    evo2_layer: dict[str, str]
    paper: dict[str, dict[str, Any]]  # geneb_model_id -> curation row
    paper_domain: dict[str, str]
    paper_lm_head: dict[str, tuple[str, str]]
    paper_dtype: dict[str, str]  # geneb_model_id -> extraction.dtype of its default (reference) extraction
    paper_weights: dict[
        str, dict[str, Any]
    ]  # geneb_model_id -> source fields of external weights (fetch, url, expect, ...)
    paper_context: dict[str, tuple[str, str]]
    beyond_trained_context: dict[str, str]
    supervised: frozenset[str]
    pairs: list[dict[str, Any]]
    builtin_models: dict[str, dict[str, Any]]
    extra_models: dict[str, dict[str, Any]]
    paper_extraction: dict[str, Any]
    registry_extraction: dict[str, Any]
    family_load: dict[str, dict[str, Any]]
    length_multiple: dict[str, int]  # tokenizer fact (registry.yaml / models.tsv wording) -> extraction.length_multiple
    envs: dict[str, dict[str, str]]  # envs.yaml: table (models, registry_families, families, ranges) -> {key: env}


def load_curation(folder: Path | None = None) -> Curation:
    """All of config/curation/*.yaml (or `folder`), validated; a file there that no schema knows is an error."""
    folder = Path(folder or CURATION_DIR)
    known = set(SCHEMAS)
    strays = sorted(p.name for p in folder.glob("*.y*ml") if p.name not in known)
    if strays:
        raise CurationError(f"{folder}: unknown curation file(s) {strays}; known: {sorted(known)}")
    d = {name: read_table(folder / name) for name in SCHEMAS}
    voc, rng, fam, pap, ctx = (
        d["vocabularies.yaml"],
        d["transformers_ranges.yaml"]["ranges"],
        d["registry_families.yaml"],
        d["paper_models.yaml"],
        d["context.yaml"],
    )
    defaults = d["extraction_defaults.yaml"]
    for table, fields in DEFAULT_FIELDS.items():
        got = {r["field"] for r in defaults[table]}
        if got != fields:
            raise CurationError(
                f"{folder / 'extraction_defaults.yaml'}: {table} must give exactly {sorted(fields)}, got {sorted(got)}"
            )
    catch_all = [i for i, r in enumerate(rng) if "names" not in r and "prefixes" not in r]
    if catch_all != [len(rng) - 1]:
        raise CurationError(
            f"{folder / 'transformers_ranges.yaml'}: exactly one row, the last, must have neither names nor prefixes "
            f"(rows without them: {catch_all})"
        )
    family_load: dict[str, dict[str, Any]] = {}
    for r in defaults["family_load"]:
        family_load.setdefault(r["family"], {})[r["field"]] = r["value"]
    return Curation(
        folder=folder,
        arch_family={r["paper_family"]: r["architecture_family"] for r in voc["architecture_families"]},
        tokenizer_type={r["paper_tokenizer"]: r["tokenizer_type"] for r in voc["tokenizer_types"]},
        reference_pooling={
            r["pooling_reference"]: (r["pooling"], r["exclude_special_tokens"]) for r in voc["reference_pooling"]
        },
        ranges=[_strip(r) for r in rng],
        registry_family={r["registry_family"]: _strip(r, "registry_family") for r in fam["families"]},
        model_family={r["model"]: r["family"] for r in fam["model_families"]},
        evo2_layer={r["model"]: r["layer"] for r in fam["evo2_layers"]},
        paper={r["model"]: _strip(r, "model") for r in pap["models"]},
        paper_domain={r["model"]: r["domain"] for r in pap["domains"]},
        paper_lm_head={r["model"]: (r["lm_head"], r["reason"]) for r in pap["lm_heads"]},
        paper_dtype={r["model"]: r["dtype"] for r in pap["dtypes"]},
        paper_weights={r["model"]: _strip(r, "model") for r in pap["weights"]},
        paper_context={r["model"]: (r["context"], r["note"]) for r in ctx["paper_context"]},
        beyond_trained_context={r["model"]: r["why"] for r in ctx["beyond_trained_context"]},
        supervised=frozenset(r["model"] for r in d["supervised.yaml"]["supervised"]),
        pairs=[_strip(r) for r in d["matched_pairs.yaml"]["pairs"]],
        builtin_models={r["key"]: r["entry"] for r in d["builtin_models.yaml"]["builtin_models"]},
        extra_models={r["key"]: r["entry"] for r in d["builtin_models.yaml"]["extra_models"]},
        paper_extraction={r["field"]: r["value"] for r in defaults["paper"]},
        registry_extraction={r["field"]: r["value"] for r in defaults["registry"]},
        family_load=family_load,
        length_multiple={r["tokenizer"]: r["length_multiple"] for r in defaults["length_rules"]},
        envs={
            table: {r[key]: r["env"] for r in d["envs.yaml"][table]}
            for table, key in (
                ("models", "model"),
                ("registry_families", "registry_family"),
                ("families", "family"),
                ("ranges", "range"),
            )
        },
    )


def lookup(cur: Curation, table: str, key: str, what: str, file: str) -> Any:
    """cur.<table>[key], or a CurationError saying which curation file lacks the row."""
    try:
        return getattr(cur, table)[key]
    except KeyError:
        raise CurationError(
            f"{cur.folder / file}: no row for {what} {key!r}; add one (with its reason) and rerun"
        ) from None
