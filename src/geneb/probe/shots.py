"""Shot files: the training rows of every (regime, seed), drawn once per (protocol, task), used by every model.

`resources/shots/{protocol}/{task}.json` (docs/data-dictionary.md) holds, as stable parquet row ids:
`full_rows` (the full regime's training rows: all of them, or the paper protocol's capped subsample) and
`draws`, one entry per (k-shot regime, seed) with its rows, per-class counts and any class that had fewer
than k rows (`short_classes`: {label: rows available}). It also records the task data hash and the draw
settings, and the probe job refuses a shot file whose hash or settings differ from its own.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from geneb.core import integrity
from geneb.core.provenance import canonical_json, stable_hash
from geneb.probe.errors import ProbeInputError
from geneb.probe.sampling import nested_draw, paper_draw, shortfall
from geneb.tasks.caps import stratified_cap

SCHEMA_VERSION = "1"
DRAW_KEYS = ("draw", "seeds", "few_shot_k", "max_train", "subsample_seed")
log = logging.getLogger(__name__)


def draw_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The draw-affecting subset of a protocol's settings (DRAW_KEYS), normalised to plain lists and ints."""
    return {
        "draw": settings["draw"],
        "seeds": [int(s) for s in settings["seeds"]],
        "few_shot_k": [int(k) for k in settings["few_shot_k"]],
        "max_train": settings["max_train"],
        "subsample_seed": int(settings["subsample_seed"]),
    }


def build_shots(
    task: str,
    protocol: str,
    labels: np.ndarray,
    rows: np.ndarray,
    data_hash: str,
    settings: dict[str, Any],
    identity: str | None = None,
) -> dict[str, Any]:
    """Draw every (regime, seed) of one task and return the shot-file content.

    labels, rows: the training split's labels and row ids (n,) in parquet order; data_hash: the task card's
    `data_hash` (recorded, and checked by the probe); identity: what seeds the nested draw, the training
    split's `geneb.probe.sampling.draw_identity` (case-folded; data_hash when None); settings: at least DRAW_KEYS. The full regime keeps all rows unless `max_train` caps it
    (`geneb.tasks.caps.stratified_cap`, the project's one stratified-cap rule, seeded by `subsample_seed`);
    k-shot draws are taken from the full regime's rows with the protocol's method ("paper" or "nested").
    Raises ProbeInputError on bad labels or rows, and when max_train is below the number of classes.
    """
    ds = draw_settings(settings)
    labels = np.asarray(labels)
    rows = np.asarray(rows, dtype=np.int64)
    if labels.shape != rows.shape:
        raise ProbeInputError(f"task {task!r}, split 'train': {len(rows)} row ids for {len(labels)} labels")
    try:
        full = (
            np.arange(len(rows))
            if ds["max_train"] is None
            else stratified_cap(labels, ds["max_train"], ds["subsample_seed"])
        )
    except ValueError as err:
        raise ProbeInputError(
            f"task {task!r}, split 'train': protocol {protocol!r} max_train {ds['max_train']}: {err}"
        ) from err
    y, r = labels[full], rows[full]
    draws = []
    for seed in ds["seeds"]:
        if ds["draw"] == "nested":
            key = data_hash if identity is None else identity
            by_k = nested_draw(y, r, data_hash=key, seed=seed, ks=tuple(ds["few_shot_k"]))
        else:
            by_k = {k: paper_draw(y, k, seed) for k in ds["few_shot_k"]}
        for k in ds["few_shot_k"]:
            pos = by_k[k]
            cls, cnt = np.unique(y[pos], return_counts=True)
            short = shortfall(y, k)
            if short:
                log.warning(
                    "task %r, regime %dshot, seed %d: classes with fewer than %d training rows (all used): %s",
                    task,
                    k,
                    seed,
                    k,
                    short,
                )
            draws.append(
                {
                    "regime": f"{k}shot",
                    "k": k,
                    "seed": seed,
                    "rows": r[pos].tolist(),
                    "per_class": {str(int(c)): int(n) for c, n in zip(cls, cnt)},
                    "short_classes": {str(c): n for c, n in short.items()},
                }
            )
    distinct = {}
    for k in ds["few_shot_k"]:
        sets = {tuple(sorted(d["rows"])) for d in draws if d["k"] == k}
        distinct[f"{k}shot"] = len(sets)
    classes, counts = np.unique(labels, return_counts=True)
    return {
        "schema_version": SCHEMA_VERSION,
        "task": task,
        "protocol": protocol,
        "data_hash": data_hash,
        "draw_identity": identity,
        "draw_settings": ds,
        "draw_hash": stable_hash(ds),
        "classes": [int(c) for c in classes],
        "class_counts": {str(int(c)): int(n) for c, n in zip(classes, counts)},
        "full_rows": r.tolist(),
        "full_subsampled": bool(len(full) < len(rows)),
        "n_train_source": int(len(rows)),
        "distinct_draws": distinct,
        "draws": draws,
    }


