"""A run's results bundle: one zip archive (stdlib `zipfile`) holding its score table, the tables its site pages
read, the registry entries of its models (their cards), the provenance of its rows and `manifest.json`, the sha256
and size of every other member. Reading a bundle checks every member against the manifest first and refuses a
changed byte, a missing or an unlisted member, naming it (docs/pooling.md).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb import __version__
from geneb.core import integrity, yamlio
from geneb.core.provenance import canonical_json
from geneb.registry.load import load_registry
from geneb.registry.registry import MERGED_SHEET, RegistryError
from geneb.tables.scores import SCHEMA_VERSION

#: the bundle format (manifest `format`, `format_version`)
_FORMAT = "geneb-results-bundle"
_FORMAT_VERSION = 1
_MANIFEST = "manifest.json"
_PROVENANCE = "provenance.json"
_REGISTRY = "registry/models.yaml"
SCORES = "tables/scores.parquet"
#: the tables carried beside scores when the run has them: the site's task pages (audit) and model cards (models)
_OPTIONAL_TABLES = ("task_audit", "models")
#: the provenance columns every score row must carry to be pooled (docs/pooling.md, "Comparable rows")
_PROVENANCE_COLUMNS = ("schema_version", "data_hash", "shots_hash", "config_hash")
#: a fixed member time, so that the same run gives the same archive bytes
_DATE = (2020, 1, 1, 0, 0, 0)


class BundleError(ValueError):
    """A bundle that cannot be written or read: the message names the bundle and the member or column."""


@dataclass(frozen=True)
class Bundle:
    """A bundle read and checked. name: its file name (how errors name it); scores: its score rows; tables:
    {name: frame} of its optional tables; registry: {model id: registry entry} of its models; provenance: the
    provenance record (`_provenance_record`)."""

    name: str
    scores: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    registry: dict[str, Any]
    provenance: dict[str, Any]


def _provenance_record(scores: pd.DataFrame) -> dict[str, Any]:
    """What a bundle says about its rows: the GENEB version and score-schema version that wrote it, the versions
    on its rows, and per task its data hash, per (task, regime) its shot-draw hash, per protocol its settings
    (config) hash, the code commits of its rows."""

    def distinct(keys: list[str], col: str) -> dict[str, list[str]]:
        return {
            "|".join(map(str, k if isinstance(k, tuple) else (k,))): sorted(map(str, g.dropna().unique()))
            for k, g in scores.groupby(keys, sort=True)[col]
        }

    return {
        "geneb_version": __version__,
        "score_schema_version": SCHEMA_VERSION,
        "row_schema_versions": sorted(map(str, scores["schema_version"].unique())),
        "data_hash": distinct(["task"], "data_hash"),
        "shots_hash": distinct(["task", "regime"], "shots_hash"),
        "config_hash": distinct(["protocol"], "config_hash"),
        "geneb_commit": sorted(map(str, scores["geneb_commit"].dropna().unique())) if "geneb_commit" in scores else [],
        "models": sorted(map(str, scores["model"].unique())),
        "tasks": sorted(map(str, scores["task"].unique())),
    }


def _sheet(results_dir: Path, model_sheet: str | os.PathLike[str] | None) -> Path:
    merged = results_dir / MERGED_SHEET  # a run with registry_extra files wrote its merged registry there
    return Path(model_sheet) if model_sheet is not None else merged if merged.is_file() else Path("config/models.yaml")


def write_bundle(
    results_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    model_sheet: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Write the bundle of the results folder `results_dir` (a config's results_dir) to the zip file `out`: its
    tables/scores.parquet (digest checked), its task_audit and models tables where present, the registry entries
    of its models from `model_sheet` (default: the run's merged registry `<results_dir>/registry/models.yaml`,
    else config/models.yaml), `provenance.json` and `manifest.json`. Returns the manifest. Raises BundleError for a
    missing score table, a score row without a provenance column, a model the sheet lacks; OSError, and
    integrity's error for a table that fails its digest."""
    root = Path(results_dir)
    scores_path = root / SCORES
    if not scores_path.is_file():
        raise BundleError(f"bundle: {scores_path} not found; run the workflow to its score table first")
    scores = integrity.read_parquet(scores_path)
    missing = [c for c in _PROVENANCE_COLUMNS if c not in scores.columns]
    if missing:
        raise BundleError(f"bundle: {scores_path} has no provenance column(s) {missing}; rerun its probe jobs")
    members: dict[str, bytes] = {SCORES: scores_path.read_bytes()}
    for name in _OPTIONAL_TABLES:
        path = root / "tables" / f"{name}.parquet"
        if path.is_file():
            integrity.read_parquet(path)  # its digest checked
            members[f"tables/{name}.parquet"] = path.read_bytes()
    sheet = _sheet(root, model_sheet)
    try:  # through the registry's reader: its implicit `<model>-twin` entries are the run's models too
        registry = load_registry(sheet, envs_dir=None).raw
    except RegistryError as err:
        raise BundleError(f"bundle: the registry of {root}: {err}") from err
    entries = registry.get("models") or {}
    models = sorted(map(str, scores["model"].unique()))
    absent = [m for m in models if m not in entries]
    if absent:
        raise BundleError(f"bundle: model(s) {absent} of {scores_path} are not in the registry {sheet}")
    cards = {
        "schema_version": registry.get("schema_version"),
        "models": {m: copy.deepcopy(dict(entries[m])) for m in models},
    }
    members[_REGISTRY] = yaml.safe_dump(cards, sort_keys=False).encode()
    members[_PROVENANCE] = (json.dumps(_provenance_record(scores), indent=1, sort_keys=True) + "\n").encode()
    manifest = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "score_schema_version": SCHEMA_VERSION,
        "results_dir": str(root),
        "members": {n: {"sha256": hashlib.sha256(b).hexdigest(), "size": len(b)} for n, b in sorted(members.items())},
    }
    members[_MANIFEST] = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{out}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            zf.writestr(zipfile.ZipInfo(name, date_time=_DATE), members[name], compress_type=zipfile.ZIP_DEFLATED)
    os.replace(tmp, out)
    return manifest


