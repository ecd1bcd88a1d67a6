"""geneb.core.integrity: every artifact a later step trusts is checked by content when it is read. Real finished
files (tests/integrity_support.py: a small run of a real task by the project's own writers); of each kind of file,
a seeded sample of single-byte flips (the first and last byte, 4 offsets from each tenth of the file, 8 from each
of its first and last 4 KiB: 58 per kind, `sampled_flip_offsets`, seed FLIP_SEED 20240917 with the kind's crc32)
and six truncations, each one refused by the reader the workflow uses for that kind of file, naming the file."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from geneb.core import integrity
from integrity_support import PROTOCOL, TAIL, TASK, cut, cut_sizes, finished_files, flipped, sampled_flip_offsets


def _reader(kind: str, tmp_path):
    """The reader the workflow's steps use for a file of `kind` (a call taking the path)."""
    from geneb.extract.cache import read_embeddings
    from geneb.probe.shots import read_shots
    from geneb.tables.aggregate import concat_tables
    from geneb.tables.scores import load_scores
    from geneb.tasks.audit import read_audit
    from geneb.tasks.prepare import read_card

    return {
        "train": integrity.read_parquet,
        "test": integrity.read_parquet,
        "predictions": integrity.read_parquet,
        "card": read_card,
        "audit": read_audit,
        "shots": lambda p: read_shots(p, task=TASK, data_hash="", settings={}, protocol=PROTOCOL),
        "embeddings": read_embeddings,
        "probes": lambda p: concat_tables([p], tmp_path / "out.parquet"),
        "scores": load_scores,
    }[kind]


KINDS = ("train", "test", "card", "audit", "shots", "embeddings", "probes", "predictions", "scores")


@pytest.fixture
def run_copy(digested_run, tmp_path):
    root = tmp_path / "run"
    shutil.copytree(digested_run, root)
    return root


@pytest.mark.parametrize("kind", KINDS)
def test_every_flipped_byte_and_every_truncation_is_refused_by_its_reader(kind, run_copy, tmp_path):
    """Flips a seeded sample of the file's bytes (`sampled_flip_offsets`: offsets 0 and size-1, 4 drawn from each
    tenth of the file, 8 from each of its first and last 4 KiB; numpy.random.default_rng([20240917,
    crc32(kind)]), the same 58 offsets on every run) and cuts it to each of `cut_sizes`; each is refused by the
    kind's reader with an IntegrityError naming the file, and the restored file matches its digest again.

    A sample is enough: the check is a sha256 of the whole file compared before the file is parsed, so any changed
    byte changes the digest, whatever its position, and flipping every byte would only repeat that. What a flip
    can show is that the digest covers that region and that the reader checks it first: a digest of part of the
    file (the header, a prefix, the data without the footer) or a reader that parses before checking misses the
    flips of some region, and the sample flips bytes in every tenth, the header and the last bytes (the parquet
    footer, the HDF5 attributes, the end of a JSON) of every kind of protected file."""
    path = finished_files(run_copy)[kind]
    read = _reader(kind, tmp_path)
    original = path.read_bytes()
    if kind != "shots":  # a shot file is checked against its task's draw settings after its digest
        read(path)
    nbytes = len(original)
    offsets = sampled_flip_offsets(nbytes, kind)
    assert offsets == sampled_flip_offsets(nbytes, kind)  # seeded: the same sample on every run
    # every region is flipped: each tenth, the first and the last byte, the last 4 KiB
    assert {o * 10 // nbytes for o in offsets} == set(range(10)) and {0, nbytes - 1} <= set(offsets)
    assert any(o >= nbytes - TAIL for o in offsets)
    refused = 0
    for offset in offsets:
        with flipped(path, offset, original), pytest.raises(integrity.IntegrityError) as err:
            read(path)
        assert str(path) in str(err.value) and err.value.path == path
        refused += 1
    for size in cut_sizes(len(original)):
        with cut(path, size, original), pytest.raises(integrity.IntegrityError, match="content differs"):
            read(path)
        refused += 1
    assert refused == len(offsets) + len(cut_sizes(len(original))) >= 60  # 58 flips and 6 truncations of a kind
    assert integrity.check(path) is not None  # restored: matches again


def test_the_digest_file_is_sha256sum_format(digested_run):
    """`sha256sum -c <file>.sha256` in the file's folder checks it with no GENEB code."""
    for path in finished_files(digested_run).values():
        side = integrity.digest_path(path)
        done = subprocess.run(["sha256sum", "-c", side.name], cwd=path.parent, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.strip() == f"{path.name}: OK", done.stdout + done.stderr


def test_a_file_written_before_digests_is_read_with_one_warning(run_copy, caplog):
    path = finished_files(run_copy)["scores"]
    integrity.digest_path(path).unlink()
    with caplog.at_level("WARNING", logger="geneb.core.integrity"):
        first = integrity.read_parquet(path)
        integrity.read_parquet(path)
    lines = [r.getMessage() for r in caplog.records if "no content digest" in r.getMessage()]
    assert len(lines) == 1 and str(path) in lines[0] and len(first) > 0
    assert integrity.check(path) is None


def test_a_broken_digest_file_is_refused(run_copy):
    path = finished_files(run_copy)["card"]
    integrity.digest_path(path).write_text("not a digest\n")
    with pytest.raises(integrity.IntegrityError, match="digest file"):
        integrity.read_json(path)


def test_sealed_write_that_fails_leaves_neither_file_nor_digest(tmp_path):
    target = tmp_path / "t.json"
    with pytest.raises(RuntimeError), integrity.sealed_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_replace_carries_the_digest(tmp_path):
    src, dst = tmp_path / ".tmp-x.json", tmp_path / "x.json"
    integrity.write_text(src, '{"a": 1}')
    integrity.replace(src, dst)
    assert integrity.read_json(dst) == {"a": 1} and not integrity.digest_path(src).exists()
    assert integrity.digest_path(dst).read_text() == f"{integrity.sha256_file(dst)}  x.json\n"
