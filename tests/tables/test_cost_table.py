"""The measured cost of extraction: the cost attributes an extraction job writes (tokens, bases, peak memory,
hardware) and the run's cost table built from them (the shared finished run's `results/tables/cost.parquet`)."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pandas as pd
import pytest

from extraction_support import random_dna
from geneb.extract.cost import CPU_PEAK, CostMeter, model_tokens
from geneb.extract.step import extract_task
from geneb.tables.cost import COLUMNS, UNRECORDED, cost_table, file_row, per_model


def test_finished_run_has_one_cost_row_per_model_and_task(finished_run):
    """Every (model, task) of the small run has a recorded row; sequences and bases are those of the prepared
    splits the job embedded (every row, both splits), rates are counts over compute seconds, one hardware."""
    cost = pd.read_parquet(finished_run / "results" / "tables" / "cost.parquet")
    scores = pd.read_parquet(finished_run / "results" / "tables" / "scores.parquet")
    assert list(cost.columns) == list(COLUMNS)
    assert set(zip(cost["model"], cost["task"])) == set(zip(scores["model"], scores["task"]))
    assert cost["cost_recorded"].all() and cost["hardware"].nunique() == 1
    assert UNRECORDED not in set(cost["hardware"]) and set(cost["peak_memory_kind"]) == {CPU_PEAK}
    for task, group in cost.groupby("task"):
        [task_dir] = (finished_run / "resources" / "tasks" / task).iterdir()
        frames = [pd.read_parquet(task_dir / f"{split}.parquet") for split in ("train", "test")]
        assert (group["sequences"] == sum(len(f) for f in frames)).all(), task
        assert (group["bases"] == sum(int(f["sequence"].str.len().sum()) for f in frames)).all(), task
    np.testing.assert_allclose(cost["bases_per_s"], cost["bases"].astype(float) / cost["seconds_compute"])
    assert (cost["seconds_compute"] <= cost["seconds_total"]).all() and (cost["peak_memory_bytes"] > 0).all()
    summary = per_model(cost)
    assert len(summary) == cost["model"].nunique() and (summary["tasks"] == cost["task"].nunique()).all()


def test_file_without_cost_attributes_reads_as_unrecorded(finished_run, tmp_path):
    """A file written before the cost attributes existed: seconds from seconds_total - seconds_load, sequences
    from the splits' n_rows, no bases, hardware 'unrecorded'."""
    src = next((finished_run / "resources" / "embeddings").rglob("*.h5"))
    old = tmp_path / "old.h5"
    shutil.copy(src, old)
    with h5py.File(old, "r+") as h5:
        n_rows = sum(int(h5[s].attrs["n_rows"]) for s in ("train", "test"))
        for name in ("seconds_compute", "cost_sequences", "cost_bases", "cost_tokens", "device_name"):
            del h5.attrs[name]
    row = file_row(old)
    assert row["cost_recorded"] is False and row["hardware"] == UNRECORDED and row["bases"] is None
    assert row["sequences"] == n_rows
    table = cost_table([old])
    assert table["bases"].isna().all() and table["bases_per_s"].isna().all()


def test_two_files_of_one_cell_on_one_machine_are_refused(finished_run, tmp_path):
    src = next((finished_run / "resources" / "embeddings").rglob("*.h5"))
    copy = tmp_path / "copy.h5"
    shutil.copy(src, copy)
    with pytest.raises(ValueError, match="embedding files on"):
        cost_table([src, copy])


def test_tokens_count_special_tokens_only_when_not_pooled():
    identity = {"special_prefix": [1], "special_suffix": [2]}
    n_tokens, n_chunks = np.array([10, 20]), np.array([1, 3])
    assert model_tokens(n_tokens, n_chunks, identity, specials_pooled=True) == 30
    assert model_tokens(n_tokens, n_chunks, identity, specials_pooled=False) == 30 + 2 * 4
    meter = CostMeter("cpu", threads=2)
    meter.add(["ACGT", "AC"], 30, passes=2)
    attrs = meter.attrs()
    assert (attrs["cost_sequences"], attrs["cost_bases"], attrs["cost_tokens"]) == (2, 6, 60)
    assert attrs["cost_forward_passes"] == 2 and attrs["device_name"].endswith("(2 threads)")
    with pytest.raises(ValueError, match="passes 0"):
        meter.add(["A"], 1, passes=0)


def test_token_model_extraction_records_its_tokens(zoo, make_task, tmp_path):
    """A real token model (the Mistral-DNA checkpoint), rc average: tokens are both strands' pooled positions, the
    special tokens included (its extraction pools them), and peak memory is the process's RSS on a CPU."""
    task = make_task([random_dna(40 + i, i) for i in range(6)], [random_dna(30, 99), random_dna(55, 98)])
    out = tmp_path / "m" / "h" / "t" / "x.h5"
    extract_task(zoo.settings("mistral-dna", rc="average"), task, out, progress=False, threads=1)
    with h5py.File(out, "r") as h5:
        pooled = sum(int(h5[s]["n_tokens"][:].sum()) for s in ("train", "test"))
        assert h5.attrs["cost_tokens"] == 2 * pooled and h5.attrs["cost_forward_passes"] == 2
        assert h5.attrs["cost_sequences"] == 8 and h5.attrs["cost_bases"] == sum(40 + i for i in range(6)) + 85
        assert h5.attrs["peak_memory_kind"] == CPU_PEAK and h5.attrs["peak_memory_bytes"] > 10_000_000
        assert 0 < h5.attrs["seconds_compute"] <= h5.attrs["seconds_total"]
