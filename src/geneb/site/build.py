"""Build the static leaderboard site of one or more runs' results folders (`geneb site`, rule `site`).

The site is a folder of HTML pages that opens from the file system (file://): no server, nothing fetched, no
third-party code. Each page embeds its tables as JSON, drawn by GENEB's own script (assets/site.js); the
figures are the report's image files, copied in. Pages: index.html (the leaderboard), tasks.html (the task
list with the task audit and every per-task score), models.html, figures.html, runs.html, and one page per
model (models/<id>.html) and per task (tasks/<id>.html). docs/site.md describes it.
"""

from __future__ import annotations

import datetime as _dt
import shutil
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from geneb import __version__
from geneb.core.integrity import write_text_atomic
from geneb.figures.registry import figures as registered_figures
from geneb.site.collect import RunTables, board_rows, check_cells, labelled, read_run, run_labels, with_display
from geneb.site.pages import card, esc, figure, heading, note, page, slug
from geneb.site.sections import (
    board_table,
    cells_table,
    flag_notes,
    model_list,
    model_page,
    task_list,
    task_page,
)
from geneb.tables.scores import MISSING_CELL_RULE_ATTR, AnalysisInputError

#: the file that marks a folder as a GENEB site (a rebuild may replace its pages; another folder is refused)
_MARKER = ".geneb-site"
#: the site's own files copied from the package (geneb/site/assets)
_ASSETS = ("site.js", "site.css")


