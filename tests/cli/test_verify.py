"""`geneb verify`: every content-digested file of a run checked offline. Exit 0 and a one-line summary when all
match; exit 1 naming every bad file; `--adopt` records the digest of files written before digests. Real finished
files (tests/integrity_support.py); a seeded sample of bytes of each flipped (`sampled_flip_offsets`: both ends,
every tenth of the file, its first and last 4 KiB; the check is a sha256 of the whole file, so a sample that
reaches every region of every kind proves what flipping every byte did), and six truncations of each, all found."""

from __future__ import annotations

import shutil

import pytest

from geneb.cli.app import main
from geneb.core import integrity
from geneb.run.integrity import verify_files
from integrity_support import cut, cut_sizes, finished_files, flipped, sampled_flip_offsets


@pytest.fixture
def run(digested_run, tmp_path, monkeypatch):
    root = tmp_path / "run"
    shutil.copytree(digested_run, root)  # with the config it was made by (config/config.yaml)
    monkeypatch.chdir(root)
    return root


def test_all_good_exits_0_with_a_summary(run, capsys):
    assert main(["verify", "--config", "config/config.yaml"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(f"geneb verify: {len(finished_files(run))} files (")
    assert out[0].endswith("checked, all match their digests")


def test_a_results_dir_outside_results_is_named_with_the_rule(run, capsys):
    assert main(["verify", "--config", "config/config.yaml", "--results-dir", "/tmp/elsewhere"]) == 2
    err = capsys.readouterr().err
    assert "--results-dir '/tmp/elsewhere'" in err and "results or a folder below it" in err and ":;" not in err


def test_every_bad_file_is_named_and_exits_1(run, capsys):
    files = finished_files(run)
    for kind in ("embeddings", "shots"):
        data = bytearray(files[kind].read_bytes())
        data[len(data) // 3] ^= 0x10
        files[kind].write_bytes(bytes(data))
    files["scores"].write_bytes(files["scores"].read_bytes()[:100])
    assert main(["verify", "--config", "config/config.yaml"]) == 1
    out = capsys.readouterr().out.splitlines()
    named = sorted(line.split(":")[0].removeprefix("BAD ") for line in out if line.startswith("BAD "))
    assert named == sorted(str(files[k].relative_to(run)) for k in ("embeddings", "shots", "scores"))
    assert out[-1].endswith(": 3 bad, 0 without a digest")


def test_files_without_digest_are_listed_until_adopted(run, capsys):
    card = finished_files(run)["card"]
    integrity.digest_path(card).unlink()
    assert main(["verify", "--config", "config/config.yaml"]) == 1
    assert f"NO DIGEST {card.relative_to(run)}" in capsys.readouterr().out
    assert main(["verify", "--config", "config/config.yaml", "--adopt"]) == 0
    assert integrity.check(card) is not None and main(["verify", "--config", "config/config.yaml"]) == 0


def test_verify_finds_every_flip_and_truncation(run):
    found = total = 0
    for kind, path in finished_files(run).items():
        original = path.read_bytes()
        damage = [flipped(path, o, original) for o in sampled_flip_offsets(len(original), kind)]
        damage += [cut(path, n, original) for n in cut_sizes(len(original))]
        for done in damage:
            with done:
                report = verify_files([path])
            found += list(report.bad) == [path]
            total += 1
        assert verify_files([path]).ok
    assert found == total >= 9 * 60  # 9 kinds x (58 flips + 6 truncations)
