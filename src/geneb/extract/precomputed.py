"""Family `precomputed`: vectors computed elsewhere, checked and copied into GENEB's embedding cache, so that every
protocol probes them exactly as extracted ones (docs/adding-a-model.md, "I have vectors").

A registry entry `family: precomputed`, `source: {kind: local, path: <folder>}` names a folder holding, per task,
either `<folder>/<task>/<split>.npy` (a float array (n_rows, d), one row per row of the task's source split file,
in the file's order, before any cap: GENEB picks the rows a cap keeps by their row ids, the prepared parquet's
`row`), or `<folder>/<task>.h5` in GENEB's own cache layout (`geneb.extract.cache`: per split `embeddings` and the
`row` ids they belong to; every prepared row id must be there).

`import_task` is the extraction job of such a model: it checks the files against the prepared task and raises
`PrecomputedError` naming every problem of every split at once, each with its file and row ids (a missing task or
split, a row count other than the source split's with the rows it lacks or adds, a non-float or non-2-D array,
non-finite values with their rows and the first one's column, widths that differ between splits, row ids the HDF5
file lacks, holds twice or that no source row has); no check waits for another to pass, then writes the cache file with the files' sha256 in its extraction key
(provenance: `encoder.encoder = precomputed`), so a changed file changes the key hash every score row carries.
Torch-free.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.core.errors import ExtractionError
from geneb.core.provenance import package_versions
from geneb.extract.cache import (
    CacheError,
    SplitEmbeddings,
    key_hash,
    read_embeddings,
    read_key,
    write_embeddings,
)
from geneb.registry.load import extraction_hash
from geneb.registry.spec import ExtractionSettings, SettingsLike
from geneb.tasks.prepare import TaskCard, read_card

_log = logging.getLogger(__name__)
#: how many row ids one problem lists (the count of all follows)
_SHOWN_IDS = 10


class PrecomputedError(ExtractionError):
    """Precomputed vectors that do not fit their task; the message lists every problem found, each naming the
    model, task, split (and row) and the fix."""


class PrecomputedVectors:
    """What family precomputed's entry point builds: it meets the `Encoder` protocol, has no load-time checks, and
    embeds nothing (its vectors are keyed by a task's source rows, not by sequences): `import_task` reads them."""

    load_check_names: tuple[str, ...] = ()

    def __init__(self, settings: ExtractionSettings) -> None:
        self.model = settings.model
        self.folder = settings.source.path
        self.extraction = None

    def identity(self) -> dict[str, Any]:
        """{"encoder": "precomputed"}: the files' fingerprints are in each cache file's key (`import_task`)."""
        return {"encoder": "precomputed"}

    def run_load_checks(self) -> tuple[str, ...]:
        """No model, nothing to probe: ()."""
        return self.load_check_names

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> Any:
        """Refused: raises TypeError naming the model and where its vectors are read."""
        raise TypeError(
            f"model {self.model}: family precomputed embeds no sequences; its vectors in {self.folder} are read per "
            "task by geneb.extract.precomputed.import_task (the workflow's extraction job, geneb.evaluate)"
        )


def from_settings(settings: ExtractionSettings, **_: Any) -> PrecomputedVectors:
    """Family entry point (geneb.registry.families): a `PrecomputedVectors`."""
    return PrecomputedVectors(settings)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _ids_text(ids: list[int] | np.ndarray, shown: int = _SHOWN_IDS) -> str:
    """'row 3' / 'rows 3, 7, 9' / 'rows 3, 7, ..., (120 rows)': the first `shown` ids, then the count."""
    ids = [int(v) for v in ids]
    if len(ids) == 1:
        return f"row {ids[0]}"
    return "rows " + ", ".join(map(str, ids[:shown])) + (f", ... ({len(ids)} rows)" if len(ids) > shown else "")


def _finite_problems(x: np.ndarray, row_ids: np.ndarray, where: str, path: Path) -> list[str]:
    """The rows of `x` (n, d) holding a NaN or an infinity, named by their row ids (the first one's column and value)."""
    if x.dtype.kind not in "fc" or not len(x):
        return []
    bad_rows = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if not len(bad_rows):
        return []
    i = int(bad_rows[0])
    j = int(np.flatnonzero(~np.isfinite(x[i]))[0])
    return [
        f"{where}: {path}: {len(bad_rows)} row(s) with a non-finite value, {_ids_text(row_ids[bad_rows])}; first row "
        f"{int(row_ids[i])} column {j} ({x[i, j]})"
    ]


def _read_npy(path: Path, n_source: int | None, rows: np.ndarray, where: str, problems: list[str]) -> np.ndarray | None:
    """The array of `path` with every problem of it added to `problems`: not readable, not 2-D (then None), not
    float, a row count other than the source split's (naming the prepared row ids it lacks, or the extra rows).
    Returns the array when it is 2-D, whatever else is wrong, so that its width and values are checked too."""
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as err:
        problems.append(f"{where}: {path} is not a readable .npy array ({err})")
        return None
    if x.ndim != 2:
        problems.append(f"{where}: {path} has shape {x.shape}; expected (n_rows, d)")
        return None
    if x.dtype.kind != "f":
        problems.append(f"{where}: {path} has dtype {x.dtype}; expected float32 or float64")
    if n_source is not None and x.shape[0] != n_source:
        beyond = rows[rows >= x.shape[0]]
        detail = (
            f"the prepared {_ids_text(beyond)} {'is' if len(beyond) == 1 else 'are'} beyond its end"
            if len(beyond)
            else (
                f"rows {n_source}..{x.shape[0] - 1} are extra" if x.shape[0] > n_source else "no prepared row is lost"
            )
        )
        problems.append(
            f"{where}: {path} has {x.shape[0]} rows, the task's source split has {n_source} ({detail}); one row per "
            "row of the source file, in its order, before any cap"
        )
    elif len(rows) and int(rows.max()) >= x.shape[0]:
        problems.append(
            f"{where}: {path}: the prepared {_ids_text(rows[rows >= x.shape[0]])} are beyond its {x.shape[0]} rows"
        )
    return x


def _check_task(folder: str | Path, card: TaskCard, frames: dict[str, pd.DataFrame], *, model: str) -> dict[str, Any]:
    """The vectors of every split of one task, picked by the prepared rows' ids and checked:
    {split: (float32 (n_prepared, d) vectors, {"path", "sha256", "shape"})}.

    folder: the entry's `source.path`; card: the prepared task's card (`n_source` per split); frames: {split: the
    prepared parquet, column `row`}. Every check runs on every split whatever else is wrong, and every problem is
    named with its file and row ids (at most SHOWN_IDS listed, then the count): a missing task, split or file; an
    unreadable or non-2-D array; a non-float dtype; a row count other than the source split's (the prepared rows
    it lacks, or its extra rows); for an HDF5 file, prepared row ids it lacks and ids it holds twice or that are no
    row of the source split; non-finite values (rows, first column and value); splits of different widths (each
    split's width and file). Raises PrecomputedError listing them all.
    """
    folder = Path(folder)
    task = card.task
    problems: list[str] = []
    out: dict[str, Any] = {}
    widths: dict[str, tuple[int, str]] = {}
    h5 = folder / f"{task}.h5"
    cached = None
    if h5.exists():
        try:
            cached = read_embeddings(h5, tuple(frames))
        except Exception as err:  # a broken or incomplete file: one problem, named
            problems.append(f"model {model}, task {task}: {h5} is not a complete GENEB cache file ({err})")
    elif not (folder / task).is_dir():
        problems.append(
            f"model {model}, task {task}: no {folder / task}/ with {{train,test}}.npy and no {h5}; compute the task's "
            'vectors there (docs/adding-a-model.md, "I have vectors")'
        )
    for split, df in frames.items():
        where = f"model {model}, task {task}, split {split}"
        rows = df["row"].to_numpy(np.int64)
        before = len(problems)
        summary = card.splits.get(split)
        n_source = summary.n_source if summary is not None else None
        x_all: np.ndarray | None  # the split's whole array (None: a .npy that is not 2-D, skipped below)
        if cached is not None:
            if split not in cached.splits:
                continue
            x_all, ids = cached.splits[split]
            ids = np.asarray(ids, np.int64)
            path = h5
            position = {int(r): i for i, r in enumerate(ids)}
            missing = [int(r) for r in rows if int(r) not in position]
            if missing:
                problems.append(f"{where}: {h5} lacks {len(missing)} prepared row id(s), {_ids_text(missing)}")
            unique, counts = np.unique(ids, return_counts=True)
            if (counts > 1).any():
                problems.append(f"{where}: {h5} holds row id(s) more than once, {_ids_text(unique[counts > 1])}")
            foreign = ids[(ids < 0) | (ids >= n_source)] if n_source is not None else ids[ids < 0]
            if len(foreign):
                problems.append(
                    f"{where}: {h5} holds {len(foreign)} row id(s) that are no row of the task's source split "
                    f"(0..{(n_source or 0) - 1}), {_ids_text(foreign)}"
                )
            present = [int(r) for r in rows if int(r) in position]
            x = np.asarray(x_all)[[position[r] for r in present]]
            picked = np.asarray(present, np.int64)
            info = {"path": str(h5), "sha256": None, "shape": list(np.shape(x_all))}
        else:
            path = folder / task / f"{split}.npy"
            if not path.is_file():
                if (folder / task).is_dir():
                    problems.append(f"{where}: {path} is missing")
                continue
            x_all = _read_npy(path, n_source, rows, where, problems)
            if x_all is None:
                continue
            picked = rows[rows < x_all.shape[0]]
            x = np.asarray(x_all[picked])
            info = {"path": str(path), "sha256": _sha256(path), "shape": list(x_all.shape)}
        widths[split] = (int(np.shape(x_all)[1]), str(path))
        problems += _finite_problems(x, picked, where, path)
        if len(problems) == before:
            out[split] = (x.astype(np.float32), info)
    if len({w for w, _ in widths.values()}) > 1:
        named = ", ".join(f"{split} {w} ({path})" for split, (w, path) in widths.items())
        problems.append(f"model {model}, task {task}: the splits have different widths: {named}; one width for all")
    if cached is not None:
        digest = _sha256(h5)
        for _, info in out.values():
            info["sha256"] = digest
    if problems:
        raise PrecomputedError(
            f"{len(problems)} problem(s) with the precomputed vectors of model {model}, task {task}:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def import_task(
    settings: SettingsLike,
    task_dir: str | Path,
    out_path: str | Path,
    *,
    splits: tuple[str, ...] = ("train", "test"),
    hdf5_locking: str = "auto",
) -> dict[str, Any]:
    """Check a precomputed model's vectors of the prepared task in `task_dir` (`_check_task`) and write them to
    `out_path` in GENEB's cache layout; returns the extraction key. settings: the resolved extraction settings
    (`registry.extraction_settings`, family precomputed). Raises PrecomputedError (nothing written)."""
    t0 = time.perf_counter()
    typed = ExtractionSettings.of(settings)
    mapping = typed.as_dict() if isinstance(settings, ExtractionSettings) else dict(settings)
    task_dir = Path(task_dir)
    card = read_card(task_dir / "card.json")
    frames = {split: integrity.read_parquet(task_dir / f"{split}.parquet", columns=["row"]) for split in splits}
    checked = _check_task(str(typed.source.path), card, frames, model=typed.model)
    out = {}
    for split, (x, _) in checked.items():
        n = len(x)
        out[split] = SplitEmbeddings(
            x,
            frames[split]["row"].to_numpy(),
            np.ones(n, np.int32),  # one vector per row: nothing pooled by GENEB
            attrs={"n_rows": n, "n_truncated": 0, "n_chunked": 0, "n_pooled_positions": n, "n_trimmed_rows": 0},
        )
    identity = {"encoder": "precomputed", "files": {split: info for split, (_, info) in checked.items()}}
    key = {
        "model": typed.model,
        "task": card.task,
        "settings_hash": extraction_hash(mapping),
        "settings": mapping,
        "encoder": identity,
        "task_data_hash": card.data_hash,
        "package_versions": package_versions(),
    }
    attrs = {
        "model": typed.model,
        "family": typed.family,
        "source": "precomputed",
        "hdf5_locking": hdf5_locking,
        "seconds_total": round(time.perf_counter() - t0, 3),
    }
    if _up_to_date(out_path, key, hdf5_locking):  # the same checked files for the same task data: nothing to write
        _log.info("model %s, task %s: %s already holds these vectors (%s)", typed.model, card.task, out_path, identity)
        return key
    write_embeddings(
        out_path, out, key, storage_dtype=typed.extraction.storage_dtype, hdf5_locking=hdf5_locking, attrs=attrs
    )
    _log.info("model %s, task %s: precomputed vectors %s written to %s", typed.model, card.task, identity, out_path)
    return key


def _up_to_date(path: str | Path, key: dict[str, Any], hdf5_locking: str) -> bool:
    """Whether `path` is a complete cache file whose key is `key` (the vector files' sha256, the task's data hash,
    the settings, the package versions): `geneb.evaluate` calling again on its workdir. Never raises (`read_key`
    refuses an incomplete or foreign file)."""
    if not Path(path).is_file():
        return False
    try:
        return key_hash(read_key(path, hdf5_locking=hdf5_locking)) == key_hash(key)
    except (CacheError, OSError, ValueError):
        return False
