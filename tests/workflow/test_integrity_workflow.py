"""A finished workflow run, then a probe table with one byte changed and an embedding file cut to half its
length: a dry run names both and moves nothing; `geneb verify` exits 1 naming both; the next run sets
both aside (one GENEB ERROR line each), rebuilds them and everything downstream in that same run, and its score
table equals the untouched run's. 1 real task x the k-mer model, capped small."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import yaml

from geneb.core import integrity
from geneb.core.provenance import CODE_REVISION_KEYS
from workflow_support import run_plan, run_snakemake, write_run_config

TASK = "ienhancer2l_strong_vs_weak"
PROBES = f"results/probes/geneb-paper/kmer-3/{TASK}.parquet"
SCORES = "results/tables/scores.parquet"


def geneb_verify(run):
    return subprocess.run(
        [sys.executable, "-m", "geneb.cli", "verify", "--config", "config/config.yaml"],
        cwd=run,
        capture_output=True,
        text=True,
        timeout=300,
    )


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("GENEB ERROR")]


def test_corrupt_files_are_set_aside_and_rebuilt_in_the_same_run(tmp_path, shared):
    run = tmp_path / "run"
    write_run_config(run, shared / "data" / "tasks", [TASK], ["kmer-3"], n_resamples=100)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config["caps"] = {"seed": 0, "default": {"max_train": 300, "max_test": 150}, "per_task": {}}
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    first = run_snakemake(run)
    assert first.returncode == 0, first.stdout[-4000:]
    untouched = pd.read_parquet(run / SCORES)
    assert geneb_verify(run).returncode == 0

    h5 = run / run_plan(run).embedding_file("kmer-3", TASK)
    assert h5.is_file()
    probes = run / PROBES
    data = bytearray(probes.read_bytes())
    data[len(data) // 2] ^= 0xFF
    probes.write_bytes(bytes(data))
    h5.write_bytes(h5.read_bytes()[: h5.stat().st_size // 2])
    damaged = {p: p.read_bytes() for p in (probes, h5)}

    checked = geneb_verify(run)
    assert checked.returncode == 1, checked.stdout
    bad = [line for line in checked.stdout.splitlines() if line.startswith("BAD ")]
    assert len(bad) == 2 and any(str(h5.relative_to(run)) in b for b in bad) and any(PROBES in b for b in bad)

    dry = run_snakemake(run, "-n")
    assert dry.returncode == 0, dry.stdout[-4000:]
    lines = error_lines(dry.stdout)
    assert len(lines) == 2 and all("dry run: nothing moved" in line for line in lines), dry.stdout[-4000:]
    assert {p: p.read_bytes() for p in damaged} == damaged  # a dry run moves nothing
    assert not list(run.rglob(".corrupt-*")) and not list(run.rglob(".partial-*"))

    again = run_snakemake(run)
    assert again.returncode == 0, again.stdout[-4000:]
    lines = error_lines(again.stdout)
    assert len(lines) == 2, again.stdout[-4000:]
    assert sum(str(h5.relative_to(run)) in line for line in lines) == 1 and sum(PROBES in line for line in lines) == 1
    assert "rule extract_embeddings:" in again.stdout and "rule fit_probes:" in again.stdout
    assert "rule aggregate_scores:" in again.stdout
    assert (h5.parent / f".corrupt-{h5.name}.0").read_bytes() == damaged[h5]  # set aside, never deleted
    assert (probes.parent / f".corrupt-{probes.name}.0").read_bytes() == damaged[probes]
    for path in (h5, probes, run / SCORES):
        assert integrity.check(path) is not None
    # every score, provenance hash and hygiene column equal (the code revision names the checkout that ran it)
    pd.testing.assert_frame_equal(
        pd.read_parquet(run / SCORES).drop(columns=list(CODE_REVISION_KEYS)),
        untouched.drop(columns=list(CODE_REVISION_KEYS)),
        check_exact=True,
    )
    assert geneb_verify(run).returncode == 0
    assert "Nothing to be done" in run_snakemake(run, "-n").stdout
