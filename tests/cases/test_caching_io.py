"""Failure cases of kind "caching/IO" (../shared/cases/CASES.md): HDF5 file locking on network file
systems, and several jobs writing HDF5. Policy: docs/footguns.md ("Caching and IO").
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from extraction_support import random_dna
from geneb.extract.cache import (
    SplitEmbeddings,
    configure_hdf5_locking,
    is_complete_file,
    read_embeddings,
    write_embeddings,
)
from geneb.extract.step import extract_task
from geneb.registry.load import extraction_settings, load_registry
from workflow_support import dry_run, run_plan, write_small_config

ROOT = Path(__file__).resolve().parents[2]


def _file(path: Path) -> Path:
    split = SplitEmbeddings(np.arange(6, dtype=np.float32).reshape(3, 2), np.arange(3), np.ones(3, np.int32))
    write_embeddings(path, {"train": split, "test": split}, {"model": "M", "task": "T"}, hdf5_locking="off")
    return path


def _python(code: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


# ---- HDF5 file locking on NFS/Lustre ------------------------------------------------------------------------------


def test_switch_values():
    assert configure_hdf5_locking("on") == {"locking": True}
    assert configure_hdf5_locking("off") == {"locking": False} and os.environ["HDF5_USE_FILE_LOCKING"] == "FALSE"
    with pytest.raises(ValueError, match="hdf5_locking must be one of"):
        configure_hdf5_locking("maybe")


def test_locking_is_set_before_h5py_is_imported():
    """Importing the cache module does not import h5py, so the switch (env var) is in place before HDF5 starts."""
    p = _python("""
        import sys
        from geneb.extract.cache import configure_hdf5_locking
        assert "h5py" not in sys.modules
        configure_hdf5_locking("off")
        import os, h5py
        print(os.environ["HDF5_USE_FILE_LOCKING"])
    """)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert out.strip() == "FALSE"
    script = (ROOT / "workflow" / "scripts" / "extract_embeddings.py").read_text()
    assert script.index("configure_hdf5_locking(") < script.index(
        "from geneb.extract.job"
    )  # the extraction job imports h5py


def test_two_readers_at_once_with_locking_off(tmp_path):
    """A second process holds the cache file open while this one reads it, with locking disabled."""
    path = _file(tmp_path / "shared.h5")
    holder = _python(f"""
        import sys, time
        from geneb.extract.cache import configure_hdf5_locking
        import h5py
        with h5py.File({str(path)!r}, "r", **configure_hdf5_locking("off")) as f:
            print("open", flush=True)
            time.sleep(3)
            print(f["train"]["embeddings"].shape, flush=True)
    """)
    assert holder.stdout.readline().strip() == "open"
    t0 = time.time()
    cached = read_embeddings(path, hdf5_locking="off")
    assert time.time() - t0 < 3  # did not wait for the other reader
    np.testing.assert_array_equal(cached.splits["train"][0], np.arange(6, dtype=np.float32).reshape(3, 2))
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err


def test_flag_is_recorded_in_the_file(repo, make_task, tmp_path):
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    task = make_task([random_dna(40, 1), random_dna(50, 2)], [random_dna(30, 3)])
    extract_task(settings, task, tmp_path / "e.h5", hdf5_locking="off", progress=False)
    with h5py.File(tmp_path / "e.h5", "r", locking=False) as f:
        assert f.attrs["hdf5_locking"] == "off"
    config_schema = yaml.safe_load((repo / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert config_schema["properties"]["execution"]["properties"]["hdf5_locking"]["enum"] == ["auto", "on", "off"]


# ---- several jobs writing HDF5 ------------------------------------------------------------------------------------


def test_concurrent_writers_in_one_folder(tmp_path):
    """Two processes write two caches into the same folder at once: both complete, no temporary leftovers."""
    procs = [
        _python(f"""
            import numpy as np
            from geneb.extract.cache import SplitEmbeddings, write_embeddings
            s = SplitEmbeddings(np.full((2000, 64), {i}, np.float32), np.arange(2000), np.ones(2000, np.int32))
            for _ in range(5):
                write_embeddings({str(tmp_path / f"task{i}.h5")!r}, {{"train": s}}, {{"model": "M", "task": "task{i}"}})
        """)
        for i in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    for i in range(2):
        cached = read_embeddings(tmp_path / f"task{i}.h5", splits=("train",))
        assert cached.key["task"] == f"task{i}" and (cached.splits["train"][0] == i).all()
    # each beside its content digest (geneb.core.integrity), no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task0.h5", "task0.h5.sha256", "task1.h5", "task1.h5.sha256"]


PARALLEL_TASKS = ["idna_ms_5hmc_h_sapiens", "gue_mouse_tf_0"]
PARALLEL_MODELS = ["kmer-3", "kmer-4"]


@pytest.fixture(scope="module")
def workflow_dir(tmp_path_factory, shared):
    """A run folder of the real Snakefile (workflow_support.write_small_config: ../shared's tasks, which `shared`
    checks): two real tasks (capped small) and two k-mer models, nothing run. Its own run, not the shared finished
    one: the test counts the task preparations and extractions of a fresh run."""
    d = tmp_path_factory.mktemp("wf")
    write_small_config(d, tasks=PARALLEL_TASKS, models=PARALLEL_MODELS, caps=(100, 50))
    return d


def _snakemake(d: Path, *args: str) -> subprocess.CompletedProcess:
    """The real `snakemake -s <repo>/Snakefile --cores 2 <args>` in `d` (a subprocess), without the task-source and
    partial-run variables, which would redirect the run."""
    env = {k: v for k, v in os.environ.items() if k not in ("GENEB_TASK_SOURCE", "GENEB_PARTIAL_RUN")}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(d), "--cores", "2", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=d,
        env=env,
    )


def test_one_output_per_job_and_two_parallel_jobs(workflow_dir):
    """Every extraction job of the DAG writes its own file (model, settings hash, task); two jobs run at once
    (--cores 2) produce two complete files, and neither touches the other's."""
    d = workflow_dir
    plan = run_plan(d)
    targets = [plan.layout.embedding_file(m, t) for m in PARALLEL_MODELS for t in PARALLEL_TASKS]
    assert len(set(targets)) == 4
    # the DAG, planned in this process (workflow_support.dry_run: Snakemake's API, what `snakemake -n` plans)
    jobs = dry_run(d, *targets)
    counts = Counter(j["rule"] for j in jobs if j["rule"] in ("extract_embeddings", "prepare_task"))
    assert counts == {"extract_embeddings": 4, "prepare_task": 2}, jobs
    assert sorted(j["output"][0] for j in jobs if j["rule"] == "extract_embeddings") == sorted(targets)
    two = targets[:2]  # kmer-3 on both tasks
    run = _snakemake(d, *two, "--quiet", "all")
    assert run.returncode == 0, run.stderr[-3000:]
    for t in two:
        cached = read_embeddings(d / t)
        assert cached.key["task"] == Path(t).parent.name and cached.key["model"] == "kmer-3"  # <task>/<task hash>.h5
    leftovers = [p for p in (d / "resources" / "embeddings").rglob("*") if p.name.startswith(".tmp-")]
    assert not leftovers


