"""Family `precomputed` (geneb.extract.precomputed): vectors computed elsewhere, picked by row id, checked with every
problem named at once, and written to GENEB's cache with the files' fingerprints."""

from __future__ import annotations

import json

import numpy as np
import pytest

from geneb.extract.cache import SplitEmbeddings, read_embeddings, write_embeddings
from geneb.extract.precomputed import PrecomputedError, import_task

SETTINGS = {
    "model": "vecs",
    "family": "precomputed",
    "source": {"kind": "local", "path": "PATH"},
    "extraction": {"storage_dtype": "float32"},
}


@pytest.fixture
def task(make_task):
    """A prepared task whose kept rows are source rows 1, 3, 4 (train) and 0, 2 (test) of 6 and 3 source rows."""
    folder = make_task(["ACGT", "GGCC", "ATAT"], ["TTTT", "CCCA"], task="t")
    import pandas as pd

    for split, rows in (("train", [1, 3, 4]), ("test", [0, 2])):
        df = pd.read_parquet(folder / f"{split}.parquet")
        df["row"] = rows
        df.to_parquet(folder / f"{split}.parquet", index=False)
    card = json.loads((folder / "card.json").read_text())
    card["splits"] = {"train": {"n": 3, "n_source": 6}, "test": {"n": 2, "n_source": 3}}
    (folder / "card.json").write_text(json.dumps(card))
    return folder


def settings_for(folder):
    return {**SETTINGS, "source": {"kind": "local", "path": str(folder)}}


def test_rows_are_picked_by_their_source_row_id_and_recorded(tmp_path, task):
    vecs = tmp_path / "vecs" / "t"
    vecs.mkdir(parents=True)
    train, test = np.arange(12, dtype=np.float64).reshape(6, 2), -np.arange(6, dtype=np.float32).reshape(3, 2)
    np.save(vecs / "train.npy", train)
    np.save(vecs / "test.npy", test)
    key = import_task(settings_for(tmp_path / "vecs"), task, tmp_path / "out.h5")
    cached = read_embeddings(tmp_path / "out.h5")
    np.testing.assert_array_equal(cached.splits["train"][0], train[[1, 3, 4]])
    np.testing.assert_array_equal(cached.splits["test"][0], test[[0, 2]])
    assert key["encoder"]["encoder"] == "precomputed" and len(key["encoder"]["files"]["test"]["sha256"]) == 64


def test_an_up_to_date_file_is_kept_and_a_changed_vector_file_rewrites_it(tmp_path, task):
    """geneb.evaluate imports again on every call: the same checked files for the same task leave the cache file
    as it is; a changed vector file (or a file written by other code) is written again."""
    vecs = tmp_path / "vecs" / "t"
    vecs.mkdir(parents=True)
    np.save(vecs / "train.npy", np.ones((6, 2), np.float32))
    np.save(vecs / "test.npy", np.zeros((3, 2), np.float32))
    out = tmp_path / "out.h5"
    first = import_task(settings_for(tmp_path / "vecs"), task, out)
    stamp = out.stat().st_mtime_ns
    assert import_task(settings_for(tmp_path / "vecs"), task, out) == first and out.stat().st_mtime_ns == stamp
    np.save(vecs / "test.npy", np.full((3, 2), 2.0, np.float32))
    changed = import_task(settings_for(tmp_path / "vecs"), task, out)
    assert changed != first and out.stat().st_mtime_ns != stamp
    np.testing.assert_array_equal(read_embeddings(out).splits["test"][0], np.full((2, 2), 2.0))


