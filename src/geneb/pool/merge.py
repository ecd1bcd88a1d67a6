"""One results folder from several bundles: which rows may be pooled, the merge, and its figures and report.

Which rows of several bundles may be pooled: the same score-schema version everywhere, and per task the same
task data hash, per (task, regime) the same shot-draw hash, per protocol the same protocol settings (config)
hash. Every other row is named with its bundle, model, task, the field and both values (docs/pooling.md).

One results folder from several bundles (`geneb merge`): comparability checked (`geneb.pool.merge`), the
same cell from two bundles resolved by the rule below, the score table, the site's tables and the merged
registry written, then the leaderboard and analysis tables built from them as the workflow builds a run's.

The rule for a cell (protocol, model, task, regime, view) that two bundles both hold: identical rows (the same
(seed, metric) rows with the same value, ci_low and ci_high) are kept once; differing rows are refused, naming the
cell, both bundles and the first differing value, unless `prefer` names one of the bundles holding it, whose rows
are then kept whole. Every decision is recorded in tables/pool.json (docs/pooling.md).

The figures and the HTML report of a merged results folder (`geneb merge`, after its tables): drawn by the
functions the workflow's rules `paper_figures` and `report` call, with the same arguments (docs/pooling.md).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from geneb.core import integrity
from geneb.core.paths import load_schema
from geneb.figures.registry import render_figures
from geneb.pool.bundle import SCORES, Bundle, BundleError, read_bundle, same_entry
from geneb.report.html import build_report
from geneb.report.render import report_captions
from geneb.run.layout import report_config
from geneb.tables.scores import SCHEMA_VERSION

#: field -> the keys it must agree on across every pooled row (score-schema version: across all rows)
_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("schema_version", ()),
    ("data_hash", ("task",)),
    ("shots_hash", ("task", "regime")),
    ("config_hash", ("protocol",)),
)


@dataclass(frozen=True)
class Mismatch:
    """One (bundle, model, task) whose `field` is `value` where the reference bundle `ref_bundle` has
    `ref_value` for the same key."""

    bundle: str
    model: str
    task: str
    field: str
    value: str
    ref_bundle: str
    ref_value: str
    #: the key the field must agree on, in words ("task t", "task t, regime 1-shot", "protocol p", "the rows")
    where: str = ""

    def __str__(self) -> str:
        return (
            f"{self.bundle}: model {self.model}, task {self.task}: {self.field} {self.value} "
            f"differs from {self.ref_value} in {self.ref_bundle}"
        )


def _mismatches(bundles: Sequence[Bundle]) -> list[Mismatch]:
    """Every (bundle, model, task, field) whose value differs from the first bundle's (in the given order) that
    holds the same key, and every row of a score-schema version other than this GENEB's SCHEMA_VERSION (the
    reference then is "this GENEB"). Empty when all rows are comparable."""
    out: list[Mismatch] = []
    for field, keys in _FIELDS:
        ref: dict[tuple[str, ...], tuple[str, str]] = {}
        for b in bundles:
            rows = b.scores.assign(**{field: b.scores[field].astype(str)})
            for (model, task, *key, value), _ in rows.groupby(["model", "task", *keys, field], sort=True):
                k = tuple(map(str, key))
                where = ", ".join(f"{name} {v}" for name, v in zip(keys, k)) or "the rows"
                if field == "schema_version":
                    if value != SCHEMA_VERSION:
                        out.append(Mismatch(b.name, model, task, field, value, "this GENEB", SCHEMA_VERSION, where))
                    continue
                ref_bundle, ref_value = ref.setdefault(k, (b.name, value))
                if value != ref_value:
                    out.append(Mismatch(b.name, model, task, field, value, ref_bundle, ref_value, where))
    return out


#: per field: what differs between the runs, and how to make them comparable (docs/pooling.md)
_CAUSES: dict[str, tuple[str, str]] = {
    "schema_version": (
        "the rows were written by another score schema than this GENEB's",
        "bundle the run again with this GENEB (rerun its aggregate step, then `geneb bundle`)",
    ),
    "data_hash": (
        "the task's prepared data differ (task source or its revision, alphabet settings or caps)",
        "rerun one run with the other's `task_source`, `alphabet` and `caps`, then bundle it again",
    ),
    "shots_hash": (
        "the k-shot training draws differ (`caps.seed`, the protocol's seeds or the task's data)",
        "rerun one run with the other's `caps.seed` and protocol seeds, then bundle it again",
    ),
    "config_hash": (
        "the protocol's probe settings differ (its section of the config)",
        "rerun one run with the other's protocol settings, or merge bundles of one protocol setting only",
    ),
}


def _row_counts(bundle: Bundle, task: str) -> str:
    """ "2,000 training / 1,000 test rows": the full-regime rows' `n_train` / `n_test` of `task` in `bundle`
    ("" where the bundle has no full-regime row of it, or the rows disagree)."""
    rows = bundle.scores[(bundle.scores["task"] == task) & (bundle.scores["regime"] == "full")]
    counts = {(int(a), int(b)) for a, b in zip(rows.get("n_train", []), rows.get("n_test", [])) if pd.notna(a) and pd.notna(b)}  # fmt: skip
    if len(counts) != 1:
        return ""
    (train, test) = counts.pop()
    return f"{train:,} training / {test:,} test rows"


def _difference_line(field: str, where: str, bundle: str, value: str, ref: str, ref_value: str, models: list[str], by_name: dict[str, Bundle]) -> str:  # fmt: skip
    """One difference: the key, both bundles' values, the models it touches, the cause and the fix."""
    cause, fix = _CAUSES[field]
    if field == "data_hash":
        task = where.removeprefix("task ")  # data_hash agrees per task: `where` is "task <id>"
        ours, theirs = _row_counts(by_name[bundle], task), _row_counts(by_name[ref], task) if ref in by_name else ""
        if ours and theirs and ours != theirs:
            cause = f"caps differ: {bundle} has {ours} of {task}, {ref} has {theirs} (config `caps`)"
            fix = "rerun one run with the other's `caps` (`max_train`, `max_test`, `per_task`), then bundle it again"
    named = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    return (
        f"- {field} of {where}: {bundle} has {value}, {ref} has {ref_value} ({len(models)} model(s): {named}). "
        f"Why: {cause}. Fix: {fix}."
    )


