"""geneb.run.integrity while planning: a file that differs from its digest is moved aside (never deleted) with its
digest file, a file without a digest is adopted once when it reads whole and set aside when it does not, a dry
run moves and records nothing, and a file unchanged since its last check (its stamp) is not hashed again. Real
finished files (tests/integrity_support.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from geneb.core import integrity
from geneb.run.integrity import StampStore, set_aside_bad
from integrity_support import finished_files


@pytest.fixture
def run(digested_run, tmp_path, monkeypatch):
    root = tmp_path / "run"
    shutil.copytree(digested_run, root)
    monkeypatch.chdir(root)
    return root


def _files(root: Path) -> list[Path]:
    return [p.relative_to(root) for p in finished_files(root).values()]


def _count_hashes(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = integrity.check

    def counting(path):
        seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(integrity, "check", counting)
    return seen


def test_good_files_are_checked_once_then_by_stamp(run, monkeypatch):
    store = StampStore(".geneb/verified.json")
    hashed = _count_hashes(monkeypatch)
    assert set_aside_bad(_files(run), store=store) == ([], [])
    assert len(hashed) == len(_files(run)) and Path(".geneb/verified.json").is_file()
    hashed.clear()
    assert set_aside_bad(_files(run), store=StampStore(".geneb/verified.json")) == ([], [])
    assert hashed == []  # every stamp unchanged: nothing hashed
    scores = finished_files(run)["scores"].relative_to(run)
    scores.write_bytes(scores.read_bytes())  # rewritten: a new mtime, so hashed again (and still good)
    assert set_aside_bad(_files(run), store=StampStore(".geneb/verified.json")) == ([], [])
    assert hashed == [scores]


def test_a_changed_file_is_moved_aside_with_its_digest_and_a_dry_run_moves_nothing(run):
    store = StampStore(".geneb/verified.json")
    set_aside_bad(_files(run), store=store)  # all stamped good
    probes = finished_files(run)["probes"].relative_to(run)
    data = bytearray(probes.read_bytes())
    data[100] ^= 0x01
    probes.write_bytes(bytes(data))
    bad, _ = set_aside_bad(_files(run), store=StampStore(".geneb/verified.json"), dry_run=True)
    assert [(b.path, b.aside) for b in bad] == [(probes, None)] and probes.read_bytes() == bytes(data)
    assert isinstance(bad[0].error, integrity.IntegrityError)
    bad, _ = set_aside_bad(_files(run), store=StampStore(".geneb/verified.json"))
    aside = probes.with_name(f".corrupt-{probes.name}.0")
    assert [(b.path, b.aside) for b in bad] == [(probes, aside)]
    assert not probes.exists() and aside.read_bytes() == bytes(data)
    assert integrity.digest_path(aside).is_file() and not integrity.digest_path(probes).exists()


def test_a_file_without_digest_is_adopted_once_or_set_aside_when_it_does_not_read(run):
    files = finished_files(run)
    card, h5, test = (files[k].relative_to(run) for k in ("card", "embeddings", "test"))
    for path in (card, h5, test):
        integrity.digest_path(path).unlink()
    test.write_bytes(test.read_bytes()[:-10])  # a truncated parquet written before digests: unreadable
    bad, adopted = set_aside_bad(_files(run), store=StampStore(None), dry_run=True)
    assert adopted == [card, h5] and [b.path for b in bad] == [test] and test.exists()
    assert not integrity.digest_path(card).exists()  # a dry run records nothing
    bad, adopted = set_aside_bad(_files(run), store=StampStore(None))
    assert adopted == [card, h5] and integrity.check(card) is not None and integrity.check(h5) is not None
    assert [b.aside for b in bad] == [test.with_name(f".partial-{test.name}.0")] and not test.exists()
    assert set_aside_bad(_files(run), store=StampStore(None)) == ([], [])  # adopted once


def test_an_incomplete_embedding_file_without_digest_is_set_aside(run):
    import h5py

    h5 = finished_files(run)["embeddings"].relative_to(run)
    integrity.digest_path(h5).unlink()
    with h5py.File(h5, "r+") as f:
        del f.attrs["complete"]
    bad, adopted = set_aside_bad([h5], store=StampStore(None))
    assert adopted == [] and [b.aside for b in bad] == [h5.with_name(f".partial-{h5.name}.0")]
    assert set_aside_bad([h5], store=StampStore(None)) == ([], [])  # nothing left to move
