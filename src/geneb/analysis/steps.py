"""File-level entry points of the analysis, figure and report rules: each reads its inputs, calls the library
and writes its outputs, so the `workflow/scripts/*.py` shims only map Snakemake's input/output/params.

Views: "geneb" (a GENEB run: the registry's metadata, per-row predictions) and "published" (the paper's
40 models imported from the reference folder: metadata from its models.tsv, no predictions).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import geneb.analysis.inputs as inputs
import geneb.analysis.published as published
import geneb.analysis.run as run
from geneb import __version__
from geneb.analysis.controls import leaderboard_settings, read_audit_flags
from geneb.analysis.inputs import frame_sha256
from geneb.analysis.ranking import EXCLUDE_FLAGGED_ATTR, TASK_FLAGS_ATTR, check_rank_intervals
from geneb.analysis.registry import LEADERBOARD_TABLES, analysis_tables
from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.core.logs import failure_reason
from geneb.core.paths import repo_root
from geneb.core.provenance import code_revision
from geneb.tables.scores import (
    COVERAGE_NOTES_ATTR,
    FAILED_CELLS_ATTR,
    FAILED_TASKS_ATTR,
    MISSING_CELL_RULE,
    MISSING_CELL_RULE_ATTR,
    AnalysisInputError,
    failed_cells,
    failed_tasks,
    load_scores,
    with_code_revision,
)

_log = logging.getLogger(__name__)


def _meta(view: str, models_yaml: str, settings: dict[str, Any]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    if view == "published":
        pub = settings["published"]
        return published.published_model_meta(pub["dir"], models_yaml, pub.get("registry")), inputs.paper_pairs(
            models_yaml
        )
    return inputs.load_model_meta(models_yaml), inputs.declared_pairs(models_yaml)


def leaderboard_step(
    *,
    scores: str,
    models_yaml: str,
    tasks_tsv: str,
    analysis_config: dict[str, Any],
    view: str,
    outputs: dict[str, str],
    leaderboard_config: dict[str, Any] | None = None,
    task_audit: str | None = None,
    coverage_notes: dict[str, dict[str, str]] | None = None,
) -> None:
    """Rule `leaderboard`: write leaderboard, leaderboard_tasks, contamination and rank_separability tables (the
    statistically tied tiers, `geneb.analysis.tiers`; and leaderboard_clean
    where `outputs` names it) to `outputs[name]`. A partial run's failed tasks and cells (the score table's
    metadata, geneb.run.partial) are listed with their errors, their categories and the macro and micro rows not
    ranked; the tasks of `task_audit` (results/tables/task_audit.parquet; None: no audit, e.g. the published view)
    that fail the leakage or shortcut audit under `leaderboard_config` (the config's validated `leaderboard:`
    section) are marked on every row they feed, and left out of the ranking when its `exclude_flagged` names
    their kind. coverage_notes: {protocol: {model: reason}} of the models a protocol skips, kept in the boards'
    metadata (`COVERAGE_NOTES_ATTR`)."""
    settings = run.resolve_settings(analysis_config, view)
    meta, _ = _meta(view, models_yaml, settings)
    failed = failed_tasks(scores)  # a partial run's failed tasks: listed, their categories not ranked
    cells_failed = failed_cells(scores)
    flags, exclude = {}, []
    if task_audit is not None:
        board_settings = leaderboard_settings(leaderboard_config)
        flags, exclude = read_audit_flags(task_audit, board_settings), list(board_settings["exclude_flagged"])  # type: ignore[call-overload]  # a list by the config schema
    opts = {
        "missing_reasons": {t: f"failed in this run ({failure_reason(rec.get('error'))})" for t, rec in failed.items()},
        "cell_reasons": {
            m: {t: failure_reason(r.get("error")) for t, r in ts.items()} for m, ts in cells_failed.items()
        },
        "flags": flags,
        "exclude_flagged": exclude,
    }
    missing = {task: rec["category"] for task, rec in failed.items()}
    table, task_meta = load_scores(scores), inputs.load_task_meta(tasks_tsv)
    tables = run.leaderboard_tables(table, meta, task_meta, settings, missing, **opts)  # type: ignore[arg-type]
    names: list[str] = list(LEADERBOARD_TABLES)
    if "leaderboard_clean" in outputs:  # the run's own leaderboard on the test rows without a training homolog
        clean = run.clean_leaderboard(table, meta, task_meta, settings, missing, **opts)
        tables["leaderboard_clean"] = clean if clean is not None else tables["leaderboard"].iloc[:0]
        names.append("leaderboard_clean")
    board_attrs = {name: dict(tables[name].attrs) for name in ("leaderboard", "leaderboard_clean") if name in tables}
    tables = {name: with_code_revision(table) for name, table in tables.items()}  # every row: the code's revision
    for name, attrs in board_attrs.items():
        tables[name].attrs.update(attrs)
        tables[name].attrs[TASK_FLAGS_ATTR] = flags
        tables[name].attrs[EXCLUDE_FLAGGED_ATTR] = sorted(exclude)
        tables[name].attrs[FAILED_TASKS_ATTR] = failed
        tables[name].attrs[FAILED_CELLS_ATTR] = cells_failed
        tables[name].attrs[MISSING_CELL_RULE_ATTR] = MISSING_CELL_RULE
        tables[name].attrs[COVERAGE_NOTES_ATTR] = coverage_notes or {}
    for table_name in names:
        integrity.write_parquet(tables[table_name], outputs[table_name])
    board = tables["leaderboard"]
    _log.info(
        "leaderboard: %d rows, %d models, %d contaminated cells",
        len(board),
        board["model"].nunique(),
        len(tables["contamination"]),
    )
    for task, kinds in sorted(flags.items()):
        _log.warning("task %s fails the task audit (%s): marked on every leaderboard row it feeds", task, kinds)
    if exclude:
        _log.warning(
            "leaderboard.exclude_flagged %s: ranked without %s",
            exclude,
            sorted(t for t, k in flags.items() if set(k) & set(exclude)),
        )


def analyses_step(
    *,
    scores: str,
    models_yaml: str,
    tasks_tsv: str,
    analysis_config: dict[str, Any],
    view: str,
    predictions_root: str | None,
    outdir: str,
) -> None:
    """Rule `analyses`: every registered analysis table (`outputs.analysis_tables`) and analysis_summary.json in `outdir`."""
    settings = run.resolve_settings(analysis_config, view)
    meta, pairs = _meta(view, models_yaml, settings)
    failed = failed_tasks(scores)  # a partial run's failed tasks: the analyses rank no row that lacks one
    tables, summary = run.run_analyses(
        load_scores(scores),
        model_meta=meta,
        task_meta=inputs.load_task_meta(tasks_tsv),
        declared_pairs=pairs,
        settings=settings,
        predictions_root=predictions_root,
        missing={t: rec["category"] for t, rec in failed.items()},
        missing_reasons={t: f"failed in this run ({failure_reason(rec.get('error'))})" for t, rec in failed.items()},
    )
    summary["view"] = view
    for path in run.write_tables(tables, summary, outdir, analysis_tables()):
        _log.info("wrote %s", path)


def import_published_step(*, folder: str, output: str) -> None:
    """Rule `import_published`: the published results as a GENEB score table at `output`."""
    scores = published.import_published(folder)
    integrity.write_parquet(scores, output)
    _log.info(
        "imported %d published rows (%d models, %d tasks)",
        len(scores),
        scores["model"].nunique(),
        scores["task"].nunique(),
    )


def reproduce_step(*, claims: str, summary: str, leaderboard: str, models: str, output: str) -> pd.DataFrame:
    """Rule `reproduce_paper`: the paper's stated numbers (`claims`, config/paper_claims.yaml) beside GENEB's,
    from the published view's analysis outputs, written to `output`; each claim is logged with its verdict."""
    outputs = published.Outputs(
        summary=json.loads(Path(summary).read_text()),
        leaderboard=integrity.read_parquet(leaderboard),
        models=integrity.read_parquet(models),
        protocol=published.PROTOCOL,
    )
    table = with_code_revision(published.reproduce(published.load_claims(claims), outputs))
    integrity.write_parquet(table, output)
    for r in table.itertuples():
        _log.info("%s %s: paper %g, GENEB %.4g", "PASS" if r.passed else "FAIL", r.claim, r.paper, r.geneb)
    _log.info("%d of %d stated numbers reproduced", int(table["passed"].sum()), len(table))
    return table


