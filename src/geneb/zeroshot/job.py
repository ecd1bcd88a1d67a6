"""The zero-shot workflow jobs (rules build_zeroshot_task, score_zeroshot, zeroshot_baselines; docs/zeroshot.md):
each reads its inputs, checks them and writes one file with a content digest (`geneb.core.integrity`), so a later
step never reads a changed or half-written score file unchecked.

A score file (`_write_score_file`) is the `RowScores` rows of every scorer of one (model or baseline, task), long
format, with columns `row, scorer, score`; its parquet metadata (`_SCORE_FILE_ATTR`) records what made it: the model,
the task's name and `data_sha256`, the settings hash, the scorers asked for, what did not apply and why, the model's
identity, versions and seconds. `read_score_file` checks the digest and that the rows belong to the task as read.

Torch-free at import (the model's family imports torch when it loads).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from geneb import __version__
from geneb.core import integrity
from geneb.core.provenance import package_versions
from geneb.zeroshot.scorers import Background, check_background, fit_markov, markov_scores
from geneb.zeroshot.task import ROW_SCORE_COLUMNS, SCORE_FILE_VERSION, NotApplicable, ZeroShotTask, check_row_scores

_log = logging.getLogger(__name__)

#: the parquet metadata key (pandas `attrs`) of a score file's provenance
_SCORE_FILE_ATTR = "geneb_zeroshot"


class ZeroShotFileError(ValueError):
    """A score file that does not belong to the task it is read for (another task's rows or data)."""


@dataclass(frozen=True)
class ScoreFile:
    """One score file as read: `scores` (row, scorer, score), the provenance and what did not apply."""

    model: str
    task: str
    scores: pd.DataFrame
    not_applicable: tuple[NotApplicable, ...]
    provenance: Mapping[str, Any]


def _write_score_file(
    out: str | Path,
    task: ZeroShotTask,
    model: str,
    frames: Sequence[pd.DataFrame],
    not_applicable: Sequence[NotApplicable],
    provenance: Mapping[str, Any],
) -> None:
    """Write the RowScores `frames` of one (model, task) and what did not apply to `out` (parquet with a digest).
    Every frame is checked against the task (`check_row_scores`) first; nothing is written when one fails."""
    for frame in frames:
        check_row_scores(task, frame)
    table = (
        pd.concat([f[list(ROW_SCORE_COLUMNS)] for f in frames], ignore_index=True)
        if frames
        else pd.DataFrame(
            {"row": pd.Series(dtype="int64"), "scorer": pd.Series(dtype=str), "score": pd.Series(dtype=float)}
        )
    )
    table.attrs[_SCORE_FILE_ATTR] = json.dumps(
        {
            **provenance,
            "version": SCORE_FILE_VERSION,
            "model": model,
            "task": task.name,
            "kind": task.kind,
            "data_sha256": task.data_sha256,
            "n_rows": task.n,
            "not_applicable": [asdict(n) for n in not_applicable],
            "geneb_version": __version__,
            "host": socket.gethostname(),
        },
        sort_keys=True,
        default=str,
    )
    integrity.write_parquet(table, out)


def read_score_file(path: str | Path, task: ZeroShotTask) -> ScoreFile:
    """Read a score file for `task`, its digest checked (`integrity.read_parquet`). Raises ZeroShotFileError when
    it was written for another task or other task data (its `data_sha256`), or its rows break the RowScores
    contract for any scorer."""
    table = integrity.read_parquet(path)
    meta = json.loads(table.attrs.get(_SCORE_FILE_ATTR, "{}"))
    if meta.get("task") != task.name or meta.get("data_sha256") != task.data_sha256:
        raise ZeroShotFileError(
            f"{path}: scores of task {meta.get('task')!r} (data {meta.get('data_sha256')!r}), read for task "
            f"{task.name!r} (data {task.data_sha256!r}); delete it and rerun"
        )
    for _, part in table.groupby("scorer", sort=False):
        try:
            check_row_scores(task, part.reset_index(drop=True))
        except ValueError as exc:
            raise ZeroShotFileError(f"{path}: {exc}") from exc
    na = tuple(NotApplicable(**n) for n in meta.get("not_applicable", []))
    return ScoreFile(str(meta["model"]), task.name, table.reset_index(drop=True), na, meta)


# ---- rule jobs -------------------------------------------------------------------------------------------------


def _score_model_job(
    settings: Mapping[str, Any],
    task: ZeroShotTask,
    out: str | Path,
    *,
    scoring: Mapping[str, Any],
    execution: Mapping[str, Any],
    threads: int,
    checks_dir: str | Path,
) -> None:
    """Rule score_zeroshot: load the model once (its load-time checks, or a matching record in `checks_dir`),
    run its scorers on `task` and write the score file. scoring: the rule's params (`settings_hash`, `scorers`:
    config names "llr" / "embedding", `lm_head`); execution: the config's execution knobs."""
    from geneb.extract.step import load_model
    from geneb.zeroshot.scorers import score_with
    from geneb.zeroshot.task import ZeroShotModel

    t0 = time.perf_counter()
    loaded = load_model(
        dict(settings),
        checks_dir=checks_dir,
        device=execution["device"],
        batch_size=execution["batch_size"],
        batch_tokens=execution["batch_tokens"],
        threads=threads,
        progress=False,
    )
    typed = loaded.settings
    model = ZeroShotModel(
        typed.model, loaded.encoder, rc=typed.extraction.rc, settings=typed, lm_head=str(scoring["lm_head"])
    )
    frames, declined = score_with(model, task, scoring["scorers"])
    seconds = time.perf_counter() - t0
    _log.info(
        "model %s, zero-shot task %s: %d scorer column(s), %d not applicable, %.1f s (load %.1f s)",
        typed.model,
        task.name,
        len(frames),
        len(declined),
        seconds,
        loaded.seconds_load,
    )
    _write_score_file(
        out,
        task,
        typed.model,
        frames,
        declined,
        {
            "settings_hash": loaded.settings_hash,
            "scorers_requested": list(scoring["scorers"]),
            "identity": loaded.identity,
            "versions": package_versions(),
            "seconds": round(seconds, 3),
            "seconds_load": round(loaded.seconds_load, 3),
        },
    )


def _background_from_splits(splits: Mapping[str, str | Path]) -> Background:
    """The Markov background of probing tasks' prepared training splits {task: train.parquet} (digests checked):
    every training sequence, the task ids declared. Raises ValueError when `splits` is empty."""
    if not splits:
        raise ValueError(
            "the Markov baselines need a background: config zeroshot.background (or the run's tasks) names no task "
            "left once the zero-shot task's own source tasks are taken out"
        )
    sequences: list[str] = []
    for path in splits.values():
        sequences += integrity.read_parquet(path, columns=["sequence"])["sequence"].astype(str).tolist()
    return Background(tasks=tuple(splits), sequences=tuple(sequences))


def _baselines_job(
    task: ZeroShotTask,
    background: Mapping[str, str | Path],
    out: str | Path,
    *,
    orders: Sequence[int],
    pseudocount: float,
) -> None:
    """Rule zeroshot_baselines: fit the k-mer Markov chains of `orders` on the background splits and write the
    scores of `task` (model `markov`, one scorer per order). Raises BackgroundLeakError when the background
    includes the task or its source tasks (the plan leaves them out; a hand-made config cannot put them back).
    The check by name misses a task cut from the same genome under another name, so the background sequences that
    share a 31-mer with the task's rows (`geneb.zeroshot.overlap.content_overlap`, either strand) are also left
    out; the counts are in the score file's provenance and the log."""
    from geneb.zeroshot.overlap import content_overlap

    t0 = time.perf_counter()
    bg = _background_from_splits(background)
    check_background(task, bg)
    overlap = content_overlap(task, bg.sequences)
    _log.info("zero-shot task %s, Markov background by content: %s", task.name, overlap.describe())
    if overlap.reference_sharing:
        dropped = set(overlap.reference_sharing)
        bg = Background(tasks=bg.tasks, sequences=tuple(s for i, s in enumerate(bg.sequences) if i not in dropped))
    frames = [markov_scores(task, fit_markov(bg, order, pseudocount=pseudocount), bg) for order in orders]
    _write_score_file(
        out,
        task,
        BASELINE_MODEL,
        frames,
        (),
        {
            "background_tasks": list(bg.tasks),
            "background_sequences": len(bg.sequences),
            "background_content_check": {
                "k": overlap.k,
                "sequences_left_out_sharing_kmer": len(overlap.reference_sharing),
                "sequences_held_whole_by_rows": len(overlap.reference_contained),
                "rows_sharing_kmer": len(overlap.rows_sharing),
                "rows_holding_whole_sequence": len(overlap.rows_containing),
            },
            "orders": list(orders),
            "pseudocount": pseudocount,
            "seconds": round(time.perf_counter() - t0, 3),
        },
    )


#: the `model` of the Markov baselines' score files; in the tables each order is its own entry, named by its scorer
BASELINE_MODEL = "markov"


# ---- rule entry points (the shims call these) ------------------------------------------------------------------


def task_of_rows_file(rows_file: str | Path) -> ZeroShotTask:
    """The zero-shot task of a rows.tsv under resources/zeroshot/tasks/{zstask}/{zthash}/, read and checked."""
    from geneb.zeroshot.task import read_zeroshot_task

    folder = Path(rows_file).parent
    return read_zeroshot_task(folder, name=folder.parent.name)


def run_score_rule(
    settings: Mapping[str, Any],
    rows_file: str | Path,
    out: str | Path,
    *,
    scoring: Mapping[str, Any],
    execution: Mapping[str, Any],
    threads: int,
    checks_dir: str | Path,
    config: dict[str, Any],
    log_file: str,
) -> None:
    """Rule score_zeroshot (`_score_model_job`), in the model's env as extraction runs it: here, or on the venv
    route for a model of a non-default env (`geneb.extract.job.model_interpreter`) by `python -m
    geneb.zeroshot.job` in that env's venv, which appends to `log_file` (the shim has called `log_to_file`).
    `checks_dir` is the folder of the model's embeddings under its settings hash
    (`geneb.run.layout.model_embeddings_dir`), so a model whose embeddings were extracted takes their load-time
    checks record instead of probing again. Raises what `_score_model_job` raises (here), EnvError naming `geneb
    env build NAME` for an env not built, and SystemExit with the child's status when the job in the venv fails
    (its error is the log's last line)."""
    import subprocess

    from geneb.core.envs import DEFAULT_ENV
    from geneb.extract.batch_plan import ExecutionOptions
    from geneb.extract.job import model_interpreter

    request = {
        "settings": dict(settings),
        "rows_file": str(rows_file),
        "out": str(out),
        "scoring": dict(scoring),
        "execution": dict(execution),
        "threads": threads,
        "checks_dir": str(checks_dir),
        "log": log_file,
    }
    env, python, child_env = model_interpreter(config, str(settings["model"]), ExecutionOptions.of(execution))
    if env == DEFAULT_ENV:
        _score_request(request)
        return
    _log.info("model %s: zero-shot scoring in env %s (%s)", settings["model"], env, python)
    for handler in logging.getLogger().handlers:
        handler.flush()
    res = subprocess.run([python, "-m", "geneb.zeroshot.job"], input=json.dumps(request), text=True, env=child_env)
    if res.returncode:
        raise SystemExit(res.returncode)


def _score_request(request: Mapping[str, Any]) -> None:
    _score_model_job(
        request["settings"],
        task_of_rows_file(request["rows_file"]),
        request["out"],
        scoring=request["scoring"],
        execution=request["execution"],
        threads=int(request["threads"]),
        checks_dir=request["checks_dir"],
    )


def _main() -> None:
    """`python -m geneb.zeroshot.job`: read one score_zeroshot request (JSON, stdin), append to its log, score."""
    import sys

    from geneb.core.logs import log_to_file

    request = json.loads(sys.stdin.read())
    log_to_file(request["log"], append=True)
    _score_request(request)


def run_baselines_rule(
    rows_file: str | Path, background_files: Sequence[str | Path], out: str | Path, params: Mapping[str, Any]
) -> None:
    """Rule zeroshot_baselines: params["background"] is {task: preparation hash} in the order of
    `background_files` (`geneb.zeroshot.plan.ZeroShotPlan.baseline_inputs`). Raises ValueError when the two disagree."""
    tasks = list(params["background"])
    if len(tasks) != len(background_files):
        raise ValueError(f"zero-shot baselines: {len(tasks)} background tasks but {len(background_files)} files")
    for task, path in zip(tasks, background_files):
        if Path(path).parents[1].name != task:
            raise ValueError(f"zero-shot baselines: background file {path} is not task {task}'s")
    _baselines_job(
        task_of_rows_file(rows_file),
        dict(zip(tasks, background_files)),
        out,
        orders=params["orders"],
        pseudocount=params["pseudocount"],
    )


def run_build_rule(task_params: Mapping[str, Any], rows_out: str | Path, *, config: Mapping[str, Any]) -> None:
    """Rule build_zeroshot_task: build the catalogued task (`geneb.zeroshot.build.build_into`, seed
    task_params["seed"]) from the mirror folder config zeroshot.build_source (else task_source; $GENEB_TASK_SOURCE
    wins), or fetch a `source` task from config zeroshot.task_source and write it, checked, into the folder of
    `rows_out`. Raises what the builder or source raises (bad rows named by task, row and value)."""
    from geneb.tasks.sources import resolve_source_string
    from geneb.zeroshot.build import build_into
    from geneb.zeroshot.task import SOURCE_BUILDER, CatalogueEntry, load_zeroshot_task, write_zeroshot_task

    raw = dict(task_params["entry"])
    entry = CatalogueEntry(**{**raw, "source_tasks": tuple(raw["source_tasks"])})
    folder = Path(rows_out).parent
    zs = config["zeroshot"]
    if entry.builder == SOURCE_BUILDER:
        task = load_zeroshot_task(zs["task_source"], entry.task, download_dir="resources/downloads")
        write_zeroshot_task(folder, task.rows, dict(task.meta))
        _log.info(
            "zero-shot task %s: %d rows from %s (data %s)", entry.task, task.n, zs["task_source"], task.data_sha256
        )
        return
    # an explicit zeroshot.build_source is used as given; otherwise the run's task source ($GENEB_TASK_SOURCE wins)
    root = zs["build_source"] or resolve_source_string(config["task_source"])
    built = build_into(entry, root, folder, int(task_params["seed"]))
    _log.info(
        "zero-shot task %s: built by %s (seed %s) from %s: %d rows (data %s)",
        entry.task,
        entry.builder,
        task_params["seed"],
        ", ".join(entry.source_tasks),
        built.n,
        built.data_sha256,
    )


if __name__ == "__main__":
    _main()
