"""A finished workflow run, then a probe table with one byte changed and an embedding file cut to half its
length: a dry run names both and moves nothing; `geneb verify` exits 1 naming both; the next run sets
both aside (one GENEB ERROR line each), rebuilds them and everything downstream in that same run, and its score
table equals the untouched run's. A copy of the shared small run (2 real tasks x 2 k-mer models, capped small);
the dry runs are planned in process (`dry_run`, their log captured), `geneb verify` is its CLI's `main`."""

from __future__ import annotations

import pandas as pd

from geneb.core import integrity
from geneb.core.provenance import CODE_REVISION_KEYS
from workflow_support import SMALL_TASKS, copy_run, dry_run, run_plan, run_snakemake

TASK = SMALL_TASKS[1]
PROBES = f"results/probes/geneb-paper/kmer-3/{TASK}.parquet"
SCORES = "results/tables/scores.parquet"


def geneb_verify(run, monkeypatch, capsys) -> tuple[int, str]:
    """`geneb verify --config config/config.yaml` in `run`: (exit status, stdout)."""
    from geneb.cli.app import main

    monkeypatch.chdir(run)
    capsys.readouterr()
    code = main(["verify", "--config", "config/config.yaml"])
    return code, capsys.readouterr().out


def error_lines(output: str | list[str]) -> list[str]:
    lines = output.splitlines() if isinstance(output, str) else output
    return [line for line in lines if line.startswith("GENEB ERROR")]


def test_corrupt_files_are_set_aside_and_rebuilt_in_the_same_run(tmp_path, finished_run, monkeypatch, capsys, caplog):
    run = copy_run(finished_run, tmp_path / "run")
    untouched = pd.read_parquet(run / SCORES)
    assert geneb_verify(run, monkeypatch, capsys)[0] == 0

    h5 = run / run_plan(run).layout.embedding_file("kmer-3", TASK)
    assert h5.is_file()
    probes = run / PROBES
    data = bytearray(probes.read_bytes())
    data[len(data) // 2] ^= 0xFF
    probes.write_bytes(bytes(data))
    h5.write_bytes(h5.read_bytes()[: h5.stat().st_size // 2])
    damaged = {p: p.read_bytes() for p in (probes, h5)}

    code, out = geneb_verify(run, monkeypatch, capsys)
    assert code == 1, out
    bad = [line for line in out.splitlines() if line.startswith("BAD ")]
    assert len(bad) == 2 and any(str(h5.relative_to(run)) in b for b in bad) and any(PROBES in b for b in bad)

    caplog.clear()
    dry_run(run)  # raises if the dry run fails
    lines = error_lines(caplog.messages)
    assert len(lines) == 2 and all("dry run: nothing moved" in line for line in lines), caplog.text[-4000:]
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
    assert geneb_verify(run, monkeypatch, capsys)[0] == 0
    assert dry_run(run) == []  # nothing to be done
