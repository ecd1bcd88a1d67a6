"""Weights from outside the hub (geneb.registry.weights, geneb.registry.weights): source kinds external (a folder, archive or file the
config key `model_weights` points at) and download (a URL with its sha256, fetched with pooch), the cache
folders they become, the settings hash (content, never the location), the messages when weights are missing or
wrong, and `geneb weights fetch` / `list`."""

from __future__ import annotations

import hashlib
import http.server
import io
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from geneb import cli
from geneb.registry import weights as W
from geneb.registry import weights as fetch
from geneb.registry.families import build
from geneb.registry.load import (
    extraction_hash,
    extraction_settings,
    load_locked_registry,
    load_registry,
    refusals,
    runnable,
)
from geneb.registry.registry import NotRunnableError, RegistryError
from hub_support import closed_endpoint, serve

ALPHABET = {"allow_iupac": True}
FILES = {"config.json": b'{"d": 8}', "weights/model.pth": b"\x00\x01weights\x02" * 50}


def _entry(source: dict) -> dict:
    """A registry entry of the k-mer family (an adapter that needs no weights, so `build` runs in a test)."""
    return {
        "display": "stand-in",
        "family": "kmer",
        "source": source,
        "builtin": {"k": 2},
        "architecture_family": "kmer",
        "tokenizer_type": "k-mer",
        "params": 0,
        "pretraining_domain": "none",
        "license": "test",
    }


def _sheet(tmp_path: Path, **sources: dict) -> Path:
    sheet = tmp_path / "models.yaml"
    data = {"schema_version": 1, "models": {m.replace("_", "-"): _entry(s) for m, s in sources.items()}}
    sheet.write_text(yaml.safe_dump(data))
    return sheet


def _load(sheet: Path, weights: dict | None = None, weights_dir: Path | None = None):
    return load_registry(sheet, envs_dir=None, weights=weights, weights_dir=weights_dir)


