"""The embedding cache's content check (geneb.extract.cache over geneb.core.integrity) on a real finished file:
the issue's sign flip of the stored floats (still finite, so no other check sees it) is refused by every reader
of the file, as a CacheError; a file written before digests reads, and `read_whole` reads every dataset of it
(what the plan requires before it adopts one)."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from geneb.core import integrity
from geneb.extract.cache import CacheError, CorruptCacheError, list_views, read_embeddings, read_key, read_whole
from integrity_support import finished_files


@pytest.fixture
def h5(digested_run, tmp_path):
    path = tmp_path / "e.h5"
    source = finished_files(digested_run)["embeddings"]
    shutil.copy(source, path)
    integrity.record_digest(path, integrity.recorded_digest(source))  # the digest recorded at write time
    return path


def test_a_sign_flip_of_the_stored_floats_is_refused_by_every_reader(h5):
    before = read_embeddings(h5)
    with h5py.File(h5, "r+") as f:
        f["train/embeddings"][...] = -f["train/embeddings"][...]
        assert np.isfinite(f["train/embeddings"][...]).all()
    for read in (read_embeddings, read_key, list_views):
        with pytest.raises(CorruptCacheError, match="content differs") as err:
            read(h5)
        assert isinstance(err.value, CacheError) and isinstance(err.value, integrity.IntegrityError)
        assert str(h5) in str(err.value)
    with h5py.File(h5, "r+") as f:  # flipped back: the same bytes, read again
        f["train/embeddings"][...] = -f["train/embeddings"][...]
    np.testing.assert_array_equal(read_embeddings(h5).splits["train"][0], before.splits["train"][0])


def test_a_file_without_digest_is_read_and_read_whole(h5):
    integrity.digest_path(h5).unlink()
    cached = read_embeddings(h5)
    n, d = cached.splits["train"][0].shape
    assert read_whole(h5) >= n * d * 4 > 0
    h5.write_bytes(h5.read_bytes()[: h5.stat().st_size // 2])
    with pytest.raises(CacheError):
        read_whole(h5)
