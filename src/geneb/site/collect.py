"""Reading runs for the site: one run's results folder, the provenance its pages state, and rows of several
runs labelled and merged.

Read one run's results folder for the leaderboard site: its tables, their parquet metadata, the figures, and
the run directory that `scores_inputs.json` records (where the task cards and embedding files are).

Only `tables/leaderboard.parquet` is required; every other table is optional and its absence is stated on the
page that would show it (a run without the task audit, a table older than a column).

What a model's and a task's page state about where their numbers come from, read from a run's own records:

* a model's extraction key (the root attribute of its HDF5 embedding files, `geneb.extract.cache.read_key`):
  the settings hash, the weights' source (kind, hub revision or path, content fingerprint), the weights'
  sha256 as loaded, and the package versions and compute dtype it ran with; the score table's probe
  provenance (embedding key hash, GENEB commit, scikit-learn version);
* a task's card (resources/tasks/{task}/{thash}/card.json), found through the score table's input record;
* the tasks a model left out in a run, and why: a failed cell or task, a contaminated cell, a task the
  leaderboard excludes as flagged, or no score.

Rows of several runs on one site: each labelled by its run, and the rule for a cell two runs both hold.

A cell is one (model, task, regime, protocol) score, plus the view where the table has a `view` column. Two runs
may hold the same cell (a run repeated, or a second run adding models to the first): the site shows it once per
run, and requires the runs to agree on it, to `_CELL_TOLERANCE`. A cell whose values differ is refused
(`SiteConflictError`), naming the cell, the runs and their values: the site would otherwise show two answers to
one question without saying which is right. The category rows of the leaderboard are not compared: they
are means over each run's own set of tasks, and are shown per run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.analysis.ranking import attach_rank_intervals
from geneb.core import integrity
from geneb.core.logs import failure_reason
from geneb.report import runcard
from geneb.report.runcard import recorded_inputs
from geneb.tables.freshness import INPUTS_NAME
from geneb.tables.scores import FAILED_CELLS_ATTR, FAILED_TASKS_ATTR, AnalysisInputError

#: the optional tables a run's site pages read (results/tables/{name}.parquet)
_OPTIONAL_TABLES = (
    "leaderboard_tasks",
    "task_audit",
    "models",
    "rank_intervals",
    "contamination",
    "scores",
    # the other tracks, on the model and task pages
    "zeroshot_leaderboard",
    "zeroshot_shortcuts",
    "finetune_vs_probe",
    "pretraining_gain",
    "cost",
)
#: figure files copied into the site, by preference (the report's PNGs; an SVG where a run has one)
_FIGURE_SUFFIXES = (".svg", ".png")


@dataclass
class RunTables:
    """One results folder read for the site.

    label: the run's name on the site (unique among the runs); results_dir: the folder given; tables: {name:
    frame} of the tables present (leaderboard always); attrs: the leaderboard's parquet metadata (failed tasks and
    cells, task flags); summary: analysis_summary.json ({} without it); inputs: scores_inputs.json ({} without it);
    figures: {name: path} of the figure files found under results_dir/figures.
    """

    label: str
    results_dir: Path
    tables: dict[str, pd.DataFrame]
    attrs: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)

    def table(self, name: str) -> pd.DataFrame | None:
        """The table `name`, or None when the run has none."""
        return self.tables.get(name)

    @property
    def root(self) -> Path | None:
        """The run directory the score table's inputs are relative to (None when not recorded or gone)."""
        root = self.inputs.get("root")
        return Path(root) if root and Path(root).is_dir() else None

    def input_files(self, prefix: str, suffix: str) -> list[Path]:
        """The recorded score-table inputs under `prefix` ending in `suffix`, as paths under `root`."""
        return recorded_inputs(self.inputs, prefix, suffix)

    @property
    def failed_tasks(self) -> dict[str, dict[str, str]]:
        """{task: {category, error}} of the run's failed tasks (the leaderboard's metadata)."""
        return dict(self.attrs.get(FAILED_TASKS_ATTR) or {})

    @property
    def failed_cells(self) -> dict[str, dict[str, dict[str, str]]]:
        """{model: {task: {category, error}}} of the run's failed (model, task) cells."""
        return dict(self.attrs.get(FAILED_CELLS_ATTR) or {})


