"""Read one run's results folder for the leaderboard site: its tables, their parquet metadata, the figures, and
the run directory that `scores_inputs.json` records (where the task cards and embedding files are).

Only `tables/leaderboard.parquet` is required; every other table is optional and its absence is stated on the
page that would show it (a run without the task audit, a table older than a column).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.core import integrity
from geneb.report.runcard import recorded_inputs
from geneb.tables.freshness import INPUTS_NAME
from geneb.tables.scores import FAILED_CELLS_ATTR, FAILED_TASKS_ATTR, AnalysisInputError

#: the optional tables a run's site pages read (results/tables/{name}.parquet)
OPTIONAL_TABLES = ("leaderboard_tasks", "task_audit", "models", "rank_intervals", "contamination", "scores")
#: figure files copied into the site, by preference (the report's PNGs; an SVG where a run has one)
FIGURE_SUFFIXES = (".svg", ".png")


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
    for name in OPTIONAL_TABLES:
        path = tables_dir / f"{name}.parquet"
        if path.exists():
            tables[name] = integrity.read_parquet(path)
    figures: dict[str, Path] = {}
    fig_dir = root / "figures"
    if fig_dir.is_dir():
        for suffix in reversed(FIGURE_SUFFIXES):  # the preferred suffix last, so it wins
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