def _folder(root: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _zip(path: Path, files: dict[str, bytes] = FILES, top: str = "") -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for rel, data in files.items():
            z.writestr(top + rel, data)
    return path


def _tgz(path: Path, files: dict[str, bytes] = FILES, top: str = "") -> Path:
    with tarfile.open(path, "w:gz") as t:
        for rel, data in files.items():
            info = tarfile.TarInfo(top + rel)
            info.size = len(data)
            info.mtime = 0
            t.addfile(info, io.BytesIO(data))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _settings(registry, model="m"):
    return extraction_settings(registry, model, ALPHABET)


EXTERNAL = {"kind": "external", "where": "a drive", "fetch": "download the files", "expect": ["config.json"]}


# ---- kind external: a folder ----------------------------------------------------------------------------


def test_external_folder_is_identified_by_its_content_not_its_path(tmp_path):
    sheet = _sheet(tmp_path, m=EXTERNAL)
    a = _folder(tmp_path / "a")
    b = _folder(tmp_path / "elsewhere" / "b")
    sa, sb = _settings(_load(sheet, {"m": str(a)})), _settings(_load(sheet, {"m": str(b)}))
    assert sa["source"]["path"] == str(a) and sb["source"]["path"] == str(b)  # what the adapter reads
    assert sa["source"]["fingerprint"] == sb["source"]["fingerprint"]
    assert extraction_hash(sa) == extraction_hash(sb)
    (b / "weights" / "model.pth").write_bytes(b"other weights")
    sc = _settings(_load(sheet, {"m": str(b)}))
    assert extraction_hash(sc) != extraction_hash(sa)
    assert "fetch" not in sa["source"] and "where" not in sa["source"]  # free text stays out of the settings
    ok, how = runnable(_load(sheet, {"m": str(a)}).spec("m"))
    assert ok and "model_weights" in how


def test_external_folder_without_an_expected_file_names_it(tmp_path):
    sheet = _sheet(tmp_path, m={**EXTERNAL, "expect": ["config.json", "weights/model.pth", "vocab.txt"]})
    folder = _folder(tmp_path / "w")
    with pytest.raises(NotRunnableError) as err:
        _settings(_load(sheet, {"m": str(folder)}))
    msg = str(err.value)
    assert "lacks vocab.txt" in msg and "config.json" not in msg.split("lacks")[1].split(";")[0]
    assert "download the files" in msg


def test_external_weights_not_given_say_what_to_fetch_and_the_config_line(tmp_path):
    sheet = _sheet(tmp_path, m={**EXTERNAL, "url": "https://drive.example/x"})
    with pytest.raises(NotRunnableError) as err:
        _settings(_load(sheet))
    msg = str(err.value)
    assert "download the files" in msg and "https://drive.example/x" in msg
    assert "`model_weights: {m: /path/to/m}`" in msg and "config.json" in msg
    with pytest.raises(NotRunnableError, match="does not exist"):
        _settings(_load(sheet, {"m": str(tmp_path / "nowhere")}))


def test_the_report_of_a_planned_run_says_what_to_fetch_and_then_accepts_the_weights(tmp_path):
    sheet = _sheet(tmp_path, m=EXTERNAL)
    pins = tmp_path / "pins.yaml"
    _, _, message = load_locked_registry(sheet, None, pins, ["m"], resolve=False)
    assert "1 have weights outside the hub that GENEB cannot download: m" in message
    assert "- m: " in message and "download the files" in message and "`model_weights: {m: /path/to/m}`" in message
    folder = _folder(tmp_path / "w")
    registry, _, message = load_locked_registry(sheet, None, pins, ["m"], resolve=False, weights={"m": str(folder)})
    assert message == "" and registry.spec("m").source.path == str(folder)


def test_file_sha256_mismatch_names_model_file_expected_and_actual(tmp_path):
    folder = _folder(tmp_path / "w")
    good = _sha(folder / "config.json")
    sheet = _sheet(tmp_path, m={**EXTERNAL, "file_sha256": {"config.json": "0" * 64}})
    with pytest.raises(W.WeightsError) as err:
        _settings(_load(sheet, {"m": str(folder)}))
    assert all(s in str(err.value) for s in ("model m", "config.json", "0" * 64, good))
    sheet = _sheet(tmp_path, m={**EXTERNAL, "file_sha256": {"config.json": good}})
    assert _settings(_load(sheet, {"m": str(folder)}))["source"]["fingerprint"]


def test_model_weights_for_an_unknown_or_hub_model_is_an_error(tmp_path):
    sheet = _sheet(tmp_path, dnagpt=EXTERNAL, h={"kind": "hub-unpinned", "hub_id": "org/h"})
    with pytest.raises(RegistryError, match=r"model 'dnagtp' is not in the registry; did you mean \['dnagpt'\]"):
        _load(sheet, {"dnagtp": "/x"})
    with pytest.raises(RegistryError, match="model h has source kind 'hub-unpinned'"):
        _load(sheet, {"h": "/x"})


# ---- kind external: an archive or a single file ----------------------------------------------------------


@pytest.mark.parametrize("make", [_zip, _tgz], ids=["zip", "tar.gz"])
def test_external_archive_is_unpacked_once_into_the_cache_and_identified_by_its_sha256(tmp_path, make):
    sheet = _sheet(tmp_path, m=EXTERNAL)
    suffix = ".zip" if make is _zip else ".tar.gz"
    a = make(tmp_path / f"w{suffix}", top="model/")  # one top-level folder: that folder is the model folder
    b = tmp_path / "copy" / f"same{suffix}"
    b.parent.mkdir()
    shutil.copy(a, b)
    cache = tmp_path / "cache"
    sa = _settings(_load(sheet, {"m": str(a)}, cache))
    sb = _settings(_load(sheet, {"m": str(b)}, cache))
    assert sa["source"]["sha256"] == _sha(a) and sa["source"]["unpack"] is True
    assert sa["source"]["path"] == str(cache / "m" / _sha(a)[:12])
    assert extraction_hash(sa) == extraction_hash(sb)
    build(sa)  # the adapter's build step unpacks first
    folder = Path(sa["source"]["path"])
    assert (folder / "config.json").read_bytes() == FILES["config.json"]
    assert (folder / "weights" / "model.pth").read_bytes() == FILES["weights/model.pth"]
    assert W._read_marker(folder)["sha256"] == _sha(a)
    stamp = (folder / W._MARKER).stat().st_mtime_ns
    fetch.materialize(sb["source"], "m")  # the same content from elsewhere: already there, nothing rebuilt
    assert (folder / W._MARKER).stat().st_mtime_ns == stamp
    assert not list((cache / "m").glob(".partial-*"))
    c = make(tmp_path / f"changed{suffix}", files={**FILES, "config.json": b"{}"})
    assert extraction_hash(_settings(_load(sheet, {"m": str(c)}, cache))) != extraction_hash(sa)


def test_archive_checksum_mismatch_names_model_file_expected_and_actual(tmp_path):
    archive = _zip(tmp_path / "w.zip")
    sheet = _sheet(tmp_path, m={**EXTERNAL, "sha256": "a" * 64})
    with pytest.raises(W.WeightsError) as err:
        _settings(_load(sheet, {"m": str(archive)}))
    assert all(s in str(err.value) for s in ("model m", str(archive), "a" * 64, _sha(archive)))


def test_archive_without_the_expected_files_leaves_nothing_trusted(tmp_path):
    archive = _zip(tmp_path / "w.zip", files={"other.bin": b"x"})
    sheet = _sheet(tmp_path, m=EXTERNAL)
    settings = _settings(_load(sheet, {"m": str(archive)}, tmp_path / "cache"))
    with pytest.raises(W.WeightsError, match=r"model m: .*w\.zip lacks config\.json"):
        fetch.ensure_weights(settings)
    assert not Path(settings["source"]["path"]).exists()
    assert not list((tmp_path / "cache" / "m").glob(".partial-*"))


def test_a_killed_unpack_leaves_nothing_a_later_run_trusts(tmp_path, monkeypatch):
    archive = _tgz(tmp_path / "w.tgz")
    sheet = _sheet(tmp_path, m=EXTERNAL)
    source = _settings(_load(sheet, {"m": str(archive)}, tmp_path / "cache"))["source"]
    target = Path(source["path"])
    # what a SIGKILL mid-unpack leaves: a half-filled temporary folder of a process that is gone ...
    dead = _dead_pid()
    partial = target.parent / f".partial-{source['sha256'][:12]}-{fetch._host()}-{dead}"
    _folder(partial, {"config.json": b"half"})
    # ... and a folder under the final name without the marker (copied by hand, or an older layout)
    _folder(target, {"config.json": b"stale"})
    assert not W.is_complete(source)
    real_unpack = fetch._unpack

    def killed(model, archive, into):
        real_unpack(model, archive, into)
        raise KeyboardInterrupt  # stands for the kill, after files were written

    monkeypatch.setattr(fetch, "_unpack", killed)
    with pytest.raises(KeyboardInterrupt):
        fetch.materialize(source, "m")
    assert not W.is_complete(source)  # nothing was marked complete
    monkeypatch.setattr(fetch, "_unpack", real_unpack)
    fetch.materialize(source, "m")
    assert W.is_complete(source) and (target / "config.json").read_bytes() == FILES["config.json"]
    assert not partial.exists()  # the dead process's leftover was cleared
    assert not list(target.parent.glob(".partial-*"))


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_single_checkpoint_file_is_linked_into_a_cache_folder_under_its_name(tmp_path):
    ckpt = tmp_path / "downloads" / "dna_gpt0.1b_h.pth"
    ckpt.parent.mkdir()
    ckpt.write_bytes(b"checkpoint bytes")
    sheet = _sheet(tmp_path, m={**EXTERNAL, "expect": ["dna_gpt0.1b_h.pth"]})
    settings = _settings(_load(sheet, {"m": str(ckpt)}, tmp_path / "cache"))
    assert settings["source"]["filename"] == "dna_gpt0.1b_h.pth" and settings["source"]["unpack"] is False
    folder = fetch.materialize(settings["source"], "m")
    assert (folder / "dna_gpt0.1b_h.pth").read_bytes() == b"checkpoint bytes"
    renamed = tmp_path / "other.pth"
    shutil.copy(ckpt, renamed)
    with pytest.raises(NotRunnableError, match="lacks dna_gpt0.1b_h.pth"):
        _settings(_load(sheet, {"m": str(renamed)}))


# ---- the paper's entries ---------------------------------------------------------------------------------


def test_paper_entry_without_weights_names_the_file_to_fetch_and_the_config_line(repo):
    registry = load_registry(repo / "config" / "models.yaml", pins=repo / "config" / "model_revisions.yaml")
    with pytest.raises(NotRunnableError) as err:
        extraction_settings(registry, "dna_gpt0.1b_h", ALPHABET)
    msg = str(err.value)
    assert "dna_gpt0.1b_h.pth" in msg and "drive.google.com" in msg
    assert "`model_weights: {dna_gpt0.1b_h: /path/to/dna_gpt0.1b_h}`" in msg
    for model in ("dna_gpt3b_m", "genomics-fm", "deepgene", "JanusDNA_72_w", "JanusDNA_72_wo"):
        src = registry.spec(model).source
        assert src.kind == "external" and src.fetch and src.url, model
    assert registry.spec("JanusDNA_72_w").source.expect == ("72_with_midattn.ckpt", "72_with_midattn_model_config.json")


def test_paper_entry_given_an_incomplete_folder_lists_the_missing_files(repo, tmp_path):
    folder = _folder(tmp_path / "janus", {"72_with_midattn_model_config.json": b"{}"})
    registry = load_registry(repo / "config" / "models.yaml", weights={"JanusDNA_72_w": str(folder)})
    reasons = [full for _, full in refusals(registry.spec("JanusDNA_72_w"))]
    lacks = [r.split(" lacks ")[1].split(";")[0] for r in reasons if " lacks " in r]
    assert lacks == ["72_with_midattn.ckpt"]  # the file that is missing, not the one that is there


# ---- kind download (pooch, from a server on 127.0.0.1) ---------------------------------------------------


@contextmanager
def _serve(folder: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve the files of `folder` on 127.0.0.1; yields (base URL, request paths seen)."""
    seen: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    with serve(Handler) as url:
        yield url, seen


def test_download_is_fetched_checked_unpacked_and_hashed_by_its_sha256_not_its_url(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    archive = _tgz(served / "w.tar.gz")
    (served / "mirror").mkdir()
    shutil.copy(archive, served / "mirror" / "w.tar.gz")
    cache = tmp_path / "cache"
    with _serve(served) as (base, seen):
        src = {"kind": "download", "url": f"{base}/w.tar.gz", "sha256": _sha(archive), "expect": ["config.json"]}
        sheet = _sheet(tmp_path, m=src)
        settings = _settings(_load(sheet, weights_dir=cache))
        other = _settings(_load(_sheet(tmp_path, m={**src, "url": f"{base}/mirror/w.tar.gz"}), weights_dir=cache))
        assert extraction_hash(settings) == extraction_hash(other)  # another URL, the same bytes
        assert settings["source"]["url"] == f"{base}/w.tar.gz" and settings["source"]["unpack"] is True
        assert not seen  # planning downloads nothing
        build(settings)
        assert seen == ["/w.tar.gz"]
        folder = Path(settings["source"]["path"])
        assert (folder / "weights" / "model.pth").read_bytes() == FILES["weights/model.pth"]
        build(settings)
        assert seen == ["/w.tar.gz"]  # cached: fetched once
        assert not [p for p in (cache / "m").iterdir() if p.name.startswith((".download", ".partial"))]
    changed = {**src, "sha256": "b" * 64}
    assert extraction_hash(_settings(_load(_sheet(tmp_path, m=changed), weights_dir=cache))) != extraction_hash(
        settings
    )


def test_a_copy_of_a_download_given_in_model_weights_is_checked_and_used_without_the_network(tmp_path):
    archive = _zip(tmp_path / "w.zip")
    src = {"kind": "download", "url": f"{closed_endpoint()}/w.zip", "sha256": _sha(archive)}
    sheet = _sheet(tmp_path, m=src)
    cache = tmp_path / "cache"
    settings = _settings(_load(sheet, {"m": str(archive)}, cache))
    assert extraction_hash(settings) == extraction_hash(_settings(_load(sheet, weights_dir=cache)))
    build(settings)  # unpacked from the copy: the closed URL is never asked
    assert (Path(settings["source"]["path"]) / "config.json").is_file()
    with pytest.raises(W.WeightsError, match=f"expected {_sha(archive)}"):
        _settings(_load(sheet, {"m": str(_tgz(tmp_path / "other.tgz"))}, cache))
    with pytest.raises(NotRunnableError, match="a download's copy is the downloaded file itself"):
        _settings(_load(sheet, {"m": str(tmp_path)}, cache))


def test_download_checksum_mismatch_names_model_url_expected_and_actual(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    archive = _zip(served / "w.zip")
    with _serve(served) as (base, _):
        sheet = _sheet(tmp_path, m={"kind": "download", "url": f"{base}/w.zip", "sha256": "c" * 64})
        settings = _settings(_load(sheet, weights_dir=tmp_path / "cache"))
        with pytest.raises(W.WeightsError) as err:
            fetch.ensure_weights(settings)
    assert all(s in str(err.value) for s in ("model m", f"{base}/w.zip", "c" * 64, _sha(archive)))
    assert not Path(settings["source"]["path"]).exists()
    assert not [p for p in (tmp_path / "cache" / "m").iterdir() if not p.name.endswith(".lock")]


def test_offline_download_says_to_run_geneb_weights_fetch(tmp_path):
    sheet = _sheet(tmp_path, m={"kind": "download", "url": f"{closed_endpoint()}/w.zip", "sha256": "d" * 64})
    settings = _settings(_load(sheet, weights_dir=tmp_path / "cache"))
    with pytest.raises(W.WeightsError, match=r"model m: cannot download .*run `geneb weights fetch m` where there is"):
        build(settings)


def test_download_is_refused_by_the_preflight_when_offline_and_not_cached(tmp_path, monkeypatch):
    from geneb.run.checks import _download_cache_problem

    sheet = _sheet(tmp_path, m={"kind": "download", "url": "http://127.0.0.1:9/w.zip", "sha256": "e" * 64})
    spec = _load(sheet).spec("m")
    assert _download_cache_problem(spec, str(tmp_path)) is None  # online: the job fetches it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "`geneb weights fetch m`" in _download_cache_problem(spec, str(tmp_path))


# ---- geneb weights fetch / list --------------------------------------------------------------------------


def test_geneb_weights_fetch_and_list(tmp_path, capsys, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    archive = _zip(served / "w.zip")
    local = _zip(tmp_path / "given.zip")
    monkeypatch.chdir(tmp_path)
    with _serve(served) as (base, seen):
        sheet = _sheet(
            tmp_path,
            d={"kind": "download", "url": f"{base}/w.zip", "sha256": _sha(archive)},
            e=EXTERNAL,
            x={**EXTERNAL, "fetch": "download x.bin from the drive"},
        )
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({"model_weights": {"e": "given.zip"}, "execution": {"weights_dir": "wc"}}))
        args = ["--sheet", str(sheet), "--config", str(config)]
        assert cli.main(["weights", "list", *args]) == 0
        listed = capsys.readouterr().out
        assert "not fetched (`geneb weights fetch d`)" in listed and "archive" in listed
        assert cli.main(["weights", "fetch", "d", "e", *args]) == 0
        out = capsys.readouterr().out
        assert f"d: wc/d/{_sha(archive)[:12]}" in out and f"e: wc/e/{_sha(local)[:12]}" in out
        assert seen == ["/w.zip"]
        assert (tmp_path / "wc" / "d" / _sha(archive)[:12] / "config.json").is_file()
        assert cli.main(["weights", "list", *args]) == 0
        assert "cached" in capsys.readouterr().out
        assert cli.main(["weights", "fetch", "x", *args]) == 2
        err = capsys.readouterr().err
        assert "download x.bin from the drive" in err and "model_weights: {x: /path/to/x}" in err
        assert cli.main(["weights", "fetch", "nope", *args]) == 2
        assert "is not in the registry" in capsys.readouterr().err