def _json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        out = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise AnalysisInputError(f"site: {path} is not readable JSON ({err})") from err
    return out if isinstance(out, dict) else {}


def read_run(results_dir: str | Path, label: str) -> RunTables:
    """The tables, metadata and figures of the results folder `results_dir` (a config's `results_dir`, e.g.
    results), named `label`. Raises AnalysisInputError when it has no tables/leaderboard.parquet, or a table
    fails its content digest (`geneb.core.integrity`)."""
    root = Path(results_dir)
    tables_dir = root / "tables"
    board_path = tables_dir / "leaderboard.parquet"
    if not board_path.exists():
        raise AnalysisInputError(
            f"site: run {label!r}: {board_path} not found; build the leaderboard first (snakemake leaderboard)"
        )
    board = integrity.read_parquet(board_path)
    tables = {"leaderboard": board}
    for name in _OPTIONAL_TABLES:
        path = tables_dir / f"{name}.parquet"
        if path.exists():
            tables[name] = integrity.read_parquet(path)
    figures: dict[str, Path] = {}
    fig_dir = root / "figures"
    if fig_dir.is_dir():
        for suffix in reversed(_FIGURE_SUFFIXES):  # the preferred suffix last, so it wins
            for f in sorted(fig_dir.glob(f"*{suffix}")):
                figures[f.stem] = f
    return RunTables(
        label=label,
        results_dir=root,
        tables=tables,
        attrs={str(k): v for k, v in board.attrs.items()},
        summary=_json(tables_dir / "analysis_summary.json"),
        inputs=_json(tables_dir / INPUTS_NAME),
        figures=figures,
    )


def run_labels(results_dirs: list[str], labels: list[str] | None) -> list[str]:
    """The label of each results folder: `labels` when given (one per folder), else the folder's name, made
    unique by its parent's name where two folders share a name. Raises AnalysisInputError for a count mismatch or
    a repeated label."""
    if labels:
        if len(labels) != len(results_dirs):
            raise AnalysisInputError(f"site: {len(labels)} --label for {len(results_dirs)} --results-dir")
        out = list(labels)
    else:
        paths = [Path(d).resolve() for d in results_dirs]
        out = [p.name for p in paths]
        out = [f"{p.parent.name}/{p.name}" if out.count(p.name) > 1 else p.name for p in paths]
    repeated = sorted({x for x in out if out.count(x) > 1})
    if repeated:
        raise AnalysisInputError(f"site: run label(s) {repeated} given to more than one --results-dir")
    return out


def extraction_records(run: RunTables, model: str) -> list[dict[str, Any]]:
    """`runcard.extraction_records` of `model`'s embedding files recorded by `run`'s score table ([] when the run
    records none or they are not on disk: a results folder copied without resources/)."""
    return runcard.extraction_records(runcard.embedding_files(run.inputs, model))


def probe_provenance(run: RunTables, model: str) -> dict[str, str]:
    """`runcard.probe_provenance` of `model` in the run's score table ({} without one)."""
    return runcard.probe_provenance(run.table("scores"), model)


def task_card(run: RunTables, task: str) -> dict[str, Any] | None:
    """The card of `task` that `run`'s score table was computed from (the first, when the run prepared it under
    several settings), or None when not recorded or not on disk."""
    for path in run.input_files(f"resources/tasks/{task}/", "card.json"):
        try:
            card = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(card, dict):
            card["_path"] = str(path)
            return card
    return None


