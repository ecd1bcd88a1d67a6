"""The zero-shot tables (rule zeroshot_tables): every score file of the run -> metrics, per-row scores, the
leaderboard, the rank correlation with the probe leaderboard and the not-applicable list (docs/zeroshot.md).

* `zeroshot_scores.parquet`: one row per (model, task, scorer, metric, group): `geneb.zeroshot.metrics` columns
  (value, ci_low, ci_high, n, p_value, n_boot, seed, note, ...) plus provenance: the score file's sha256
  (`scores_sha256`), the task's `data_sha256`, the model's `settings_hash`, `geneb_version`;
* `zeroshot_row_scores.parquet`: model, task, row, scorer, score (every score the metrics were computed from);
* `zeroshot_leaderboard.parquet`, `zeroshot_vs_probe.parquet`: `geneb.zeroshot.board`;
* `zeroshot_not_applicable.parquet`: model, task, scorer, reason.

The Markov baselines enter every table as entries of their own: model `markov-<order>`, scorer `markov-<order>`.
Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from geneb.core import integrity
from geneb.zeroshot.board import zeroshot_leaderboard, zeroshot_vs_probe
from geneb.zeroshot.job import BASELINE_MODEL, read_score_file
from geneb.zeroshot.metrics import METRIC_COLUMNS, score_metrics
from geneb.zeroshot.task import ZeroShotTask

NOT_APPLICABLE_COLUMNS = ("model", "task", "scorer", "reason")
#: what the report's zero-shot section reads (geneb.report.sections), in the order the report rule passes them
ZEROSHOT_REPORT_INPUTS = ("zeroshot_leaderboard", "zeroshot_vs_probe", "zeroshot_not_applicable", "zeroshot_figure")
PROVENANCE_COLUMNS = ("scores_sha256", "data_sha256", "settings_hash", "geneb_version")


@dataclass(frozen=True)
class ZeroShotTables:
    """The five tables of one run (module docstring)."""

    scores: pd.DataFrame
    row_scores: pd.DataFrame
    leaderboard: pd.DataFrame
    vs_probe: pd.DataFrame
    not_applicable: pd.DataFrame


def zeroshot_tables(
    tasks: Sequence[ZeroShotTask],
    score_files: Sequence[str | Path],
    probe_leaderboard: pd.DataFrame,
    *,
    n_boot: int,
    seed: int,
) -> ZeroShotTables:
    """Read every score file (each checked against its task: `read_score_file`) and compute the tables.

    tasks: the configured zero-shot tasks (each score file names one of them); score_files: the models' and the
    baselines' files; probe_leaderboard: leaderboard.parquet. Raises ValueError naming a score file of a task that
    is not configured, and what `read_score_file` raises.
    """
    by_name = {t.name: t for t in tasks}
    metrics, rows, declined = [], [], []
    for path in score_files:
        meta_task = _task_of(path)
        if meta_task not in by_name:
            raise ValueError(f"{path}: scores of zero-shot task {meta_task!r}, which this run does not configure")
        task = by_name[meta_task]
        read = read_score_file(path, task)
        provenance = {
            "scores_sha256": integrity.recorded_digest(path) or integrity.sha256_file(path),
            "data_sha256": task.data_sha256,
            "settings_hash": str(read.provenance.get("settings_hash", "")),
            "geneb_version": str(read.provenance.get("geneb_version", "")),
        }
        for scorer, part in read.scores.groupby("scorer", sort=True):
            model = str(scorer) if read.model == BASELINE_MODEL else read.model
            frame = part.reset_index(drop=True)
            metrics.append(score_metrics(task, frame, n_boot=n_boot, seed=seed).assign(model=model, **provenance))
            rows.append(frame.assign(model=model, task=task.name))
        declined += [asdict(n) for n in read.not_applicable]
    metric_table = (
        pd.concat(metrics, ignore_index=True)
        if metrics
        else pd.DataFrame(columns=["model", *METRIC_COLUMNS, *PROVENANCE_COLUMNS])
    )
    metric_table = metric_table[["model", *METRIC_COLUMNS, *PROVENANCE_COLUMNS]]
    row_table = (
        pd.concat(rows, ignore_index=True)[["model", "task", "row", "scorer", "score"]]
        if rows
        else pd.DataFrame(columns=["model", "task", "row", "scorer", "score"])
    )
    na = pd.DataFrame(declined, columns=list(NOT_APPLICABLE_COLUMNS))
    board = zeroshot_leaderboard(metric_table, {t.name: t.kind for t in tasks}, na)
    vs = zeroshot_vs_probe(board, probe_leaderboard, n_boot=n_boot, seed=seed)
    return ZeroShotTables(metric_table, row_table, board, vs, na)


def _task_of(path: str | Path) -> str:
    """The task a score file is for: resources/zeroshot/{scores/<model>/<xhash>|baselines}/<task>/<hash>.parquet."""
    return Path(path).parent.name


def write_zeroshot_tables(tables: ZeroShotTables, outputs: Mapping[str, str | Path]) -> None:
    """Write each table to outputs[name] (names: scores, row_scores, leaderboard, vs_probe, not_applicable)."""
    for name in ("scores", "row_scores", "leaderboard", "vs_probe", "not_applicable"):
        integrity.write_parquet(getattr(tables, name).reset_index(drop=True), outputs[name])


def run_tables_rule(
    *,
    rows: Sequence[str | Path],
    score_files: Sequence[str | Path],
    leaderboard: str | Path,
    outputs: Mapping[str, str | Path],
    bootstrap: Mapping[str, int],
) -> None:
    """Rule zeroshot_tables: read the tasks (their rows.tsv under resources/zeroshot/tasks/{zstask}/{zthash}/),
    every score file and the probe leaderboard, and write the five tables (`write_zeroshot_tables`)."""
    from geneb.zeroshot.job import task_of_rows_file

    tasks = [task_of_rows_file(r) for r in rows]
    probe = integrity.read_parquet(leaderboard)
    tables = zeroshot_tables(tasks, score_files, probe, n_boot=int(bootstrap["n_boot"]), seed=int(bootstrap["seed"]))
    write_zeroshot_tables(tables, outputs)