def _describe(found: Sequence[Mismatch], bundles: Sequence[Bundle], limit: int = 20) -> str:
    """The refusal message: one line per difference (a field of one key, e.g. the data hash of one task, between
    two bundles; the models it touches counted, not repeated) with the cause and the fix; the first `limit`, then
    how many more."""
    by_name = {b.name: b for b in bundles}
    grouped: dict[tuple[str, str, str, str, str, str], list[str]] = {}
    regimes: dict[tuple[str, str, str, str, str, str], set[str]] = {}
    for m in found:
        # the regimes of one task whose draws differ alike are one difference
        where, _, regime = m.where.partition(", regime ")
        key = (m.field, where, m.bundle, m.value, m.ref_bundle, m.ref_value)
        grouped.setdefault(key, []).append(m.model)
        regimes.setdefault(key, set()).update([regime] if regime else [])
    lines = [
        _difference_line(
            key[0],
            key[1] + (f" (regimes {', '.join(sorted(regimes[key]))})" if regimes[key] else ""),
            *key[2:],
            sorted(set(models)),
            by_name,
        )  # fmt: skip
        for key, models in grouped.items()
    ]
    shown = lines[:limit] + ([f"... and {len(lines) - limit} more difference(s)"] if len(lines) > limit else [])
    return (
        f"{len(lines)} difference(s) make the bundles' rows not comparable (docs/pooling.md, 'Comparable rows'); "
        "nothing was written:\n" + "\n".join(shown)
    )


def _cell_frame(scores: pd.DataFrame) -> pd.DataFrame:
    """`scores` with the column `_cell`, the cell key protocol|model|task|regime|view of each row."""
    keys = [c for c in ("protocol", "model", "task", "regime", "view") if c in scores.columns]
    return scores.assign(_cell=scores[keys].astype(str).agg("|".join, axis=1))


#: the record of a merge, beside its tables
_POOL_RECORD = "tables/pool.json"
#: the columns two copies of a cell must agree on
_VALUE_COLUMNS = ("seed", "metric", "value", "ci_low", "ci_high")


class MergeError(ValueError):
    """Bundles that cannot be merged: the message names each bundle, model, task, field and value."""


def _rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    cols = [c for c in _VALUE_COLUMNS if c in frame.columns]
    return sorted(tuple("nan" if pd.isna(v) else v for v in row) for row in frame[cols].itertuples(index=False))