def card_facts(card: dict[str, Any]) -> dict[str, Any]:
    """The facts of a task card a task page shows (docs/data-dictionary.md, stage 1), flattened to text."""
    facts: dict[str, Any] = {k: card.get(k) for k in ("task", "category", "task_set", "taxon_group", "source")}
    facts["classes"] = f"{card.get('n_classes')} ({', '.join(map(str, card.get('classes') or []))})"
    if card.get("label_names"):
        facts["label names"] = ", ".join(f"{k}: {v}" for k, v in card["label_names"].items())
    for split, s in (card.get("splits") or {}).items():
        counts = ", ".join(f"{k}: {v}" for k, v in (s.get("class_counts") or {}).items())
        facts[f"{split} rows"] = f"{s.get('n')} of {s.get('n_source')} (per class {counts})"
        facts[f"{split} length"] = f"{s.get('len_min')}–{s.get('len_max')} nt, median {s.get('len_median')}"
        facts[f"{split} duplicate rows"] = s.get("n_duplicate_rows")
    overlap = card.get("train_test_overlap") or {}
    facts["train/test overlap"] = ", ".join(
        f"{k} {overlap[k]}" for k in ("exact", "case_only", "reverse_complement", "label_conflicts") if k in overlap
    )
    caps = card.get("caps") or {}
    facts["caps"] = "; ".join(f"{k}: {v.get('n_kept')} of {v.get('n_source')} kept" for k, v in caps.items()) or "none"
    facts["data hash"] = card.get("data_hash")
    facts["card"] = card.get("_path")
    return facts


def left_out(run: RunTables, model: str, cells: pd.DataFrame) -> pd.DataFrame:
    """The tasks of `run` that `model` has no score of, one row per (task, why): task, category, why. `cells`:
    the run's leaderboard_tasks rows (every model). A task counts as the run's when any model has it, or it
    failed. Why: the failed cell's or task's error, "contaminated: <reason>", "excluded from the ranking as
    flagged (<kinds>)", or "no score in this run (not configured for this model)"."""
    tasks: dict[str, str] = {}
    if len(cells):
        tasks.update(dict(zip(cells["task"], cells["category"].astype(str))))
    for task, rec in run.failed_tasks.items():
        tasks.setdefault(task, str(rec.get("category", "")))
    mine = cells[cells["model"] == model] if len(cells) else cells
    scored = set(mine.loc[mine["value"].notna(), "task"]) if len(mine) else set()
    failed_cells = run.failed_cells.get(model, {})
    contamination = run.table("contamination")
    rows = []
    for task, category in sorted(tasks.items()):
        if task in scored:
            continue
        if task in run.failed_tasks:
            why = f"the task failed in this run: {failure_reason(run.failed_tasks[task].get('error'))}"
        elif task in failed_cells:
            why = f"failed for this model: {failure_reason(failed_cells[task].get('error'))}"
        elif (
            contamination is not None
            and len(contamination)
            and (hit := contamination[(contamination["model"] == model) & (contamination["task"] == task)]).shape[0]
        ):
            why = f"contaminated: {hit['contamination_reason'].iloc[0] if 'contamination_reason' in hit else ''}"
        else:
            why = "no score in this run (not configured for this model)"
        rows.append({"run": run.label, "task": task, "category": category, "why": why})
    board = run.table("leaderboard")
    if board is not None and "excluded_tasks" in board.columns:
        b = board[(board["model"] == model) & (board["category"] == "macro")]
        for task in sorted({t for v in b["excluded_tasks"].fillna("") for t in str(v).split(",") if t}):
            rows.append(
                {
                    "run": run.label,
                    "task": task,
                    "category": tasks.get(task, ""),
                    "why": "scored, but left out of the ranking as flagged by the task audit (leaderboard.exclude_flagged)",
                }
            )
    return pd.DataFrame(rows, columns=["run", "task", "category", "why"])


