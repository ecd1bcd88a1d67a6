"""Which training rows a probe sees: the errors of the probing stage, the k-shot draws and the shot files.

Errors raised by the probing stage: bad input is named precisely (task, split or regime, seed, row, value).

Which training rows a k-shot probe sees: the paper draw and the nested draw. Pure functions.

Two draw methods, one per protocol (docs/protocols.md):

* `_paper_draw`: the published reference loop, reproduced call for call so the same seed gives the same rows:
  `rng = numpy.random.RandomState(seed)`, then for each class in `numpy.unique(labels)` order
  `rng.choice(numpy.where(labels == cls)[0], size=min(k, n_cls), replace=False)`, concatenated. The 1-shot and
  10-shot draws of one seed are independent (not nested), as in the reference.
* `_nested_draw` (geneb-strict): every training row of a class gets a rank, a 64-bit hash of its row id keyed
  by sha256("geneb-strict|{draw identity}|{seed}") (`_row_ranks`); the k-shot set of a class is its k
  lowest-ranked rows. The ranking does not depend on k, so the 1-shot set is inside the 10-shot set of the
  same seed; it depends only on (the training split's draw identity, seed, row id), where the draw identity
  (`draw_identity`) covers what the protocol sees of the training split: row ids, labels and the sequences
  upper-cased (as every model sees them), so a soft-masked copy of a task draws the same rows as its
  upper-case twin; never on Python's `hash()`, the process, the
  NumPy version or the order in which draws are made (the MTEB defect of carrying RNG state from one experiment to the next cannot occur).

A class with fewer than k training rows contributes all of them (`min(k, n_cls)` in both methods); the
shortfall is reported by `_shortfall` and written to the shot file and the probe table.

All positions are 0-based indices into the given label array (the task parquet's row order).

Shot files: the training rows of every (regime, seed), drawn once per (protocol, task), used by every model.

`resources/shots/{protocol}/{task}.json` (docs/data-dictionary.md) holds, as stable parquet row ids:
`full_rows` (the full regime's training rows: all of them, or the paper protocol's capped subsample) and
`draws`, one entry per (k-shot regime, seed) with its rows, per-class counts and any class that had fewer
than k rows (`short_classes`: {label: rows available}). It also records the task data hash and the draw
settings, and the probe job refuses a shot file whose hash or settings differ from its own.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any

import numpy as np

from geneb.core import integrity
from geneb.core.provenance import canonical_json, stable_hash
from geneb.tasks.prepare import stratified_cap


class ProbeInputError(ValueError):
    """Input the probe refuses to use: a missing class, an unknown row id, mismatched arrays or hashes.

    The message always names the task and, where they apply, the split or regime, the seed, the row id and
    the offending value, so the user can find the record without a debugger.
    """


class ProtocolConfigError(ValueError):
    """A probing protocol's settings are missing, unknown or inconsistent (e.g. an unsorted C grid)."""


#: prefix of every nested-draw hash; changing it changes every geneb-strict draw
_NESTED_DRAW_DOMAIN = "geneb-strict"
#: which input keys the nested draw (`draw_identity`); in the write_shot_indices rerun key, so
#: shot files drawn under an earlier rule (the card's data hash, which keeps case) are drawn again
NESTED_DRAW_KEY = "draw_identity-1"