def _resolve_cells(bundles: Sequence[Bundle], prefer: str | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(the pooled score rows, the record of every cell two bundles held: deduplicated or preferred). Raises
    MergeError for a cell held by two bundles with differing rows that `prefer` does not settle, naming each."""
    owner: dict[str, str] = {}
    kept: dict[str, pd.DataFrame] = {}
    record: dict[str, Any] = {"deduplicated": [], "preferred": []}
    conflicts: list[str] = []
    for b in bundles:
        for cell, rows in _cell_frame(b.scores).groupby("_cell", sort=True):
            cell = str(cell)
            if cell not in kept:
                owner[cell], kept[cell] = b.name, rows
                continue
            if _rows(rows) == _rows(kept[cell]):
                record["deduplicated"].append({"cell": cell, "bundles": [owner[cell], b.name]})
            elif prefer in (owner[cell], b.name):
                if prefer == b.name:
                    owner[cell], kept[cell] = b.name, rows
                record["preferred"].append({"cell": cell, "kept": prefer})
            else:
                first = (
                    next((x, y) for x, y in zip(_rows(kept[cell]), _rows(rows), strict=False) if x != y)
                    if len(rows) == len(kept[cell])
                    else (f"{len(kept[cell])} rows", f"{len(rows)} rows")
                )
                conflicts.append(
                    f"cell {cell}: {owner[cell]} has {first[0]}, {b.name} has {first[1]} "
                    f"(rows {', '.join(_VALUE_COLUMNS)})"
                )
    if conflicts:
        raise MergeError(
            "the same cell differs between bundles; rerun one, or keep one bundle's rows with --prefer BUNDLE:\n"
            + "\n".join(conflicts[:20])
            + (f"\n... and {len(conflicts) - 20} more" if len(conflicts) > 20 else "")
        )
    scores = pd.concat(kept.values(), ignore_index=True).drop(columns="_cell")
    return scores, record


def _merged_registry(bundles: Sequence[Bundle]) -> dict[str, Any]:
    """{model: entry} of every bundle's registry; MergeError when two bundles give one id different entries."""
    out: dict[str, Any] = {}
    where: dict[str, str] = {}
    for b in bundles:
        for model, entry in b.registry.items():
            if model in out and not same_entry(out[model], entry):
                raise MergeError(
                    f"model {model}: its registry entry in {b.name} differs from the one in {where[model]}; "
                    "a model id names one model"
                )
            out.setdefault(model, entry)
            where.setdefault(model, b.name)
    return out


def _table(bundles: Sequence[Bundle], name: str, key: str) -> pd.DataFrame | None:
    """One row per `key` of the bundles' table `name`: the most complete row (fewest empty cells: a run without a
    shortcut model has no shortcut columns in its task audit), ties to the first bundle; None if none has it."""
    frames = [b.tables[name] for b in bundles if name in b.tables]
    if not frames:
        return None
    rows = pd.concat(frames, ignore_index=True)
    order = rows.assign(_empty=rows.isna().sum(axis=1), _at=range(len(rows))).sort_values(["_empty", "_at"])
    first = order.drop_duplicates(subset=[key], keep="first").sort_values("_at")
    return rows.loc[first.index].reset_index(drop=True)


def merge_bundles(
    paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *, prefer: str | None = None
) -> dict[str, Any]:
    """Read and check each bundle of `paths`, refuse rows that are not comparable (MergeError naming each bundle,
    model, task, field and both values), pool the cells (module rule; `prefer`: a bundle's file name), and write
    `out`/tables/scores.parquet, task_audit and models (per task or model the most complete row, `_table`), `out`/registry/models.yaml and tables/pool.json. Returns the pool record. Raises
    BundleError for a bundle that fails its manifest, MergeError as above and for a `prefer` that names no
    bundle."""
    bundles = [read_bundle(p) for p in paths]
    names = [b.name for b in bundles]
    if len(set(names)) != len(names):
        raise MergeError(f"two bundles have the same file name among {names}; rename one (errors name bundles by it)")
    if prefer is not None and prefer not in names:
        raise MergeError(f"--prefer {prefer!r} is not one of the bundles {names}")
    found = _mismatches(bundles)
    if found:
        raise MergeError(_describe(found, bundles))
    scores, record = _resolve_cells(bundles, prefer)
    root = Path(out)
    (root / "tables").mkdir(parents=True, exist_ok=True)
    scores.attrs = {}
    integrity.write_parquet(scores, root / SCORES)
    for name, key in (("task_audit", "task"), ("models", "model")):
        table = _table(bundles, name, key)
        if table is not None:
            integrity.write_parquet(table, root / "tables" / f"{name}.parquet")
    (root / "registry").mkdir(exist_ok=True)
    version = load_schema("models")["properties"]["schema_version"]["const"]  # the registry format's version
    registry = {"schema_version": version, "models": _merged_registry(bundles)}
    (root / "registry" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    record = {
        "bundles": [
            {"name": b.name, "sha256": hashlib.sha256(Path(p).read_bytes()).hexdigest(), "rows": len(b.scores)}
            for b, p in zip(bundles, paths, strict=True)
        ],
        "rule": "a cell two bundles hold: identical rows kept once; differing rows refused unless --prefer",
        "prefer": prefer,
        "rows": len(scores),
        **record,
    }
    (root / _POOL_RECORD).write_text(json.dumps(record, indent=1) + "\n")
    return record


def _checked_config(config_file: str | os.PathLike[str]) -> dict[str, Any]:
    """The workflow config file `config_file` validated and its defaults filled as a run's is
    (`geneb.run.checks.check_config`). Raises ValueError for an invalid config."""
    from geneb.run.checks import check_config, default_schema_files, read_yaml

    config = read_yaml(Path(config_file))
    return check_config(copy.deepcopy(config), read_yaml(Path(default_schema_files()["config"])))


def _analysis_sections(config_file: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(analysis, leaderboard) sections of the workflow config file `config_file` (`_checked_config`). Raises
    ValueError for an invalid config."""
    checked = _checked_config(config_file)
    return checked["analysis"], checked["leaderboard"]


def build_tables(
    results_dir: str | os.PathLike[str], *, config_file: str | os.PathLike[str], task_sheet: str | os.PathLike[str]
) -> list[str]:
    """Build the leaderboard tables (`geneb.analysis.registry.LEADERBOARD_TABLES` and leaderboard_clean) and the
    analysis tables of a merged results folder from its tables/scores.parquet and registry/models.yaml, with the
    analysis settings of `config_file`, as the workflow's rules `leaderboard` and `analyses` do (no predictions:
    the analyses that need the kept per-item predictions say so). Returns the tables written."""
    from geneb.analysis.registry import LEADERBOARD_TABLES
    from geneb.analysis.steps import analyses_step, leaderboard_step

    root = Path(results_dir)
    tables = root / "tables"
    if not (tables / "scores.parquet").is_file():
        raise BundleError(f"merge: {tables / 'scores.parquet'} not found; not a merged results folder")
    analysis, board = _analysis_sections(config_file)
    common: dict[str, Any] = {
        "scores": str(tables / "scores.parquet"),
        "models_yaml": str(root / "registry" / "models.yaml"),
        "tasks_tsv": str(task_sheet),
        "analysis_config": analysis,
        "view": "geneb",
    }
    names = (*LEADERBOARD_TABLES, "leaderboard_clean")  # the rule's outputs: every table it writes
    audit = tables / "task_audit.parquet"
    leaderboard_step(
        **common,
        outputs={n: str(tables / f"{n}.parquet") for n in names},
        leaderboard_config=board,
        task_audit=str(audit) if audit.is_file() else None,
    )
    analyses_step(**common, predictions_root=None, outdir=str(tables))
    return sorted(str(p) for p in tables.glob("*.parquet"))


#: the merged folder's report, as a run's (rule `report`)
_REPORT = "report/geneb_report.html"
#: its title (a run's is "GENEB report")
_TITLE = "GENEB report: merged results folder"


def merged_outputs(
    results_dir: str | os.PathLike[str],
    *,
    config_file: str | os.PathLike[str],
    captions_dir: str | os.PathLike[str],
) -> dict[str, Any]:
    """Draw every registered figure of the merged folder `results_dir` into `results_dir`/figures/ (PNG and PDF,
    `geneb.figures.registry.render_figures`; the display names from its tables/models.parquet, which the analyses
    built from the merged registry) and write its report `results_dir`/report/geneb_report.html
    (`geneb.report.html.build_report`, with the "Pooled from" block of tables/pool.json). As the rules do: the
    config `config_file` validated (`_checked_config`), its default protocol, the full regime, the report's
    config (`geneb.run.layout.report_config`) and the captions of `captions_dir` (workflow/report,
    `report_captions`); no task cards and no zero-shot tables (a bundle has neither: the report says so).
    Returns {"figures": [PNG paths], "report": path}. Raises BundleError when `results_dir` has no pool record
    (not a merged folder), AnalysisInputError for a missing table or caption, ValueError for an invalid config."""
    root = Path(results_dir)
    record_path = root / _POOL_RECORD
    if not record_path.is_file():
        raise BundleError(f"merge: {record_path} not found; not a merged results folder")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    config = _checked_config(config_file)
    tables, figures = root / "tables", root / "figures"
    protocol = config["default_protocol"]
    pngs = render_figures(tables, figures, protocol=protocol, regime="full")
    audit = tables / "task_audit.parquet"
    report = build_report(
        tables,
        figures,
        root / _REPORT,
        config=report_config(config),
        captions=report_captions(Path(captions_dir)),
        title=_TITLE,
        protocol=protocol,
        regime="full",
        scores=tables / "scores.parquet",
        task_audit=audit if audit.is_file() else None,
        cards=None,
        zeroshot=None,
        pooled=record,
    )
    return {"figures": pngs, "report": report}