def _prepare_out(out: Path) -> None:
    """Make `out` ready for a build: created when missing; a previous site's pages removed; any other non-empty
    folder refused (AnalysisInputError), so a build never deletes files it did not write."""
    if out.exists() and not out.is_dir():
        raise AnalysisInputError(f"site: --out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / _MARKER).exists():
            raise AnalysisInputError(
                f"site: --out {out} is a non-empty folder that is not a GENEB site; give a new one"
            )
        for sub in ("models", "tasks", "figures"):
            shutil.rmtree(out / sub, ignore_errors=True)
    for sub in ("models", "tasks", "figures"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    (out / _MARKER).write_text("written by geneb site; a rebuild replaces this folder's pages\n")


def _figures_body(runs: list[RunTables], out: Path, captions: Mapping[str, str]) -> list[str]:
    """Copy each run's figure files to out/figures/<run>/ and return the figures page's body (captions from
    the figure registry's caption files, where given)."""
    caption_of = {f.name: captions.get(f.caption, "") for f in registered_figures()}
    order = {f.name: i for i, f in enumerate(registered_figures())}
    body = []
    for run in runs:
        if len(runs) > 1:
            body.append(heading(f"Run {run.label}"))
        if not run.figures:
            body.append(
                note(f"run {run.label} has no figures ({run.results_dir / 'figures'}): snakemake paper_figures")
            )
            continue
        dest = out / "figures" / slug(run.label)
        dest.mkdir(parents=True, exist_ok=True)
        for name, src in sorted(run.figures.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
            shutil.copy2(src, dest / src.name)
            body.append(figure(f"figures/{slug(run.label)}/{src.name}", name, caption_of.get(name, "")))
    return body


def _runs_body(runs: list[RunTables]) -> list[str]:
    """The runs page: per run where it came from, the code and settings that made it, what it holds, and its
    failed tasks and cells."""
    body = []
    for run in runs:
        s = run.summary
        board = run.tables["leaderboard"]
        body.append(heading(f"Run {run.label}"))
        body.append(
            card(
                {
                    "results folder": str(run.results_dir.resolve()),
                    "run directory": str(run.root) if run.root else "not recorded (no scores_inputs.json)",
                    "GENEB commit": s.get("geneb_commit") or ", ".join(sorted(set(board["geneb_commit"].astype(str)))),
                    "uncommitted changes": s.get("geneb_dirty"),
                    "analysis settings hash": s.get("settings_hash"),
                    "score table sha256": s.get("input_sha256"),
                    "protocols": ", ".join(sorted(board["protocol"].astype(str).unique())),
                    "regimes": ", ".join(sorted(board["regime"].astype(str).unique())),
                    "models": board["model"].nunique(),
                    "tables": ", ".join(sorted(run.tables)),
                    "missing cells": run.attrs.get(MISSING_CELL_RULE_ATTR),
                    "package versions": ", ".join(
                        f"{k} {v}" for k, v in sorted((s.get("package_versions") or {}).items())
                    ),
                }
            )
        )
        failed = [f"{t}: {r.get('error', '')}" for t, r in sorted(run.failed_tasks.items())]
        failed += [
            f"{m} on {t}: {r.get('error', '')}"
            for m, ts in sorted(run.failed_cells.items())
            for t, r in sorted(ts.items())
        ]
        if failed:
            body.append(
                "<div class='warn'>Failed in this run:<ul>"
                + "".join(f"<li>{esc(x)}</li>" for x in failed)
                + "</ul></div>"
            )
    return body


def build_site(
    results_dirs: list[str | Path],
    out: str | Path,
    *,
    labels: list[str] | None = None,
    captions: Mapping[str, str] | None = None,
) -> Path:
    """Write the site of the runs in `results_dirs` (each a config's results_dir) to the folder `out`; returns the
    path of its index.html.

    labels: the runs' names on the site (default the folders' names); captions: {caption file: text} of the
    figures (`geneb.report.render.report_captions`; without it the figures have their names only). Raises
    AnalysisInputError for a folder without a leaderboard, repeated labels, a non-empty `out` that is not a
    site, and SiteConflictError when two runs hold a (model, task, regime, protocol) cell with different values
    (`geneb.site.collect`).
    """
    if not results_dirs:
        raise AnalysisInputError("site: give at least one --results-dir")
    names = run_labels([str(d) for d in results_dirs], labels)
    runs = [read_run(d, name) for d, name in zip(results_dirs, names)]
    cells = with_display(labelled(runs, "leaderboard_tasks"), runs)
    if cells.empty:
        raise AnalysisInputError(
            "site: no run has rows in tables/leaderboard_tasks.parquet; build the leaderboard first"
        )
    check_cells(cells)
    board = board_rows(runs)
    audit = labelled(runs, "task_audit")
    models = labelled(runs, "models")
    out = Path(out)
    _prepare_out(out)
    for name in _ASSETS:
        write_text_atomic(
            out / name, resources.files("geneb.site").joinpath("assets").joinpath(name).read_text(encoding="utf-8")
        )
    stamp = (
        f"Built {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC} by geneb {__version__} (geneb site) from "
        + ", ".join(f"{r.label} = {r.results_dir}" for r in runs)
        + ". Methods: docs/analyses.md; this site: docs/site.md."
    )
    intro = note(
        "MCC of a logistic-regression probe on frozen embeddings, per category (macro: mean of the categories). "
        "Choose a run, protocol, regime and category above the table; click a header to sort. Rows feeding a task "
        "that fails the task audit are marked."
    )
    pages = {
        "index.html": page(
            "GENEB leaderboard", [intro, *flag_notes(runs), board_table(board, runs, "board")], generated=stamp
        ),
        "tasks.html": page(
            "Tasks and task audit",
            [
                note(
                    "Per task: the models that scored it, the best full-regime MCC, and the task audit (shortcut: the best "
                    "single-feature AUROC and shortcut model; leakage: test rows with a training homolog)."
                ),
                *([] if len(audit) else [note("no run has a task audit table (tables/task_audit.parquet)", "warn")]),
                task_list(cells, audit, runs),
                heading("Every per-task score"),
                cells_table(cells, runs, "cells", "", by_task=False),
            ],
            generated=stamp,
        ),
        "models.html": page("Models", [model_list(models, cells, runs)], generated=stamp),
        "figures.html": page("Figures", _figures_body(runs, out, captions or {}), generated=stamp),
        "runs.html": page("Runs", _runs_body(runs), generated=stamp),
    }
    for model in sorted(set(board["model"]) | set(cells["model"])):
        pages[f"models/{slug(model)}.html"] = page(
            f"Model {model}", model_page(model, runs, board, cells, models), depth=1, generated=stamp
        )
    tasks = set(cells["task"]) | (set(audit["task"]) if len(audit) else set())
    for task in sorted(tasks):
        pages[f"tasks/{slug(task)}.html"] = page(
            f"Task {task}", task_page(task, runs, cells, audit), depth=1, generated=stamp
        )
    for rel, text in pages.items():
        write_text_atomic(out / rel, text)
    return out / "index.html"


def site_summary(index: Path) -> str:
    """One line saying what was written: the index page and how many model and task pages."""
    root = index.parent
    n_models = len(list((root / "models").glob("*.html")))
    n_tasks = len(list((root / "tasks").glob("*.html")))
    return f"site written: {index} ({n_models} model pages, {n_tasks} task pages); open it in a browser (file://)"
