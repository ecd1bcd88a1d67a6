"""The probing stage through files: real task preparation and k-mer extraction, then shots and probes."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest

from geneb.core.provenance import code_revision
from geneb.extract.cache import CacheKeyMismatchError
from geneb.probe.job import fit_probes, write_shot_indices
from geneb.probe.shots import ProbeInputError
from geneb.tables.scores import SCHEMA_VERSION

TASK = "gue_emp_h3__devtrain"  # the task of the `stage` fixture (tests/probe/conftest.py, STAGE_TASK)


def _shots(stage, probe_config, protocol):
    root, task_dir = stage
    shots = root / "shots" / protocol / f"{TASK}.json"
    if not shots.exists():
        write_shot_indices(
            train=task_dir / "train.parquet",
            card=task_dir / "card.json",
            output=shots,
            task=TASK,
            protocol=protocol,
            settings=probe_config[protocol],
        )
    return shots


def _run(stage, probe_config, protocol, **over):
    root, task_dir = stage
    files = {"train": task_dir / "train.parquet", "card": task_dir / "card.json"}
    shots = _shots(stage, probe_config, protocol)
    args = dict(
        **files,
        test=task_dir / "test.parquet",
        embeddings=root / "kmer-3.h5",
        shots=shots,
        scores_out=root / "probes" / protocol / f"{TASK}.parquet",
        predictions_out=root / "predictions" / protocol / f"{TASK}.parquet",
        task=TASK,
        model="kmer-3",
        protocol=protocol,
        settings=probe_config[protocol],
    )
    args.update(over)
    return fit_probes(**args), args


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_fit_probes_writes_tables_any_reader_can_use(stage, probe_config, protocol):
    scores, args = _run(stage, probe_config, protocol)
    card = json.loads((stage[1] / "card.json").read_text())
    on_disk = pd.read_parquet(args["scores_out"])
    assert on_disk.equals(scores)
    assert (on_disk["schema_version"] == SCHEMA_VERSION).all() and (on_disk["protocol"] == protocol).all()
    assert (on_disk["category"] == card["category"]).all() and (on_disk["data_hash"] == card["data_hash"]).all()
    assert on_disk["config_hash"].nunique() == 1 and on_disk["embedding_key_hash"].str.len().eq(12).all()
    rev = code_revision()  # the running code's commit and dirty flag, on every row
    assert (on_disk["geneb_commit"] == rev["geneb_commit"]).all() and str(on_disk["geneb_dirty"].dtype) == "boolean"
    assert on_disk["geneb_dirty"].tolist() == [rev["geneb_dirty"]] * len(on_disk) or rev["geneb_dirty"] is None
    assert pl.read_parquet(args["scores_out"]).height == len(on_disk)
    q = f"select regime, avg(value) from '{args['scores_out']}' where metric = 'MCC' group by regime"
    assert {r for r, _ in duckdb.sql(q).fetchall()} == {"full", "10shot", "1shot"}
    preds = pd.read_parquet(args["predictions_out"])
    test_rows = pd.read_parquet(stage[1] / "test.parquet")["row"]
    for _, g in preds.groupby(["regime", "seed"]):
        assert g["row"].tolist() == test_rows.tolist()
    assert preds["score"].between(0, 1).all()
    full = on_disk[(on_disk["regime"] == "full") & (on_disk["metric"] == "MCC")]
    assert full["value"].iloc[0] > 0.2  # 3-mer frequencies carry real histone-mark signal


def test_shot_file_from_another_data_version_is_refused(stage, probe_config, tmp_path):
    shots = json.loads(_shots(stage, probe_config, "geneb-strict").read_text())
    shots["data_hash"] = "0" * 64
    bad = tmp_path / "shots.json"
    bad.write_text(json.dumps(shots))
    with pytest.raises(ProbeInputError, match="data_hash is '0000"):
        _run(stage, probe_config, "geneb-strict", shots=bad)


def test_embeddings_of_other_rows_or_data_are_refused(stage, probe_config, tmp_path):
    root, task_dir = stage
    card = json.loads((task_dir / "card.json").read_text())
    other = tmp_path / "card.json"
    other.write_text(json.dumps({**card, "data_hash": "f" * 64}))
    with pytest.raises(CacheKeyMismatchError, match="task_data_hash"):
        _run(stage, probe_config, "geneb-paper", card=other)
    test = pd.read_parquet(task_dir / "test.parquet")
    shuffled = tmp_path / "test.parquet"
    test.iloc[np.r_[1, 0, 2 : len(test)]].to_parquet(shuffled, index=False)
    first, second = test["row"].iloc[0], test["row"].iloc[1]
    msg = f"split 'test': embedding rows .* position 0: embedding row id {first}, parquet row id {second}"
    with pytest.raises(ProbeInputError, match=msg):
        _run(stage, probe_config, "geneb-paper", test=shuffled)


def test_score_rows_carry_the_unknown_tokens_of_each_split(stage, probe_config, tmp_path):
    """The UNK count of the extraction (each split's `n_unknown_tokens` attribute) reaches every score row as
    `n_unknown_tokens_train` / `n_unknown_tokens_test`: 0 for k-mer-3 here, the file's values otherwise."""
    import shutil

    import h5py

    scores, _ = _run(stage, probe_config, "geneb-paper")
    assert scores["n_unknown_tokens_train"].dtype == "Int64"
    assert (scores["n_unknown_tokens_train"] == 0).all() and (scores["n_unknown_tokens_test"] == 0).all()
    marked = tmp_path / "marked.h5"
    shutil.copy(stage[0] / "kmer-3.h5", marked)
    with h5py.File(marked, "a") as f:
        f["train"].attrs["n_unknown_tokens"] = 7
        f["test"].attrs["n_unknown_tokens"] = 3
    scores, _ = _run(
        stage,
        probe_config,
        "geneb-paper",
        embeddings=marked,
        scores_out=tmp_path / "s.parquet",
        predictions_out=tmp_path / "p.parquet",
    )
    on_disk = pd.read_parquet(tmp_path / "s.parquet")
    assert (on_disk["n_unknown_tokens_train"] == 7).all() and (on_disk["n_unknown_tokens_test"] == 3).all()


def test_every_fit_runs_on_one_thread_per_pool_and_the_file_records_them(stage, probe_config, tmp_path, monkeypatch):
    """Inside every LogisticRegression fit, whatever the job's `threads` knob, every BLAS and OpenMP pool
    threadpoolctl sees has PROBE_THREADS threads; the score file's metadata records those pools, and aggregation
    carries the record into scores.parquet (geneb.tables.scores.PROBE_THREADS_ATTR)."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info, threadpool_limits

    from geneb.probe.fit import _PROBE_THREADS as PROBE_THREADS
    from geneb.tables.aggregate import concat_tables
    from geneb.tables.scores import probe_threads

    seen: list[list[tuple[str, int]]] = []
    real_fit = LogisticRegression.fit

    def spying_fit(self, *args, **kwargs):
        seen.append([(p["user_api"], p["num_threads"]) for p in threadpool_info()])
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(LogisticRegression, "fit", spying_fit)
    out = {"scores_out": tmp_path / "s.parquet", "predictions_out": tmp_path / "p.parquet"}
    with threadpool_limits(limits=2):  # a caller (or a machine) with more threads
        _run(stage, probe_config, "geneb-paper", threads=2, **out)
    assert seen and {api for fit in seen for api, _ in fit} >= {"blas", "openmp"}
    assert all(n == PROBE_THREADS for fit in seen for _, n in fit), seen[0]
    (record,) = probe_threads(str(out["scores_out"]))
    assert record["limit"] == PROBE_THREADS and record["pools"]
    assert {(p["user_api"], p["num_threads"]) for p in record["pools"]} == set(seen[0])
    assert all(p["internal_api"] for p in record["pools"])  # libgomp reports no version
    assert all(p["version"] and p["architecture"] for p in record["pools"] if p["user_api"] == "blas")
    scores = concat_tables([out["scores_out"], out["scores_out"]], tmp_path / "scores.parquet")
    assert (
        probe_threads(str(tmp_path / "scores.parquet"))
        == [{**record, "files": 2}]
        == scores.attrs["geneb_probe_threads"]
    )
