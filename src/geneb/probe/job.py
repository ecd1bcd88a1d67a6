"""The two workflow steps of the probing stage, file in, file out (called by the Snakemake script shims).

* `write_shot_indices`: task train split + card -> `resources/shots/{protocol}/{task}.json`.
* `fit_probes`: task splits + card + embedding cache + shot file -> `results/probes/{protocol}/{model}/{task}.parquet`
  and `results/predictions/{protocol}/{model}/{task}.parquet` (columns: docs/data-dictionary.md, stage 3).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from geneb.core import integrity
from geneb.core.provenance import package_versions
from geneb.extract.cache import list_views, read_embeddings
from geneb.probe.fit import TaskArrays, run_task, thread_record
from geneb.probe.metrics import clean_columns, label_scores, seed_summary
from geneb.probe.protocols import from_config
from geneb.probe.shots import ProbeInputError, build_shots, check_shots, draw_identity, read_shots, write_shots
from geneb.probe.views import probe_views, registry_view, view_task, with_view
from geneb.tables.scores import PROBE_THREADS_ATTR, SCHEMA_VERSION, with_code_revision
from geneb.tasks.audit import read_audit
from geneb.tasks.prepare import TaskCard, read_card

_Path = str | os.PathLike[str]
_log = logging.getLogger(__name__)


def _read_split(path: _Path, task: str, split: str) -> pd.DataFrame:
    df = integrity.read_parquet(path, columns=["row", "label"])
    if df["row"].duplicated().any():
        raise ProbeInputError(
            f"task {task!r}, split {split!r}: row id {int(df.loc[df['row'].duplicated(), 'row'].iloc[0])} is duplicated in {path}"
        )
    return df


def write_shot_indices(
    *, train: _Path, card: _Path, output: _Path, task: str, protocol: str, settings: dict[str, Any]
) -> dict:
    """Draw and write the shot file of one (protocol, task); returns its content.

    settings: the protocol's draw settings (shots.DRAW_KEYS; extra keys are ignored).
    """
    c = read_card(card)
    df = _read_split(train, task, "train")
    seqs = integrity.read_parquet(train, columns=["sequence"])["sequence"].tolist()
    identity = draw_identity(df["row"].to_numpy(), df["label"].to_numpy(), seqs)
    shots = build_shots(task, protocol, df["label"].to_numpy(), df["row"].to_numpy(), c.data_hash, settings, identity)
    write_shots(output, shots)
    _log.info(
        "task %s, protocol %s: %d draws, distinct row sets per regime %s, full regime %d of %d rows",
        task,
        protocol,
        len(shots["draws"]),
        shots["distinct_draws"],
        len(shots["full_rows"]),
        shots["n_train_source"],
    )
    return shots


def _aligned(cached: tuple[np.ndarray, np.ndarray], df: pd.DataFrame, task: str, split: str, path: _Path) -> np.ndarray:
    X, rows = cached
    want = df["row"].to_numpy()
    if len(rows) != len(want) or not np.array_equal(rows, want):
        n = min(len(rows), len(want))
        i = int(np.flatnonzero(rows[:n] != want[:n])[0]) if (rows[:n] != want[:n]).any() else n
        got = int(rows[i]) if i < len(rows) else "none"
        exp = int(want[i]) if i < len(want) else "none"
        raise ProbeInputError(
            f"task {task!r}, split {split!r}: embedding rows in {path} ({len(rows)}) do not match the task parquet "
            f"({len(want)}); first difference at position {i}: embedding row id {got}, parquet row id {exp}; "
            "re-extract the embeddings"
        )
    return X


def dedup_scores(
    preds: pd.DataFrame,
    scores: pd.DataFrame,
    card: TaskCard,
    task: str,
    confidence: float,
    f1_labels: str = "task",
) -> pd.DataFrame:
    """Scores on the test split without its within-split duplicates, one row per (regime, seed,
    metric) named `<metric>_dedup` (MCC, Acc, macro-F1: `metrics.label_scores`), with the fit's other columns.

    preds: the prediction table (regime, seed, row, y_true, y_pred); scores: the score table of the same fits;
    card: the task card (`TaskCard`), whose test split's `dedup_drop_rows` lists the repeated rows (the first copy of each
    (sequence, label) stays); confidence: level of the over-seeds interval (metrics.seed_summary); f1_labels:
    the protocol's macro-F1 classes (metrics.label_scores). Raises
    ProbeInputError when a dropped row id has no prediction.
    """
    drop = set(card.split("test").dedup_drop_rows)
    missing = drop - set(preds["row"].unique())
    if missing:
        raise ProbeInputError(f"task {task!r}, split 'test': dedup row ids {sorted(missing)[:5]} have no prediction")
    kept = preds[~preds["row"].isin(drop)]
    base = scores[scores["metric"] == "MCC"].drop(columns=["metric", "value", "ci_low", "ci_high"], errors="ignore")
    rows = []
    for (regime, seed), g in kept.groupby(["regime", "seed"], sort=False):
        for metric, value in label_scores(
            g["y_true"].to_numpy(), g["y_pred"].to_numpy(), np.asarray(card.classes), f1_labels
        ).items():
            rows.append(
                {"regime": regime, "seed": seed, "metric": f"{metric}_dedup", "value": value, "n_test_dedup": len(g)}
            )
    seed_cols = ["seed_mean", "seed_sd", "seed_ci_low", "seed_ci_high", "n_seeds"]
    out = pd.DataFrame(rows).merge(
        base.drop(columns=seed_cols, errors="ignore"), on=["regime", "seed"], how="left", validate="many_to_one"
    )
    out["ci_low"] = out["ci_high"] = np.nan
    out["n_test"] = out.pop("n_test_dedup")
    for (_, _), idx in out.groupby(["regime", "metric"], sort=False).groups.items():
        summary = seed_summary(out.loc[idx, "value"].to_numpy(), confidence)
        for col in seed_cols:
            out.loc[idx, col] = summary[col.removeprefix("seed_")] if col != "n_seeds" else summary["n"]
    return out[[c for c in scores.columns if c in out.columns]]


def _unknown_token_columns(split_attrs: dict[str, dict[str, Any]], n: int) -> dict[str, Any]:
    """`n_unknown_tokens_train` / `_test` (nullable Int64, NA for a file that does not record it): the UNK tokens
    the extraction counted per split (letters outside the model's vocabulary), from the cache's split attributes."""
    out = {}
    for split in ("train", "test"):
        value = split_attrs.get(split, {}).get("n_unknown_tokens")
        out[f"n_unknown_tokens_{split}"] = pd.array([pd.NA if value is None else int(value)] * n, dtype="Int64")
    return out


def stamp_rows(
    scores: pd.DataFrame,
    preds: pd.DataFrame,
    *,
    protocol: str,
    model: str,
    task: str,
    category: str,
    provenance: dict[str, Any],
    unknown: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The score and prediction rows of one (protocol, model, task) job with their key and provenance, as every
    job writing the score-table contract stamps them (probe and fine-tune jobs alike): score rows get
    schema_version, protocol, model, task, category, `provenance` (config_hash, data_hash, shots_hash,
    embedding_key_hash, embedding_compute_dtype), the package versions, the `unknown` token columns and the code
    revision; prediction rows the key columns."""
    v = package_versions()
    ident = {"schema_version": SCHEMA_VERSION, "protocol": protocol, "model": model, "task": task}
    scores = pd.concat([pd.DataFrame({**ident, "category": category}, index=scores.index), scores], axis=1)
    versions = {
        "geneb_version": v["geneb"],
        "sklearn_version": v["scikit-learn"],
        "numpy_version": v["numpy"],
        "scipy_version": v["scipy"],
    }
    scores = with_code_revision(scores.assign(**provenance, **versions, **unknown))
    return scores, pd.concat([pd.DataFrame(ident, index=preds.index), preds], axis=1)


def fit_probes(
    *,
    train: _Path,
    test: _Path,
    card: _Path,
    embeddings: _Path,
    shots: _Path,
    scores_out: _Path,
    predictions_out: _Path,
    task: str,
    model: str,
    protocol: str,
    settings: dict[str, Any],
    threads: int = 1,
    hdf5_locking: str = "auto",
    settings_hash: str | None = None,
    audit: _Path | None = None,
    n_layers: int | None = None,
    views: list[str] | None = None,
) -> pd.DataFrame:
    """Fit every regime and seed of one protocol for one (model, task); write the score and prediction tables.

    settings: the protocol's config section (`config["probe"][protocol]`). threads: OpenMP/BLAS threads
    (threadpoolctl) of the job, an execution knob that never changes a result (the fits themselves run on one
    BLAS thread: `geneb.probe.fit.run_task`). settings_hash: the extraction
    settings hash the cache must carry (its folder name in the workflow; a file copied in from other settings
    is refused). audit: the task's audit file (`geneb.tasks.audit`): its leaked test rows give the clean-subset
    columns (`geneb.probe.metrics`: value_clean, ci_low_clean, ci_high_clean, n_test_clean); without it they are
    NaN (-1 rows).
    n_layers: the model's block count when known while planning (the absolute layer of the registry's
    view; `geneb.probe.views.registry_view`). A views file (`geneb.registry.spec`) is probed view by view
    (`geneb.probe.views.probe_views`); every score and prediction row carries the view columns. views: the view ids
    of such a file to probe (None: all; `geneb.run.checks.probed_views`). Raises ProbeInputError or
    CacheError for inconsistent inputs (wrong data hash, rows out of order, missing classes, ...).
    Returns the score table.
    """
    proto = from_config(protocol, settings)
    c = read_card(card)
    tr, te = _read_split(train, task, "train"), _read_split(test, task, "test")
    expected = {"task_data_hash": c.data_hash, "model": model, "task": task}
    if settings_hash is not None:
        expected["settings_hash"] = settings_hash
    cache = read_embeddings(embeddings, expected=expected, hdf5_locking=hdf5_locking)
    shot = read_shots(shots, task=task, data_hash=c.data_hash, settings=settings, protocol=protocol)
    check_shots(shot, tr["row"].to_numpy(), tr["label"].to_numpy(), path=shots)
    data = TaskArrays(
        task,
        _aligned(cache.splits["train"], tr, task, "train", embeddings),
        tr["label"].to_numpy(),
        tr["row"].to_numpy(),
        _aligned(cache.splits["test"], te, task, "test", embeddings),
        te["label"].to_numpy(),
        te["row"].to_numpy(),
    )
    leaked = read_audit(audit, task=task, data_hash=c.data_hash)["leaked_test_rows"] if audit is not None else None

    def probe(X_train: np.ndarray, X_test: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
        with threadpool_limits(limits=threads):
            scores, preds = run_task(view_task(data, X_train, X_test), proto, shot)
        if proto.dedup_test:
            dedup = dedup_scores(preds, scores, c, task, proto.bootstrap.confidence, proto.f1_labels)
            scores = pd.concat([scores, dedup], ignore_index=True)
        # the clean-subset columns of this view: the same fitted probes on the test rows without a training homolog
        scores = clean_columns(scores, preds, leaked or [], np.asarray(c.classes), proto)
        if leaked is None:
            scores = scores.assign(value_clean=np.nan, ci_low_clean=np.nan, ci_high_clean=np.nan, n_test_clean=-1)
        return scores, preds

    view_ids = list_views(embeddings, hdf5_locking=hdf5_locking)
    if views is not None and view_ids:
        absent = [v for v in views if v not in view_ids]
        if absent:
            raise ProbeInputError(
                f"task {task!r}, model {model!r}: views {absent} are not in {embeddings} (its views: {view_ids})"
            )
        view_ids = [v for v in view_ids if v in views]
    if view_ids:  # a views run: every view of the file, then the layers the inner-CV rule chose
        scores, preds = probe_views(embeddings, view_ids, probe, data, proto, shot, hdf5_locking=hdf5_locking)
    else:  # the registry's single view, as before
        scores, preds = probe(data.X_train, data.X_test)
        view = registry_view(cache.key, n_layers)
        scores, preds = with_view(scores, **view), with_view(preds, **view)
    prov = {
        "config_hash": proto.config_hash(),
        "data_hash": c.data_hash,
        "shots_hash": shot["draw_hash"],
        "embedding_key_hash": cache.key_hash,
        # what the extraction computed in: the settings hash names it too (dtype auto is resolved per device class)
        "embedding_compute_dtype": str(cache.key.get("encoder", {}).get("compute_dtype") or "n/a"),
    }
    unknown = _unknown_token_columns(cache.split_attrs, len(scores))
    scores, preds = stamp_rows(
        scores, preds, protocol=protocol, model=model, task=task, category=c.category, provenance=prov, unknown=unknown
    )
    # the thread pools the fits ran with (one per BLAS / OpenMP pool; `geneb.probe.fit.probe_thread_limits`), in the
    # file's metadata: what a cross-machine difference in the last digits comes from (docs/performance.md)
    scores.attrs[PROBE_THREADS_ATTR] = thread_record()
    for path, table in ((scores_out, scores), (predictions_out, preds)):
        integrity.write_parquet(table, path)
    mcc = scores[scores["metric"] == "MCC"]
    _log.info(
        "%s / %s / %s: mean MCC per regime %s; (regime, seed) rows from non-converged fits: %d",
        protocol,
        model,
        task,
        mcc.groupby("regime", sort=False)["value"].mean().round(4).to_dict(),
        int((~mcc["converged"]).sum()),
    )
    return scores