def test_lock_refusal_does_not_make_a_complete_file_look_partial(tmp_path, monkeypatch):
    """On a file system without locks every open with locking fails (errno 37); the pre-DAG completeness check
    must still see a complete file as complete (else every run would move all caches aside)."""
    from geneb.run import integrity

    path = _file(tmp_path / "e.h5")
    real = h5py.File

    def no_locks(name, mode="r", *args, locking=None, **kwargs):
        if locking is not False:
            raise OSError(
                "Unable to synchronously open file (unable to lock file, errno = 37, error message = 'No locks available')"
            )
        return real(name, mode, *args, locking=locking, **kwargs)

    monkeypatch.setattr(h5py, "File", no_locks)
    assert is_complete_file(path) and is_complete_file(path, hdf5_locking="on")
    assert integrity.set_aside_bad([path], store=integrity.StampStore(None))[0] == [] and path.exists()
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)
    with pytest.raises(Exception, match=r"cannot lock the file .*hdf5_locking: off") as err:
        read_embeddings(path, hdf5_locking="on")
    assert str(path) in str(err.value)
    assert read_embeddings(path, hdf5_locking="off").key["model"] == "M"


@pytest.mark.parametrize("damage", ["zero bytes", "truncated", "no key", "key not JSON"])
def test_broken_cache_files_are_named_and_never_read(tmp_path, damage):
    """Whatever is wrong with a cache file, the reader names the file and refuses it; the pre-DAG check sets
    it aside."""
    from geneb.extract.cache import CacheError, read_key
    from geneb.run import integrity

    path = _file(tmp_path / "e.h5")
    if damage == "zero bytes":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:1500])
    else:
        with h5py.File(path, "r+") as f:
            if damage == "no key":
                del f.attrs["extraction_key"]
            else:
                f.attrs["extraction_key"] = "{not json"
    for read in (read_embeddings, read_key):
        with pytest.raises(CacheError, match="rerun extraction") as err:
            read(path, hdf5_locking="off")
        assert str(path) in str(err.value)
    if damage in ("zero bytes", "truncated"):
        assert not is_complete_file(path, hdf5_locking="off")
        bad, _ = integrity.set_aside_bad([path], store=integrity.StampStore(None), hdf5_locking="off")
        assert [b.path for b in bad] == [path]
    assert not hasattr(integrity, "is_complete_embedding_file")  # one completeness check: extract.cache owns it