def write_shots(path: str | os.PathLike[str], shots: dict[str, Any]) -> None:
    """Write a shot file atomically, with its digest (canonical JSON: identical content gives identical bytes)."""
    integrity.write_text(path, canonical_json(shots) + "\n")


def read_shots(
    path: str | os.PathLike[str], *, task: str, data_hash: str, settings: dict[str, Any], protocol: str | None = None
) -> dict[str, Any]:
    """Read a shot file and check it belongs to this task, data, draw settings (and protocol, when given).

    Raises ProbeInputError naming the file and the differing item (task, data_hash, draw settings, protocol,
    schema).
    """
    shots = integrity.read_json(path)  # IntegrityError naming the file when it changed since it was written
    expected = {
        "schema_version": SCHEMA_VERSION,
        "task": task,
        "data_hash": data_hash,
        "draw_settings": draw_settings(settings),
    }
    if protocol is not None:
        expected["protocol"] = protocol
    for key, want in expected.items():
        if shots.get(key) != want:
            raise ProbeInputError(
                f"{path}: shot file {key} is {shots.get(key)!r}, expected {want!r}; rerun write_shot_indices"
            )
    return shots


def check_shots(shots: dict[str, Any], rows: np.ndarray, labels: np.ndarray, *, path: str | os.PathLike[str]) -> None:
    """Check a shot file's content against the training split it draws from, so an edited or damaged file is
    refused instead of scored: `full_rows` unique training rows (all of them, or `max_train` of them); exactly
    one draw per (k-shot regime, seed) of the draw settings; each draw's rows unique, inside `full_rows`, and
    min(k, rows of the class) per class, as its `per_class` says.

    rows, labels: the training split's row ids and labels (n,). Raises ProbeInputError naming the file and the
    first problem.
    """

    def bad(what: str) -> ProbeInputError:
        return ProbeInputError(
            f"{path}: {what}; the shot file is not the draw its settings define (edited or damaged?): "
            "rerun write_shot_indices"
        )

    ds = shots["draw_settings"]
    label_of = dict(zip(np.asarray(rows, dtype=np.int64).tolist(), np.asarray(labels).tolist()))
    full = [int(r) for r in shots["full_rows"]]
    if len(set(full)) != len(full) or not set(full) <= set(label_of):
        raise bad("full_rows repeats a row or names a row that is not in the training split")
    want_full = len(label_of) if ds["max_train"] is None else min(len(label_of), int(ds["max_train"]))
    if len(full) != want_full:
        raise bad(f"full_rows holds {len(full)} rows, the settings give {want_full}")
    keys = [(d["regime"], int(d["seed"])) for d in shots["draws"]]
    want = [(f"{k}shot", int(seed)) for seed in ds["seeds"] for k in ds["few_shot_k"]]
    if sorted(keys) != sorted(want):
        missing, extra = sorted(set(want) - set(keys)), sorted(set(keys) - set(want))
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise bad(f"draws differ from seeds x few_shot_k (missing {missing}, unexpected {extra}, repeated {dup})")
    in_full = set(full)
    per_class_full: dict[Any, int] = {}
    for r in full:
        per_class_full[label_of[r]] = per_class_full.get(label_of[r], 0) + 1
    for d in shots["draws"]:
        drawn = [int(r) for r in d["rows"]]
        where = f"draw {d['regime']} seed {d['seed']}"
        if len(set(drawn)) != len(drawn) or not set(drawn) <= in_full:
            raise bad(f"{where} repeats a row or draws a row outside full_rows")
        counts: dict[Any, int] = {}
        for r in drawn:
            counts[label_of[r]] = counts.get(label_of[r], 0) + 1
        k = int(d["regime"].removesuffix("shot"))
        expect = {c: min(k, n) for c, n in per_class_full.items()}
        if counts != expect:
            raise bad(f"{where} has {counts} rows per class, a {k}-shot draw has {expect}")
