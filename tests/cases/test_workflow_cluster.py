"""Failure cases of kind `workflow/cluster` (../shared/cases/CASES.md): one writer per HDF5 file (the
workflow half), a failed job's partial output, a hard kill midway (SIGKILL, walltime, scancel), GPU requests
that reach SLURM, params that stay equal between calls; and partial reruns, interrupted work, and the Slurm
profile's plan (the runs on a real single-node Slurm: test_workflow_slurm.py).

The tests run the real Snakefile on the shared finished run (conftest `finished_run`: 2 tasks x kmer-3, kmer-4,
capped, built once per session), read as it is or in a copy of their own (`copy_run`) with a changed config; a
test that needs another run (the SIGKILL tests, a test-double Snakefile) builds it under tmp_path and says why.
What would rerun is Snakemake's own plan: `dry_run` and `detailed_summary` (workflow_support) build it in this
process with Snakemake's API; the tests whose point is the command line (options, profiles, a process of its own,
its console) run the real `snakemake -n` (`snakemake_n`), and test_in_process_plan_agrees_with_snakemake_n holds
the two to each other.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
import yaml
from cluster_support import (
    KILL_TASK,
    MODELS,
    REPO,
    SCORES,
    SNAKEFILE,
    TASKS,
    assert_downstream_newer,
    assert_same_scores,
    drop_extractions,
    embedding_files,
    env_for_tests,
    h5_cell,
    job_keys,
    kill_group,
    reason_kinds,
    repo_registry,
    scores,
    shot_file,
    snakemake,
    snakemake_n,
    task_folder,
    wait_for,
    write_kill_config,
)

from geneb.core import integrity
from workflow_support import (
    copy_run,
    detailed_summary,
    dry_run,
    reversed_mappings,
    write_small_config,
)

# ---- finished runs ------------------------------------------------------------------------------------------
# The small run (2 tasks x kmer-3, kmer-4, to the default target) is conftest's session fixture `finished_run`,
# built once for every test file and xdist worker: read it as it is, or take a copy (copy_run) to change it.


@pytest.fixture(scope="module")
def kill_reference(tmp_path_factory) -> Path:
    """An uninterrupted run of the configuration the SIGKILL tests interrupt (write_kill_config): another task,
    model and protocol than the shared finished run, so it is built here, once for both tests; each interrupts a copy
    of it with the work to redo deleted (copy_run), not a run from scratch."""
    run = tmp_path_factory.mktemp("kill_reference")
    write_kill_config(run)
    snakemake(run, SCORES)
    return run


# ---- partial reruns ----------------------------------------------------------------------------------------


def test_finished_run_has_nothing_to_do(finished_run):
    assert dry_run(finished_run) == []
    assert dry_run(finished_run, SCORES) == []
    summary = detailed_summary(finished_run, SCORES)
    assert set(summary["plan"]) == {"no update"}, summary[summary["plan"] != "no update"]


def test_in_process_plan_agrees_with_snakemake_n(finished_run, tmp_path):
    """workflow_support.dry_run (Snakemake's API in this process), which the tests of what a config reruns read,
    plans what the real `snakemake -n` plans: the same jobs (rule, wildcards, outputs) for the same reasons, on a
    finished run whose probe C and seeds changed (missing shot draws, changed probe params, and everything
    downstream up to the report)."""
    run = copy_run(finished_run, tmp_path / "run")
    write_small_config(run, edit=lambda c: c["probe"]["geneb-paper"].update(C=0.5, seeds=[13, 17, 42]))

    def shape(jobs: list[dict]) -> Counter:
        return Counter(
            (j["rule"], tuple(sorted(j["wildcards"].items())), tuple(sorted(j["output"])), reason_kinds(j["reason"]))
            for j in jobs
        )

    in_process, command = dry_run(run), snakemake_n(run)
    assert job_keys(in_process) == job_keys(command)
    assert shape(in_process) == shape(command)
    # the comparison saw every kind of reason and job the tests of this file read
    kinds = set().union(*(reason_kinds(j["reason"]) for j in command))
    assert {"Missing output files", "Params have changed since last execution"} <= kinds, kinds
    assert {"write_shot_indices", "fit_probes", "aggregate_scores"} <= {j["rule"] for j in command}


def test_adding_a_model_runs_only_its_jobs_then_reaggregates(finished_run, tmp_path):
    run = copy_run(finished_run, tmp_path / "run")
    write_small_config(run, models=[*MODELS, "kmer-5"])
    jobs = dry_run(run, SCORES)
    assert job_keys(jobs) == Counter(
        [("extract_embeddings", "kmer-5", t) for t in TASKS]
        + [("fit_probes", "kmer-5", t) for t in TASKS]
        + [("aggregate_scores", "", "")]
    )
    pending = detailed_summary(run, SCORES).query("plan == 'update pending'")
    assert not pending["output_file"].str.contains("kmer-3|kmer-4|resources/tasks|resources/shots").any(), pending
    before = {p: p.stat().st_mtime_ns for p in embedding_files(run)}
    probes_before = {p: p.stat().st_mtime_ns for p in (run / "results" / "probes").rglob("*.parquet")}
    snakemake(run, SCORES)
    assert all(p.stat().st_mtime_ns == t for p, t in before.items()), "an existing embedding was rewritten"
    assert all(p.stat().st_mtime_ns == t for p, t in probes_before.items()), "an existing probe table was rewritten"
    table = scores(run)
    assert set(table["model"]) == {*MODELS, "kmer-5"}
    old = table[table["model"].isin(MODELS)].reset_index(drop=True)
    pd.testing.assert_frame_equal(old, scores(finished_run), check_exact=True)


def _registry_with_rc_average(model: str) -> dict:
    reg = repo_registry()
    reg["models"][model].setdefault("extraction", {})["rc"] = "average"
    return reg


@pytest.mark.parametrize(
    "change, expected",
    [
        # an extraction setting of one model (registry): that model's embeddings and probes, then the table
        ("rc", [("extract_embeddings", "kmer-4", t) for t in TASKS] + [("fit_probes", "kmer-4", t) for t in TASKS]),
        # a probe setting that no shot draw reads (the fixed C): every probe, nothing else
        ("probe_C", [("fit_probes", m, t) for m in MODELS for t in TASKS]),
        # the probe seeds: the shot draws (per task) and every probe
        (
            "seeds",
            [("write_shot_indices", "", t) for t in TASKS] + [("fit_probes", m, t) for m in MODELS for t in TASKS],
        ),
        # one task's test cap: that task's preparation and everything that reads it, not the other task
        (
            "cap_one_task",
            [("prepare_task", "", TASKS[0]), ("write_shot_indices", "", TASKS[0]), ("audit_task", "", TASKS[0])]
            + [(r, m, TASKS[0]) for r in ("extract_embeddings", "fit_probes") for m in MODELS],
        ),
    ],
)
def test_output_affecting_change_reruns_exactly_the_affected_jobs(finished_run, tmp_path, change, expected):
    run = copy_run(finished_run, tmp_path / "run")
    if change == "rc":
        write_small_config(run, registry=_registry_with_rc_average("kmer-4"))
    elif change == "probe_C":
        write_small_config(run, edit=lambda c: c["probe"]["geneb-paper"].update(C=0.5))
    elif change == "seeds":
        write_small_config(run, edit=lambda c: c["probe"]["geneb-paper"].update(seeds=[13, 17, 42]))
    else:
        write_small_config(run, edit=lambda c: c["caps"]["per_task"].update({TASKS[0]: {"max_test": 60}}))
    jobs = dry_run(run, SCORES)
    assert job_keys(jobs) == Counter([*expected, ("aggregate_scores", "", "")])
    # Snakemake's reasons: params changed only for the first rule the change reaches; the rest follow from it.
    # (Not `--list-changes params`: in Snakemake 9.27 it lists every output, changed or not; docs/footguns.md.)
    by_params = {j["rule"] for j in jobs if "Params have changed" in j["reason"]}
    # a change of what decides a cached file's content (extraction settings, shot draws, a task's preparation)
    # gives it a new path (a missing output, so the other config's file stands), not a params change; the probe
    # settings are the probe job's params (its output lives under the config's results_dir)
    assert by_params == ({"fit_probes"} if change in ("probe_C", "seeds") else set())
    if change != "probe_C":
        assert all("Missing output" in j["reason"] for j in jobs if j["rule"] == expected[0][0])
    pending = detailed_summary(run, SCORES).query("plan == 'update pending'")
    assert set(pending["rule"]) == {r for r, _, _ in expected} | {"aggregate_scores"}


@pytest.mark.parametrize("where", ["config", "command_line"])
def test_execution_knobs_rerun_nothing(finished_run, tmp_path, where):
    """Batch size, device, threads, HDF5 locking (config `execution:`), and threads, resources and retries
    on the command line, are not rerun keys: a finished run stays finished."""
    run = copy_run(finished_run, tmp_path / "run")
    if where == "config":
        knobs = {"batch_size": 7, "device": "cuda", "threads": 2, "hdf5_locking": "off"}
        config = write_small_config(run, edit=lambda c: c["execution"].update(knobs))
        assert config["execution"] != yaml.safe_load((finished_run / "config" / "config.yaml").read_text())["execution"]
        assert dry_run(run, SCORES) == []
        assert dry_run(run) == []  # nor the tables, figures and report of the default target
    else:
        # the command line is the point: the real `snakemake -n` with these options
        args = [
            "--set-threads",
            "fit_probes=2",
            "extract_embeddings=2",
            "--retries",
            "3",
            "--set-resources",
            "fit_probes:mem_mb=12345",
            "--default-resources",
            "runtime=7",
        ]
        assert snakemake_n(run, SCORES, *args) == []
        assert snakemake_n(run, *args) == []  # nor the tables, figures and report of the default target


def test_slurm_profile_dry_run_reruns_nothing(finished_run, tmp_path):
    """The cluster profile (device cuda, retries, partitions, resources) changes no rerun key."""
    run = copy_run(finished_run, tmp_path / "run")
    assert snakemake_n(run, "--profile", str(REPO / "profiles" / "slurm"), SCORES) == []


# ---- one writer per embedding file ----------------------------------------------------------------------------

H5_TRACE_SITECUSTOMIZE = '''
"""Test instrumentation (GENEB, one writer per HDF5 file): log every h5py.File open (pid, path, mode) and each
process's lifetime."""
import atexit, json, os, sys, time
_trace = os.environ.get("GENEB_TEST_H5_TRACE")
if _trace:
    def _log(**rec):
        with open(_trace, "a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "t": time.time(), **rec}) + "\\n")
    _log(event="start", argv=sys.argv[:3])
    atexit.register(lambda: _log(event="end"))
    import h5py
    _File = h5py.File
    class _TracedFile(_File):
        def __init__(self, name, mode="r", *args, **kwargs):
            _log(event="open", path=os.path.abspath(os.fspath(name)), mode=mode)
            super().__init__(name, mode, *args, **kwargs)
    h5py.File = _TracedFile
'''


def test_each_embed_job_writes_only_its_own_file(finished_run, tmp_path):
    """Three k-mer models extract TASKS[0], two at a time, each process traced: each writes its own file only. On a
    copy of the finished run (its task prepared) without its embeddings and results."""
    run = copy_run(finished_run, tmp_path / "run")
    models = ["kmer-3", "kmer-4", "kmer-5"]
    drop_extractions(run)
    write_small_config(run, tasks=TASKS[:1], models=models)
    # the DAG: one distinct output per (model, settings hash, task), the hash folder per model
    jobs = [j for j in dry_run(run, SCORES) if j["rule"] == "extract_embeddings"]
    outputs = [j["output"][0] for j in jobs]
    assert len(outputs) == len(set(outputs)) == len(models)
    for j in jobs:
        wc = j["wildcards"]
        assert j["output"] == [f"resources/embeddings/{wc['model']}/{wc['xhash']}/{wc['task']}/{wc['thash']}.h5"]
    assert len({j["wildcards"]["xhash"] for j in jobs}) == len(models)  # k differs: settings hashes differ
    # run the extractions two at a time and trace every HDF5 open of every process
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(H5_TRACE_SITECUSTOMIZE)
    trace = tmp_path / "h5trace.jsonl"
    env = env_for_tests(
        GENEB_TEST_H5_TRACE=str(trace), PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    )
    snakemake(run, "--until", "extract_embeddings", env=env)
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    opens = [r for r in records if r["event"] == "open"]
    writers: dict[int, list[dict]] = {}
    for r in opens:
        if r["mode"] != "r":
            writers.setdefault(r["pid"], []).append(r)
    assert len(writers) == len(models), f"expected one writing process per extraction job: {writers}"
    targets = {}
    for pid, recs in writers.items():
        parents = {Path(r["path"]).parent for r in recs}
        assert len(parents) == 1, f"process {pid} wrote into several folders: {parents}"
        for r in recs:
            # the atomic temporary name (the model server's own temporary name under it), in the task's folder
            # (resources/embeddings/<model>/<xhash>/<task>/<task hash>.h5)
            thash = Path(outputs[0]).stem
            assert Path(r["path"]).parent.name == TASKS[0], r
            assert Path(r["path"]).name.startswith((f".tmp-{thash}.h5.", f".tmp-.tmp-{thash}.h5.server-")), r
        targets[pid] = parents.pop()
        # this process opened no HDF5 file of another job, in any mode
        foreign = [r for r in opens if r["pid"] == pid and Path(r["path"]).parent != targets[pid]]
        assert not foreign, foreign
    assert len(set(targets.values())) == len(models), "two jobs wrote into one folder"
    assert sorted(targets.values()) == sorted((run / o).parent.resolve() for o in outputs)
    # the jobs really ran at the same time (-j 2): at least two writer processes overlap in time
    life = {
        pid: (min(r["t"] for r in records if r["pid"] == pid), max(r["t"] for r in records if r["pid"] == pid))
        for pid in writers
    }
    spans = sorted(life.values())
    assert any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)), (
        f"extraction processes never overlapped: {spans}"
    )
    for o in outputs:
        with h5py.File(run / o, "r") as f:
            assert bool(f.attrs["complete"])


# ---- a failed job's partial output ----------------------------------------------------------------------------

HALF_WRITER = """
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], "w") as f:  # a non-atomic writer that dies half way: no `complete` attribute
    f.create_group("train").create_dataset("embeddings", data=np.zeros((3, 4), dtype="float32"))
"""


def test_failed_job_partial_output_is_rescheduled(tmp_path):
    """A test-double embed rule writes half its HDF5 output and exits 1 under --keep-incomplete. Snakemake
    9.27 records that output with incomplete=false (the regression of the case), so GENEB does not rely on
    it: the partial-file check that common.smk runs before every DAG moves the file aside, and the job is
    scheduled again; GENEB's reader refuses the file by itself. Its own folder and one-rule Snakefile (the test
    double), planned by the real `snakemake -n` (dry_run plans the repository's Snakefile only)."""
    from geneb.extract.cache import IncompleteCacheError, read_embeddings
    from geneb.run.integrity import StampStore, set_aside_bad

    wf = tmp_path / "wf"
    wf.mkdir()
    (wf / "half.py").write_text(HALF_WRITER)
    (wf / "Snakefile").write_text(
        textwrap.dedent(f"""
        rule embed:
            output: "resources/embeddings/m/0123456789ab/t.h5"
            shell: "{sys.executable} {wf / "half.py"} {{output}}; exit 1"
    """)
    )
    out = wf / "resources/embeddings/m/0123456789ab/t.h5"
    failed = snakemake(wf, "--keep-incomplete", str(out.relative_to(wf)), check=False, snakefile=wf / "Snakefile")
    assert failed.returncode != 0 and out.exists()
    with pytest.raises(IncompleteCacheError):
        read_embeddings(out)
    bad, _ = set_aside_bad([out], store=StampStore(None))
    assert [(b.path, b.aside) for b in bad] == [(out, out.with_name(".partial-t.h5.0"))] and not out.exists()
    jobs = snakemake_n(wf, snakefile=wf / "Snakefile")
    assert [j["rule"] for j in jobs] == ["embed"] and "Missing output" in jobs[0]["reason"]
    assert set_aside_bad([out], store=StampStore(None)) == ([], [])  # a missing file is left alone


def test_half_written_embedding_in_the_workflow_is_extracted_again(finished_run, tmp_path):
    """The state a failed extraction leaves when Snakemake records its partial output as complete: the
    embedding file is half written (one cut to half its bytes, one without its `complete` attribute) and
    nothing downstream of it exists. A dry run moves nothing and names both; the run sets them aside, extracts them
    again (not only the probes, which would refuse the files) and the scores equal the uninterrupted run."""
    run = copy_run(finished_run, tmp_path / "run")
    files = {h5_cell(p): p for p in embedding_files(run)}
    cut, unmarked = files[("kmer-3", TASKS[0])], files[("kmer-4", TASKS[1])]
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with h5py.File(unmarked, "r+") as f:
        del f.attrs["complete"]
    for model, task in (("kmer-3", TASKS[0]), ("kmer-4", TASKS[1])):
        for kind in ("probes", "predictions"):
            (run / "results" / kind / "geneb-paper" / model / f"{task}.parquet").unlink()
    (run / SCORES).unlink()
    damaged = {p: p.read_bytes() for p in (cut, unmarked)}
    dry = snakemake(run, "-n", SCORES).stdout  # the command's console is the point: a subprocess
    # a dry run moves nothing: it names both files, which a real run moves aside and extracts again
    assert {p: p.read_bytes() for p in damaged} == damaged and not list(run.rglob(".corrupt-*"))
    lines = [line for line in dry.splitlines() if line.startswith("GENEB ERROR (workflow plan)")]
    assert len(lines) == 2 and all("dry run: nothing moved" in line for line in lines), dry[-3000:]
    done = snakemake(run, SCORES).stdout
    assert done.count("rule extract_embeddings:") == 2 and done.count("rule fit_probes:") == 2
    # both differ from the digest recorded when they were written: moved aside, never deleted
    assert (cut.parent / f".corrupt-{cut.name}.0").read_bytes() == damaged[cut]
    assert (unmarked.parent / f".corrupt-{unmarked.name}.0").read_bytes() == damaged[unmarked]
    assert_same_scores(run, finished_run)
    assert_downstream_newer(run)


def test_probe_refuses_partial_embedding_by_itself(finished_run, tmp_path):
    """Even if nothing reschedules a partial embedding file, the probe job refuses it and writes nothing: by its
    content digest (the bytes changed since it was written), and, for a file written before digests, by its
    missing `complete` attribute."""
    from geneb.extract.cache import CorruptCacheError, IncompleteCacheError
    from geneb.probe.job import fit_probes

    run = copy_run(finished_run, tmp_path / "run")
    h5 = next(p for p in embedding_files(run) if h5_cell(p) == ("kmer-3", TASKS[0]))
    with h5py.File(h5, "r+") as f:
        del f.attrs["complete"]
    config = yaml.safe_load((run / "config" / "config.yaml").read_text())
    task_dir = task_folder(run, TASKS[0])
    out = tmp_path / "out"
    for error, match in ((CorruptCacheError, "content differs"), (IncompleteCacheError, "incomplete")):
        with pytest.raises(error, match=match):
            fit_probes(
                train=task_dir / "train.parquet",
                test=task_dir / "test.parquet",
                card=task_dir / "card.json",
                embeddings=h5,
                shots=shot_file(run, TASKS[0]),
                scores_out=out / "scores.parquet",
                predictions_out=out / "predictions.parquet",
                task=TASKS[0],
                model="kmer-3",
                protocol="geneb-paper",
                settings=config["probe"]["geneb-paper"],
            )
        assert not out.exists() or not list(out.iterdir())
        integrity.digest_path(h5).unlink(missing_ok=True)  # the same file as one written before digests


def test_probe_refuses_a_complete_file_made_for_other_settings_or_another_model(finished_run, tmp_path):
    """A complete cache copied in from elsewhere (another model, other extraction settings) is not trusted: the
    probe compares the file's key with its model, task and settings-hash folder. It reads the finished run as it
    is (the probe writes under tmp_path only)."""
    from geneb.extract.cache import CacheKeyMismatchError
    from geneb.probe.job import fit_probes

    run = finished_run
    h5 = next(p for p in embedding_files(run) if h5_cell(p) == ("kmer-3", TASKS[0]))
    config = yaml.safe_load((run / "config" / "config.yaml").read_text())
    task_dir = task_folder(run, TASKS[0])
    out = tmp_path / "out"
    common = dict(
        train=task_dir / "train.parquet",
        test=task_dir / "test.parquet",
        card=task_dir / "card.json",
        embeddings=h5,
        shots=shot_file(run, TASKS[0]),
        scores_out=out / "scores.parquet",
        predictions_out=out / "predictions.parquet",
        task=TASKS[0],
        protocol="geneb-paper",
        settings=config["probe"]["geneb-paper"],
    )
    with pytest.raises(CacheKeyMismatchError, match=r"settings_hash: file has '[0-9a-f]{12}', expected '000000000000'"):
        fit_probes(**common, model="kmer-3", settings_hash="000000000000")
    with pytest.raises(CacheKeyMismatchError, match=r"model: file has 'kmer-3', expected 'kmer-6'"):
        fit_probes(**common, model="kmer-6", settings_hash=h5.parents[1].name)
    assert not out.exists() or not list(out.iterdir())
    fit_probes(**common, model="kmer-3", settings_hash=h5.parents[1].name)  # its own folder: accepted
    assert (out / "scores.parquet").exists()


def test_writer_leaves_nothing_under_the_final_name(tmp_path):
    """The embedding writer fails after its datasets are written: no file under the final name, no temp."""
    from geneb.extract.cache import SplitEmbeddings, write_embeddings

    target = tmp_path / "resources" / "embeddings" / "m" / "0123456789ab" / "t.h5"
    n = 5
    split = SplitEmbeddings(
        np.ones((n, 4), dtype=np.float32), np.arange(n), np.ones(n, dtype=np.int32), attrs={"unserialisable": object()}
    )  # fails while writing the split's attributes
    with pytest.raises(TypeError):
        write_embeddings(target, {"train": split}, {"model": "m", "task": "t"})
    assert list(target.parent.iterdir()) == []


# ---- SIGKILL midway, then recover --------------------------------------------------------------------------


def _start(run: Path, *args: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--cores", "1", *args]
    return subprocess.Popen(
        cmd, cwd=run, env=env_for_tests(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _recover_and_check(run: Path, reference: Path) -> None:
    # the kill left the directory locked: a plain run stops and names --unlock
    plain = snakemake(run, SCORES, check=False)
    assert plain.returncode != 0 and "--unlock" in plain.stdout, plain.stdout[-2000:]
    # the documented recovery command unlocks, removes partial temporaries, and reruns what is incomplete
    proc = subprocess.run(
        [sys.executable, "-m", "geneb.run.recover", "-s", str(SNAKEFILE), "--cores", "2", SCORES],
        cwd=run,
        env=env_for_tests(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert not list(run.rglob(".tmp-*")), "a partial temporary file survived the recovery"
    assert dry_run(run, SCORES) == []
    assert_downstream_newer(run)
    assert_same_scores(run, reference)


@pytest.mark.slow
def test_sigkill_midway_extraction_then_recover(kill_reference, tmp_path):
    """SIGKILL of Snakemake and its jobs while the extraction runs, then the documented recovery; the result equals
    the uninterrupted run. The kill needs long work in flight (KILL_TASK x kmer-6, uncapped): a copy of that run
    (kill_reference) without its embeddings and results, so that the extraction job is the first to run."""
    run = copy_run(kill_reference, tmp_path / "run")
    drop_extractions(run)
    proc = _start(run, SCORES)
    emb_dir = run / "resources" / "embeddings" / "kmer-6"
    # kill while the extraction job writes its HDF5 file (its atomic temporary exists)
    tmp = wait_for(
        lambda: next(iter(emb_dir.glob(f"*/{KILL_TASK}/.tmp-*.h5*")), None) if emb_dir.is_dir() else None,
        proc,
        "the extraction job to start writing",
    )
    kill_group(proc)
    # the model server finishes the task it was sent and, its job gone, discards the file instead of renaming
    # it: wait for that, then nothing may stand under the final name
    deadline = time.monotonic() + 120
    while tmp.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert embedding_files(run) == [], "a killed extraction left a file under its final name"
    incomplete = list((run / ".snakemake" / "incomplete").rglob("*"))
    assert [p for p in incomplete if p.is_file()], "Snakemake recorded no incomplete output"
    _recover_and_check(run, kill_reference)


@pytest.mark.slow
def test_sigkill_midway_probing_then_recover(kill_reference, tmp_path):
    """SIGKILL of Snakemake and its jobs while the probe job runs, then the documented recovery; the result equals
    the uninterrupted run. The kill needs long work in flight (KILL_TASK x kmer-6 under geneb-strict): a copy of
    that run (kill_reference) without its results, so that the probe job is the first to run."""
    run = copy_run(kill_reference, tmp_path / "run")
    shutil.rmtree(run / "results")
    log = run / "logs" / "fit_probes" / "geneb-strict" / "kmer-6" / f"{KILL_TASK}.log"
    log.unlink()  # the uninterrupted run's: its reappearance says that the probe job started
    proc = _start(run, SCORES)
    wait_for(log.exists, proc, "the probe job to start")
    time.sleep(2.0)  # into the fits: the log opens after the imports, the fits take about 10 s
    probe = run / "results" / "probes" / "geneb-strict" / "kmer-6" / f"{KILL_TASK}.parquet"
    assert not probe.exists(), "the probe job finished before the kill; the kill test is void"
    kill_group(proc)
    assert not probe.exists() and not (run / SCORES).exists()
    assert len(embedding_files(run)) == 1  # the finished extraction is kept and will not rerun
    h5_mtime = embedding_files(run)[0].stat().st_mtime_ns
    _recover_and_check(run, kill_reference)
    assert embedding_files(run)[0].stat().st_mtime_ns == h5_mtime, "recovery redid a finished extraction"


# ---- GPU requests reach sbatch; no CPU fallback ---------------------------------------------------------------


def _sbatch_lines(run: Path, *profiles: str, config: list[str] | None = None) -> dict[str, list[str]]:
    """rule -> sbatch lines of a run (via geneb.run.sbatch_preview); local jobs -> 'local'."""
    args = [sys.executable, "-m", "geneb.run.sbatch_preview", "-s", str(SNAKEFILE), SCORES]
    for p in profiles:
        args += ["--profile", str(REPO / "profiles" / p)]
    if config:
        args += ["--config", *config]
    out = subprocess.run(args, cwd=run, env=env_for_tests(), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    lines: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        head, _, sbatch = line.partition("\t")
        rule, _, wc = head.partition("[")
        lines.setdefault(rule, []).append(f"{wc} {sbatch}")
    return lines


GPU_FLAG = re.compile(r"--gpus[= ]|--gres[= ]\S*gpu")


def test_gpu_request_on_every_neural_embed_job_and_none_on_probes(tmp_path):
    """The sbatch line of every job of a fresh run (geneb.run.sbatch_preview, a command with profiles: a
    subprocess), from a config alone: nothing is run."""
    run = tmp_path / "run"
    write_small_config(run, models=["kmer-3", "random-esm-tiny"])
    for profiles, flag in ((("slurm",), "--gpus=1"), (("slurm", "slurm-gres"), "--gres=gpu:1")):
        lines = _sbatch_lines(run, *profiles)
        embed = lines["extract_embeddings"]
        assert len(embed) == 2 * len(TASKS)
        neural = [ln for ln in embed if "random-esm-tiny" in ln]
        assert len(neural) == len(TASKS) and all(flag in ln and " -p gpu " in ln for ln in neural), neural
        # a CPU-only encoder (k-mers) is a CPU job: the CPU partition, no GPU asked for in either style
        kmer = [ln for ln in embed if "kmer-3" in ln]
        assert len(kmer) == len(TASKS) and all(" -p cpu " in ln and not GPU_FLAG.search(ln) for ln in kmer), kmer
        if "slurm-gres" in profiles:
            assert all("--gpus" not in ln for ln in embed), embed  # gres style: never --gpus as well
        for rule in ("fit_probes", "write_shot_indices"):
            for ln in lines.get(rule, []):
                assert not GPU_FLAG.search(ln), ln
        for rule in ("prepare_task", "aggregate_scores"):
            assert all(ln.endswith(" local") for ln in lines[rule]), lines[rule]
    # device cpu (a CPU-only cluster): no job asks for a GPU, and none lands in the GPU partition
    lines = _sbatch_lines(
        run, "slurm", config=["execution={device: cpu}", "slurm={gpu_partition: gpu, cpu_partition: cpu}"]
    )
    assert not any(GPU_FLAG.search(ln) for rule in lines.values() for ln in rule)
    assert not any(" -p gpu " in ln for rule in lines.values() for ln in rule), lines["extract_embeddings"]


def test_device_cuda_without_cuda_stops_at_once(finished_run, tmp_path):
    """A neural model under device cuda on a machine without CUDA: its extraction stops before embedding a row.
    On a copy of the finished run without embeddings and results (its task prepared)."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the no-fallback check needs a machine without it")
    run = copy_run(finished_run, tmp_path / "run")
    drop_extractions(run)
    write_small_config(
        run, tasks=TASKS[:1], models=["random-esm-tiny"], edit=lambda c: c["execution"].update(device="cuda")
    )
    proc = snakemake(run, "--until", "extract_embeddings", check=False)
    assert proc.returncode != 0
    logs = list((run / "logs" / "extract_embeddings" / "random-esm-tiny").rglob("*.log"))
    text = "".join(p.read_text() for p in logs)
    assert "CUDA is not available" in text and "not falling back to CPU" in text, text[-2000:]
    assert "split train" not in text, "rows were embedded before the device check"
    assert embedding_files(run) == []


# ---- params that stay equal ---------------------------------------------------------------------------------


def test_params_stable_across_processes_and_key_order(finished_run, tmp_path):
    """Right after a complete run nothing reruns: not in a new process with another hash seed, not after the
    config and registry YAML are rewritten with every mapping's keys in reverse order, not after comments in
    the Snakefile and a rule file change (the workflow copied elsewhere)."""
    run = copy_run(finished_run, tmp_path / "run")
    for seed in ("0", "12345"):
        env = env_for_tests(PYTHONHASHSEED=seed)
        assert "Nothing to be done" in snakemake(run, "-n", SCORES, env=env).stdout
    config = yaml.safe_load((run / "config" / "config.yaml").read_text())
    flipped = reversed_mappings(config)
    assert list(flipped["probe"]["geneb-paper"]) != list(config["probe"]["geneb-paper"])  # the order did change
    registry = reversed_mappings(repo_registry())
    (run / "config" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    flipped["model_sheet"] = str(run / "config" / "models.yaml")
    # the same numbers spelled otherwise: C 1 for 1.0, seeds and caps as 13.0 / 200.0 (YAML floats)
    paper = flipped["probe"]["geneb-paper"]
    paper["C"], paper["seeds"] = int(paper["C"]), [float(x) for x in paper["seeds"]]
    flipped["caps"]["default"] = {k: float(v) for k, v in flipped["caps"]["default"].items()}
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(flipped, sort_keys=False))
    assert snakemake_n(run, SCORES) == []  # a process of its own, as each above
    # a copy of the workflow with edited comments in the Snakefile and in extract.smk
    wf = tmp_path / "workflow_copy"
    wf.mkdir()
    shutil.copy2(SNAKEFILE, wf / "Snakefile")
    shutil.copytree(REPO / "workflow", wf / "workflow")
    shutil.copytree(REPO / "profiles", wf / "profiles")
    # ... and in the scripts: Snakemake's "code" trigger takes a script's mtime as a code change, so without
    # profiles/default's rerun-triggers a checkout or a comment would redo every extraction
    scripts = [
        wf / "workflow" / "scripts" / f"{name}.py" for name in ("extract_embeddings", "prepare_task", "fit_probes")
    ]
    for path in (wf / "Snakefile", wf / "workflow" / "rules" / "extract.smk", *scripts):
        mtime = path.stat().st_mtime
        path.write_text(path.read_text().replace("# ", "# (edited comment) ", 1))
        os.utime(path, (time.time(), time.time()))
        assert path.stat().st_mtime > mtime
    assert snakemake_n(run, SCORES, snakefile=wf / "Snakefile") == []


def test_stable_params_renders_identically_in_separate_processes():
    code = textwrap.dedent("""
        import random, sys
        from geneb.run.layout import stable_params
        keys = ["pooling", "layer", "rc", "max_tokens", "dtype"]
        random.Random(int(sys.argv[1])).shuffle(keys)
        value = {k: {"b": {1, 2, 3}, "a": (1, 2)} for k in keys}
        value["tags"] = {"x", "yy", "zzz", "w"}
        print(repr(stable_params(value)))
    """)
    outs = set()
    for seed in ("1", "2", "3"):
        env = env_for_tests(PYTHONHASHSEED=seed)
        outs.add(
            subprocess.run(
                [sys.executable, "-c", code, seed], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    assert len(outs) == 1, outs
    # without stable_params the same values render differently (so the check above can fail)
    raw = (
        "import random, sys; k = ['a', 'b', 'c', 'd', 'e']; random.Random(int(sys.argv[1])).shuffle(k); "
        "print(repr({x: 1 for x in k}))"
    )
    assert (
        len({subprocess.run([sys.executable, "-c", raw, s], capture_output=True, text=True).stdout for s in "123"}) > 1
    )


# ---- the pieces, directly ---------------------------------------------------------------------------------


def test_resources_double_per_attempt_and_gpu_follows_device():
    from geneb.run import layout as hpc

    assert [hpc._scaled(100, a) for a in (1, 2, 3)] == [100, 200, 400]
    with pytest.raises(ValueError):
        hpc._scaled(100, 0)
    assert hpc._extraction_mem_mb(7e9, 1) == hpc._EXTRACTION_BASE_MEM_MB + 42000
    assert hpc._extraction_mem_mb(None, 2) == 2 * hpc._EXTRACTION_BASE_MEM_MB
    assert [hpc._extraction_gpus(True, d) for d in ("cuda", "cuda:1", "auto", "cpu")] == [1, 1, 1, 0]
    assert hpc._extraction_gpus(False, "cuda") == 0  # k-mer models never hold a GPU
    assert (
        hpc.probe_runtime(3) == 4 * hpc._PROBE_RUNTIME_MIN
        and hpc.extraction_runtime(2) == 2 * hpc._EXTRACTION_RUNTIME_MIN
    )


def test_recover_refuses_while_snakemake_runs_in_the_directory(tmp_path, monkeypatch):
    from geneb.run import recover

    run = tmp_path / "run"
    run.mkdir()
    fake = tmp_path / "bin" / "snakemake"  # a process whose command is `snakemake`, working in the run directory
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    proc = subprocess.Popen([str(fake)], cwd=run)
    try:
        deadline = time.monotonic() + 10  # the child needs a moment before /proc shows its command line
        while proc.pid not in recover._running_snakemake(run.resolve()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.pid in recover._running_snakemake(run.resolve())
        monkeypatch.chdir(run)
        assert recover.main(["-s", str(SNAKEFILE), "--cores", "1"]) == 3
        assert recover._run_directory(["--directory", str(tmp_path)]) == tmp_path.resolve()
        assert recover._run_directory(["-d", "x"]) == (run / "x").resolve()
    finally:
        proc.kill()
        proc.wait()
    assert recover._running_snakemake(run.resolve()) == []