def reference_caveats(models_yaml: str, published_models: set[str]) -> list[dict[str, str]]:
    """The published models whose reference extraction GENEB's adapters correct: one row per registry entry whose
    paper id (`paper.model_id`) is among `published_models` and that records `paper.geneb_changes`, with model
    (the paper's id), change (the text) and page (docs/adapters/<family>.md where there is one, else the entry in
    config/models.yaml)."""
    rows = []
    for spec in inputs.registry(models_yaml).models.values():
        paper = dict(spec.paper or {})
        if spec.paper_model_id not in published_models or not paper.get("geneb_changes"):
            continue
        page = f"docs/adapters/{spec.family.replace('-', '_')}.md"
        rows.append(
            {
                "model": spec.paper_model_id,
                "change": " ".join(str(paper["geneb_changes"]).split()),
                "page": page
                if (repo_root() / page).is_file()
                else f"config/models.yaml ({spec.id}: paper.geneb_changes)",
            }
        )
    return sorted(rows, key=lambda r: r["model"])


def compare_step(
    *,
    scores: str,
    published_scores: str,
    models_yaml: str,
    tasks_tsv: str,
    analysis_config: dict[str, Any],
    board_out: str,
    left_out: str,
    tasks_out: str,
    summary_out: str,
    cards: Sequence[str] = (),
) -> None:
    """Rule `compare_published`: the user's models beside the published 40 over the common paper tasks;
    contaminated cells are left out (and listed) unless the contamination policy is "flag", and so are tasks
    whose card (`cards`: the run's task cards) records a cap.

    Writes the board with its task-resampled CIs, rank intervals and recommendation roles (`board_out`,
    `compare.compare_intervals`), the left-out list (`left_out`), the per-task table (`tasks_out`) and
    `summary_out` (JSON: what the comparison covers, out of what, and under which rules: coverage, settings,
    the user's models, the reference-extractor caveats of `reference_caveats`), which the comparison report
    reads."""
    settings = run.resolve_settings(analysis_config, "geneb")
    user, task_meta = load_scores(scores), inputs.load_task_meta(tasks_tsv)
    pub = load_scores(published_scores)
    exclude: set[tuple[str, str]] = set()
    if settings["contamination"] == "exclude":
        _, bad = run.prepare_cells(user, inputs.load_model_meta(models_yaml), task_meta, settings)
        exclude = set(zip(bad["model"], bad["task"]))
    failed = {t: failure_reason(rec.get("error")) for t, rec in failed_tasks(scores).items()}
    board, left = published.compare_with_published(
        user, pub, task_meta, exclude, capped=published.capped_tasks(cards), failed=failed
    )
    cells = board.attrs.pop("cells")
    boot = settings["bootstrap"]
    board = published.compare_intervals(
        board,
        cells,
        confidence=float(settings["confidence"]),
        n_resamples=int(boot["n_resamples"]),
        seed=int(boot["seed"]),
        tie_rule=settings["recommendation"]["tie_rule"],
    )
    check_rank_intervals(board, board_out)
    origin = dict(zip(board["model"], board["origin"]))
    per_task = published.task_table(cells, origin)
    for df, path in ((board, board_out), (left, left_out), (per_task, tasks_out)):
        integrity.write_parquet(df, path)
    paper_tasks = pub.drop_duplicates("task").set_index("task")["category"]
    compared = cells.drop_duplicates("task").set_index("task")["category"]
    summary = {
        "protocol": published.PROTOCOL,
        "n_paper_tasks": int(len(paper_tasks)),
        "paper_tasks_per_category": {str(k): int(v) for k, v in paper_tasks.value_counts().items()},
        "compared_tasks": {str(t): str(c) for t, c in compared.sort_index().items()},
        "user_models": sorted(m for m, o in origin.items() if o == "user"),
        "n_published_models": int(pub["model"].nunique()),
        "contamination": settings["contamination"],
        "confidence": float(settings["confidence"]),
        "n_resamples": int(boot["n_resamples"]),
        "seed": int(boot["seed"]),
        "tie_rule": settings["recommendation"]["tie_rule"],
        "reference_caveats": reference_caveats(models_yaml, set(pub["model"])),
        "input_sha256": {"scores": frame_sha256(user), "published": frame_sha256(pub)},
        "geneb_version": __version__,
        **code_revision(),
    }
    write_text_atomic(summary_out, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    _log.info("compared on %d paper tasks; %d tasks listed as not comparable", board["n_tasks"].max(), len(left))


def submission_step(
    *,
    scores: str,
    models_yaml: str,
    tasks_tsv: str,
    spec_dir: str,
    model: str,
    submitted_by: str,
    output: str,
    cards: Sequence[str] = (),
) -> None:
    """Rule `submission`: `model`'s schema-1.0 submission file at `output`, validated against the spec; the
    tasks the model was trained on (registry `trained_on_tasks`) are left out, and so are tasks whose card
    (`cards`) records a cap (not the paper's split).

    Raises AnalysisInputError listing the problems when the file would not validate.
    """
    spec = inputs.registry(models_yaml).models.get(model)
    src = spec.source if spec is not None else None
    if src is not None and src.hub_id:
        url = f"https://huggingface.co/{src.hub_id}"
    else:
        url = src.origin if src is not None and src.origin is not None else ""
    params = spec.params if spec is not None else None
    display = spec.display if spec is not None and spec.display is not None else model
    training_data = spec.pretraining_data if spec is not None and spec.pretraining_data is not None else ""
    sub_meta = {
        "display": display,
        "params": int(params) if params is not None else 0,
        "url": url,
        "zero_shot": False,
        "training_data": training_data,
        "provenance": f"geneb run, protocol {published.PROTOCOL}",
        "submitted_by": submitted_by,
    }
    sub_spec = published.load_spec(spec_dir)
    capped = published.capped_tasks(cards)
    for task, why in sorted(capped.items()):
        _log.warning("submission for %s: %s left out, %s", model, task, why)
    trained = frozenset(spec.trained_on_tasks if spec is not None else ()) | frozenset(capped)
    sub = published.build_submission(
        load_scores(scores), model, sub_spec, inputs.load_task_meta(tasks_tsv), meta=sub_meta, exclude=trained
    )
    problems = published.validate_submission(sub, sub_spec)
    if problems:
        raise AnalysisInputError(f"submission of {model!r} does not validate: {problems[:5]}")
    published.write_submission(sub, output)
    _log.info("submission for %s: %s", model, json.dumps({r: len(t) for r, t in sub["results"].items()}))


def task_audit_step(
    *, scores: str, audits: list[str], cards: list[str], models_yaml: str, protocol: str, output: str
) -> pd.DataFrame:
    """Rule `task_audit_table`: `results/tables/task_audit.parquet` (geneb.analysis.controls) for `protocol`."""
    from geneb.analysis.controls import task_audit_table

    table = task_audit_table(load_scores(scores), audits, cards, inputs.load_model_meta(models_yaml), protocol)
    table = with_code_revision(table)
    integrity.write_parquet(table, output)
    _log.info(
        "task audit: %d tasks; shortcut fail %s; leakage fail %s",
        len(table),
        sorted(table.loc[table["shortcut_flag"] == "fail", "task"]),
        sorted(table.loc[table["leak_flag"] == "fail", "task"]),
    )
    return table