#: the largest |difference| of two runs' values of one cell that counts as the same value (MCC units; the
#: tables store float64 seed means, so a repeated run reads back the same number)
_CELL_TOLERANCE = 1e-9
#: the keys of a cell
_CELL_KEYS = ("model", "task", "regime", "protocol")
#: conflicts named in the error message
_SHOWN_CONFLICTS = 10


class SiteConflictError(AnalysisInputError):
    """Two runs given to one site hold the same cell with different values."""


def labelled(runs: list[RunTables], name: str) -> pd.DataFrame:
    """The table `name` of every run that has it, concatenated, with a first column `run` (the run's label).
    Empty (no columns) when no run has it."""
    parts = []
    for run in runs:
        t = run.table(name)
        if t is not None and len(t):
            parts.append(t.assign(run=run.label)[["run", *t.columns]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _cell_keys(cells: pd.DataFrame) -> list[str]:
    """The key columns of a cell in `cells`: CELL_KEYS, and `view` where present."""
    return [*_CELL_KEYS, *(["view"] if "view" in cells.columns else [])]


def check_cells(cells: pd.DataFrame) -> None:
    """Raise SiteConflictError when two runs of `cells` (labelled rows of leaderboard_tasks: run, the cell keys,
    value) hold one cell with values more than CELL_TOLERANCE apart (one NaN and one number differ too), naming
    the first SHOWN_CONFLICTS cells, their runs and values, and the count."""
    if cells.empty or cells["run"].nunique() < 2:
        return
    keys = _cell_keys(cells)
    conflicts = []
    for key, g in cells.groupby(keys, sort=True, dropna=False):
        if g["run"].nunique() < 2:
            continue
        v = g["value"].astype(float)
        nan = v.isna()
        if (nan.any() and not nan.all()) or (not nan.all() and v.max() - v.min() > _CELL_TOLERANCE):
            cell = ", ".join(f"{k}={x}" for k, x in zip(keys, key))
            values = "; ".join(f"{r}: {x:.6f}" for r, x in zip(g["run"], v))
            conflicts.append(f"({cell}) {values}")
    if conflicts:
        shown = "\n".join(f"- {c}" for c in conflicts[:_SHOWN_CONFLICTS])
        more = f"\n... and {len(conflicts) - _SHOWN_CONFLICTS} more" if len(conflicts) > _SHOWN_CONFLICTS else ""
        raise SiteConflictError(
            f"site: {len(conflicts)} (model, task, regime, protocol) cell(s) differ between the runs given; a site "
            f"shows one value per cell, so give runs that agree (or one of them):\n{shown}{more}"
        )


def board_rows(runs: list[RunTables]) -> pd.DataFrame:
    """The leaderboard rows of every run, labelled by run, with `of` and each row's bootstrap rank interval
    (`rank_low`, `rank_high`, `p_top1`, the value's `ci_low` / `ci_high` and `interval_reason`) from the run's
    rank_intervals where it ranks the model over the same models as the leaderboard
    (`ranking.attach_rank_intervals`), and the model's display name."""
    board = labelled(runs, "leaderboard")
    ri = labelled(runs, "rank_intervals")
    if board.empty or "rank" not in board.columns:
        return with_display(board, runs)
    keys = ["run", "protocol", "regime", "category"]
    return with_display(attach_rank_intervals(board, ri if len(ri) else None, keys), runs)


def with_display(df: pd.DataFrame, runs: list[RunTables]) -> pd.DataFrame:
    """`df` with a `display` column after `model`: the models table's display name (the id where none)."""
    if df.empty or "model" not in df.columns:
        return df
    names: dict[str, str] = {}
    for run in runs:
        m = run.table("models")
        if m is not None and "display" in m.columns:
            names.update({k: v for k, v in zip(m["model"], m["display"]) if isinstance(v, str) and v})
    out = df.drop(columns=[c for c in ("display",) if c in df.columns])
    out.insert(list(out.columns).index("model") + 1, "display", [names.get(m, m) for m in out["model"]])
    return out
