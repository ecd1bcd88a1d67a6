"""Where GENEB finds its files: repository paths and the workflow's JSON schemas.

The one home of repository paths: where GENEB finds the files of its checkout (workflow schemas, env files,
the workflow itself) and its own package source.

GENEB is installed from its checkout (`pip install -e .`), and the workflow, its JSON schemas and the env files
live in the checkout beside `src/`, not in the package. The checkout is found once, from the package's own
location upwards (the first folder holding `workflow/schemas` and `envs`); `GENEB_REPO` names it explicitly for
an installation outside a checkout. No other module walks `__file__`'s parents.

The workflow's JSON schemas (workflow/schemas/*.schema.yaml), for Python callers that bypass Snakemake.

The schemas are the first check of every configuration contract: Snakemake validates `config.yaml` with them
in workflow/rules/common.smk, and `geneb.registry.load.load_registry` and `geneb.probe.protocols.from_config`
validate with them here, so no module re-checks by hand what a schema already says. Only the checks a schema
cannot express (cross-field rules) live in the modules.

The schemas are read from the repository checkout (`workflow/schemas/` beside `src/`), where the workflow runs.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import geneb
from geneb.core.yamlio import safe_load as load_yaml

#: environment variable naming the GENEB checkout when the package is installed elsewhere
_REPO_ENV = "GENEB_REPO"
#: the package folder (…/src/geneb)
PACKAGE_DIR = Path(geneb.__file__).resolve().parent
#: the folder that holds the package (…/src): put first on a child interpreter's PYTHONPATH
SOURCE_ROOT = PACKAGE_DIR.parent


def _is_checkout(folder: Path) -> bool:
    return (folder / "workflow" / "schemas").is_dir() and (folder / "envs").is_dir()


@functools.cache
def repo_root() -> Path:
    """The GENEB checkout: `$GENEB_REPO` when set, else the nearest folder above the package that holds
    `workflow/schemas` and `envs`. Raises FileNotFoundError naming both ways to fix it when neither is found
    (a non-editable install used outside its checkout)."""
    named = os.environ.get(_REPO_ENV)
    if named:
        folder = Path(named).expanduser().resolve()
        if not _is_checkout(folder):
            raise FileNotFoundError(f"{_REPO_ENV}={named} is not a GENEB checkout (no workflow/schemas and envs there)")
        return folder
    for folder in PACKAGE_DIR.parents:
        if _is_checkout(folder):
            return folder
    raise FileNotFoundError(
        f"no GENEB checkout above {PACKAGE_DIR} (a folder with workflow/schemas and envs): install GENEB from its "
        f"checkout with `pip install -e .`, or set {_REPO_ENV} to the checkout"
    )


def _schema_dir() -> Path:
    """The folder of the workflow's JSON schemas (`workflow/schemas`)."""
    return repo_root() / "workflow" / "schemas"


def envs_dir() -> Path:
    """The folder of the runtime environment files (`envs/<env>.yaml`)."""
    return repo_root() / "envs"


def default_env_cache() -> Path:
    """Where built venvs live unless `$GENEB_ENV_DIR` (or `--prefix`) says otherwise: `.geneb/envs` in the
    checkout."""
    return repo_root() / ".geneb" / "envs"


#: the folder of the workflow's JSON schemas
SCHEMA_DIR = _schema_dir()


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema `workflow/schemas/<name>.schema.yaml` (cached: treat it as read-only).

    Raises FileNotFoundError naming the path when the checkout has no such schema."""
    path = SCHEMA_DIR / f"{name}.schema.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"JSON schema {path} not found (GENEB reads its schemas from the repository checkout)")
    return load_yaml(path.read_text())


def schema_errors(instance: Any, schema: dict[str, Any]) -> list[Any]:
    """Every jsonschema.ValidationError of `instance` against `schema` (draft 2020-12), in path order; empty
    when it validates."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    return sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.path])


def section(name: str, definition: str) -> dict[str, Any]:
    """A schema for one `$defs/<definition>` of schema `name` (with the other definitions in reach of its
    `$ref`s), e.g. section("config", "probe_protocol") for one protocol's settings. Raises KeyError for an
    unknown definition."""
    whole = load_schema(name)
    whole["$defs"][definition]  # noqa: B018 - KeyError for an unknown definition
    return {"$schema": whole.get("$schema"), "$defs": whole["$defs"], "$ref": f"#/$defs/{definition}"}


def schema_problems(instance: Any, schema: dict[str, Any], *, limit: int = 20) -> list[str]:
    """`schema_errors` as one short line each, `<dotted path>: <message>` (the top level is `(top level)`),
    at most `limit` of them: what a user reads instead of jsonschema's dump of the whole schema."""
    lines = []
    for err in schema_errors(instance, schema)[:limit]:
        where = ".".join(str(p) for p in err.path) or "(top level)"
        text = err.message if len(err.message) <= 300 else err.message[:300] + " …"
        lines.append(f"{where}: {text}{_close_keys(err)}")
    return lines


def _close_keys(err: Any) -> str:
    """For an unexpected key (`additionalProperties`): "; did you mean ...?" with the schema's close spellings of
    each (difflib), else ""."""
    import difflib

    if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
        return ""
    known = list(err.schema.get("properties", {}))
    hints = [
        f"{key!r} -> {', '.join(repr(m) for m in matches)}"
        for key in err.instance
        if key not in known and (matches := difflib.get_close_matches(str(key), known, n=3, cutoff=0.75))
    ]
    return f"; did you mean {'; '.join(hints)}?" if hints else ""


def validate_with_defaults(instance: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Validate `instance` against `schema` (draft 2020-12) and fill in, in place, every missing key whose
    `properties` entry has a `default:`, nested objects too (a default object is itself filled): the same
    result as `snakemake.utils.validate(instance, schema)` (jsonschema's `properties` validator extended to
    set defaults, as its FAQ shows), without Snakemake. Each call fills from a fresh copy of the schema, so no
    two configs share a default object. Returns `instance`.

    Raises ValueError with the first violation's path and message when `instance` does not validate (callers
    list every problem with `schema_problems` first)."""
    import copy

    import jsonschema
    from jsonschema import Draft202012Validator, validators

    schema = copy.deepcopy(schema)
    set_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties_with_defaults(
        validator: Any, properties: dict[str, Any], obj: Any, subschema: dict[str, Any]
    ) -> Iterator[Any]:
        # as Snakemake's validate: defaults are set before the properties are checked, and so are filled in turn
        for name, property_schema in properties.items():
            if "default" in property_schema:
                obj.setdefault(name, property_schema["default"])
        yield from set_properties(validator, properties, obj, subschema)

    # jsonschema leaves `extend` unannotated
    filling = validators.extend(Draft202012Validator, {"properties": properties_with_defaults})
    try:
        filling(schema).validate(instance)
    except jsonschema.ValidationError as err:
        where = ".".join(str(p) for p in err.path) or "(top level)"
        raise ValueError(f"{where}: {err.message}") from None
    return instance