def test_every_problem_is_named_at_once(tmp_path, task):
    vecs = tmp_path / "vecs" / "t"
    vecs.mkdir(parents=True)
    bad = np.ones((6, 2), np.float32)
    bad[3, 1] = np.nan
    np.save(vecs / "train.npy", bad)
    np.save(vecs / "test.npy", np.ones((4, 3), np.float32))  # a row too many
    with pytest.raises(PrecomputedError) as err:
        import_task(settings_for(tmp_path / "vecs"), task, tmp_path / "out.h5")
    text = str(err.value)
    assert "3 problem(s)" in text and "split test" in text and "4 rows, the task's source split has 3" in text
    assert "rows 3..3 are extra" in text
    assert (
        "split train: " in text and "train.npy: 1 row(s) with a non-finite value, row 3; first row 3 column 1" in text
    )
    assert "the splits have different widths: train 2 (" in text  # named although the test file has another problem
    assert not (tmp_path / "out.h5").exists()
    np.save(vecs / "test.npy", np.ones((3, 3), np.float32))
    np.save(vecs / "train.npy", np.ones((6, 2), np.int64))
    with pytest.raises(PrecomputedError, match="dtype int64; expected float32 or float64"):
        import_task(settings_for(tmp_path / "vecs"), task, tmp_path / "out.h5")
    np.save(vecs / "train.npy", np.ones((6, 2), np.float32))
    with pytest.raises(PrecomputedError, match="different widths"):
        import_task(settings_for(tmp_path / "vecs"), task, tmp_path / "out.h5")
    (vecs / "test.npy").unlink()
    with pytest.raises(PrecomputedError, match=r"split test: .*test.npy is missing"):
        import_task(settings_for(tmp_path / "vecs"), task, tmp_path / "out.h5")
    with pytest.raises(PrecomputedError, match="no .*/t/ with"):
        import_task(settings_for(tmp_path / "elsewhere"), task, tmp_path / "out.h5")


def test_an_hdf5_file_in_geneb_layout_is_read_by_row_id(tmp_path, task):
    folder = tmp_path / "vecs"
    folder.mkdir()
    splits = {
        "train": SplitEmbeddings(np.eye(6, 2, dtype=np.float32) + 1, np.arange(6)[::-1].copy(), np.ones(6, np.int32)),
        "test": SplitEmbeddings(np.ones((2, 2), np.float32), np.asarray([0, 1]), np.ones(2, np.int32)),
    }
    write_embeddings(folder / "t.h5", splits, {"model": "x", "task": "t"})
    with pytest.raises(PrecomputedError, match=r"split test: .*t.h5 lacks 1 prepared row id\(s\), row 2"):
        import_task(settings_for(folder), task, tmp_path / "out.h5")


def test_a_width_mismatch_is_named_with_every_other_problem(tmp_path, task):
    """Before: a folder's width mismatch was named only when nothing else was wrong. An HDF5 file whose test split
    lacks a prepared row id, holds one twice, and is wider than train; then .npy files with a short split (rows cut
    off), a non-float dtype, non-finite rows and two widths: every problem in one error, each with file and rows."""
    folder = tmp_path / "vecs"
    folder.mkdir()
    splits = {
        "train": SplitEmbeddings(np.ones((6, 2), np.float32), np.arange(6), np.ones(6, np.int32)),
        "test": SplitEmbeddings(np.ones((3, 3), np.float32), np.asarray([0, 1, 1]), np.ones(3, np.int32)),
    }
    write_embeddings(folder / "t.h5", splits, {"model": "x", "task": "t"})
    with pytest.raises(PrecomputedError) as err:
        import_task(settings_for(folder), task, tmp_path / "out.h5")
    text = str(err.value)
    assert "3 problem(s)" in text, text
    assert "split test: " in text and "t.h5 lacks 1 prepared row id(s), row 2" in text
    assert "t.h5 holds row id(s) more than once, row 1" in text
    assert "the splits have different widths: train 2 (" in text and "test 3 (" in text
    (folder / "t.h5").unlink()
    vecs = folder / "t"
    vecs.mkdir()
    train = np.ones((6, 2), np.float32)
    train[[1, 4], 0] = np.inf
    np.save(vecs / "train.npy", train)
    np.save(vecs / "test.npy", np.ones((2, 5), np.int64))  # source split has 3 rows; prepared row 2 is cut off
    with pytest.raises(PrecomputedError) as err:
        import_task(settings_for(folder), task, tmp_path / "out.h5")
    text = str(err.value)
    assert "4 problem(s)" in text, text
    assert "train.npy: 2 row(s) with a non-finite value, rows 1, 4; first row 1 column 0 (inf)" in text
    assert "test.npy has dtype int64; expected float32 or float64" in text
    assert "test.npy has 2 rows, the task's source split has 3 (the prepared row 2 is beyond its end)" in text
    assert "different widths: train 2 (" in text and "test 5 (" in text
    assert not (tmp_path / "out.h5").exists()