def _members(path: Path) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(path) as zf:
            return {info.filename: zf.read(info) for info in zf.infolist()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as err:
        raise BundleError(f"bundle {path.name}: not a zip archive ({err})") from err


def read_bundle(path: str | os.PathLike[str]) -> Bundle:
    """Read the bundle `path`, every member checked against its manifest first. Raises BundleError naming the
    bundle and the member for: no or unreadable manifest, another format, a member whose sha256 or size differs
    from the manifest's (a changed byte), a member missing, a member the manifest does not list."""
    p = Path(path)
    name = p.name
    members = _members(p)
    if _MANIFEST not in members:
        raise BundleError(f"bundle {name}: no {_MANIFEST}; not a GENEB results bundle")
    try:
        manifest = json.loads(members.pop(_MANIFEST))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise BundleError(f"bundle {name}: {_MANIFEST} is not JSON ({err})") from err
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise BundleError(f"bundle {name}: {_MANIFEST} is not a {_FORMAT} manifest")
    if manifest.get("format_version") != _FORMAT_VERSION:
        raise BundleError(
            f"bundle {name}: format_version {manifest.get('format_version')!r}, this GENEB reads {_FORMAT_VERSION}"
        )
    listed: dict[str, Any] = manifest.get("members") or {}
    for member in sorted(set(listed) | set(members)):
        if member not in members:
            raise BundleError(f"bundle {name}: member {member} is listed in the manifest but missing")
        if member not in listed:
            raise BundleError(f"bundle {name}: member {member} is not in the manifest; refused")
        digest = hashlib.sha256(members[member]).hexdigest()
        if digest != listed[member]["sha256"] or len(members[member]) != listed[member]["size"]:
            raise BundleError(
                f"bundle {name}: member {member} was changed (sha256 {digest}, the manifest says "
                f"{listed[member]['sha256']}); refused"
            )
    tables = {
        m.split("/")[1].removesuffix(".parquet"): pd.read_parquet(io.BytesIO(b))
        for m, b in members.items()
        if m.startswith("tables/") and m != SCORES
    }
    return Bundle(
        name=name,
        scores=pd.read_parquet(io.BytesIO(members[SCORES])),
        tables=tables,
        registry=(yamlio.safe_load(members[_REGISTRY]) or {}).get("models") or {},
        provenance=json.loads(members[_PROVENANCE]),
    )


def same_entry(a: Any, b: Any) -> bool:
    """Whether two registry entries are the same (canonical JSON)."""
    return canonical_json(a) == canonical_json(b)