def _labels_1d(labels: np.ndarray, what: str) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ProbeInputError(f"{what}: labels must be a non-empty 1-D array, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ProbeInputError(f"{what}: labels must be integers, got dtype {y.dtype} (first value {y[0]!r})")
    return y


def _check_k(k: int, what: str) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ProbeInputError(f"{what}: k (examples per class) must be a positive integer, got {k!r}")


def _paper_draw(labels: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The published reference k-shot draw (GENEB paper protocol), reproduced exactly.

    labels: int array (n,) of training labels in parquet row order. k: examples per class (>= 1). seed: the
    `numpy.random.RandomState` seed (paper seeds 13, 17, 42, 123, 997).
    Returns int64 positions (sum over classes of min(k, n_cls),), class blocks in sorted label order, each
    block in `RandomState.choice` order. Source: ../shared/reference/geneb_paper/README.md ("Regimes").
    Raises ProbeInputError for empty or non-integer labels or k < 1.
    """
    y = _labels_1d(labels, f"paper draw (k={k}, seed={seed})")
    _check_k(k, f"paper draw (seed={seed})")
    rng = np.random.RandomState(seed)
    parts = []
    for cls in np.unique(y):
        members = np.where(y == cls)[0]
        parts.append(rng.choice(members, size=min(k, len(members)), replace=False))
    return np.concatenate(parts).astype(np.int64)


def draw_identity(rows: np.ndarray, labels: np.ndarray, sequences: list[str] | np.ndarray) -> str:
    """sha256 (hex) of a training split as the protocol sees it: (row id, upper-cased sequence, label) in
    order. Letter case (soft-masking) never reaches a model (`geneb.tasks.validation.model_input`), so it never
    changes a nested draw; any other change to the rows does."""
    h = hashlib.sha256(b"geneb-draw-identity-1\n")
    for row, seq, y in zip(np.asarray(rows).tolist(), sequences, np.asarray(labels).tolist()):
        h.update(f"{int(row)}\t{str(seq).upper()}\t{int(y)}\n".encode())
    return h.hexdigest()


def _row_ranks(rows: np.ndarray, *, data_hash: str, seed: int) -> np.ndarray:
    """Rank keys of the nested draw, uint64 (n,): output number row+1 of SplitMix64 seeded by a draw key.

    The draw key is the first 8 bytes of sha256("geneb-strict|{data_hash}|{seed}"); the rank of row r is
    mix64(key + (r + 1) * 0x9E3779B97F4A7C15) with SplitMix64's finaliser (Steele, Lea & Flood 2014, "Fast
    splittable pseudorandom number generators"; constants of Vigna's splitmix64.c). Pure integer arithmetic on
    the stable row ids: identical in every process and on every machine, independent of Python's salted
    `hash()` and of NumPy's random streams. rows: int array (n,) of non-negative row ids.
    """
    digest = hashlib.sha256(f"{_NESTED_DRAW_DOMAIN}|{data_hash}|{int(seed)}".encode()).digest()
    return _splitmix64(int.from_bytes(digest[:8], "big"), np.asarray(rows).astype(np.uint64) + np.uint64(1))


def _splitmix64(key: int, counters: np.ndarray) -> np.ndarray:
    """Output number `counters` (uint64 array, >= 1) of SplitMix64 started at state `key` (0 <= key < 2**64).

    Vectorised: state_i = key + counters_i * 0x9E3779B97F4A7C15 (mod 2**64), then the finaliser. With key 0 the
    outputs for counters 1, 2 are 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4 (splitmix64.c seeded with 0).
    """
    z = np.asarray(counters, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(key) + z * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _nested_draw(
    labels: np.ndarray, rows: np.ndarray, *, data_hash: str, seed: int, ks: tuple[int, ...]
) -> dict[int, np.ndarray]:
    """Nested k-shot draws of geneb-strict for every k in `ks` at once.

    labels: int array (n,); rows: int array (n,) of unique row ids, same order; data_hash: the task card's
    `data_hash` (the identity of the prepared splits); seed: the draw seed; ks: the few-shot sizes.
    Returns {k: int64 positions} with, per class in sorted label order, the min(k, n_cls) rows of lowest rank
    (rank = `_row_ranks`; ties, which need a 64-bit hash collision, fall back to row order). For k1 < k2 the
    k1 set is a subset of the k2 set. Raises ProbeInputError for mismatched lengths, duplicate row ids or a
    bad k.
    """
    what = f"nested draw (seed={seed})"
    y = _labels_1d(labels, what)
    rows = np.asarray(rows)
    if rows.shape != y.shape:
        raise ProbeInputError(f"{what}: {len(rows)} row ids for {len(y)} labels")
    uniq, counts = np.unique(rows, return_counts=True)
    if len(uniq) and uniq[0] < 0:
        raise ProbeInputError(f"{what}: row ids must be non-negative, got {int(uniq[0])}")
    if (counts > 1).any():
        raise ProbeInputError(f"{what}: row id {int(uniq[counts > 1][0])} occurs more than once")
    for k in ks:
        _check_k(k, what)
    keys = _row_ranks(rows, data_hash=data_hash, seed=seed)
    ranked = {cls: np.where(y == cls)[0] for cls in np.unique(y)}
    ranked = {cls: m[np.lexsort((m, keys[m]))] for cls, m in ranked.items()}
    return {int(k): np.concatenate([m[:k] for m in ranked.values()]).astype(np.int64) for k in ks}


def _shortfall(labels: np.ndarray, k: int) -> dict[int, int]:
    """Classes with fewer than k training rows: {label: rows available}. Empty when every class has >= k."""
    values, counts = np.unique(np.asarray(labels), return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts) if c < k}


def require_all_classes(y_fit: np.ndarray, classes: np.ndarray, *, task: str, regime: str, seed: int) -> None:
    """Refuse a training set that lacks a class of the task, before any estimator is fitted.

    y_fit: labels of the rows the probe would be fitted on; classes: every class of the task (train and test
    labels). Raises ProbeInputError naming task, regime, seed, the missing class(es) and the classes present.
    """
    present = np.unique(y_fit)
    missing = sorted(set(np.asarray(classes).tolist()) - set(present.tolist()))
    if missing or len(present) < 2:
        raise ProbeInputError(
            f"task {task!r}, regime {regime!r}, seed {seed}: the probe training set ({len(y_fit)} rows) lacks "
            f"class(es) {missing or '(fewer than 2 classes)'}; classes present: {present.tolist()}; refusing to "
            "fit a probe that cannot predict every class (check the task split or the draw)"
        )


_SCHEMA_VERSION = "1"
DRAW_KEYS = ("draw", "seeds", "few_shot_k", "max_train", "subsample_seed")
_log = logging.getLogger(__name__)


def _draw_settings(settings: dict[str, Any]) -> dict[str, Any]:
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
    split's `geneb.probe.shots.draw_identity` (case-folded; data_hash when None); settings: at least DRAW_KEYS. The full regime keeps all rows unless `max_train` caps it
    (`geneb.tasks.prepare.stratified_cap`, the project's one stratified-cap rule, seeded by `subsample_seed`);
    k-shot draws are taken from the full regime's rows with the protocol's method ("paper" or "nested").
    Raises ProbeInputError on bad labels or rows, and when max_train is below the number of classes.
    """
    ds = _draw_settings(settings)
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
            by_k = _nested_draw(y, r, data_hash=key, seed=seed, ks=tuple(ds["few_shot_k"]))
        else:
            by_k = {k: _paper_draw(y, k, seed) for k in ds["few_shot_k"]}
        for k in ds["few_shot_k"]:
            pos = by_k[k]
            cls, cnt = np.unique(y[pos], return_counts=True)
            short = _shortfall(y, k)
            if short:
                _log.warning(
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
        "schema_version": _SCHEMA_VERSION,
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
        "schema_version": _SCHEMA_VERSION,
        "task": task,
        "data_hash": data_hash,
        "draw_settings": _draw_settings(settings),
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
