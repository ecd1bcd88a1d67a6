"""`geneb sbatch-preview` keeps the head of a failed dry run's output: the error's headline (which models cannot
run, and the fix) comes first in Snakemake's output and must not be cut off."""

from __future__ import annotations

import pytest

from geneb.run.sbatch_preview import _head_and_tail, preview_submissions


def test_a_long_error_keeps_its_headline_and_its_end():
    text = "PreflightError: 40 selected model(s) cannot run\n" + "x" * 20_000 + "\nthe last traceback line"
    kept = _head_and_tail(text)
    assert kept.startswith("PreflightError: 40 selected model(s) cannot run")
    assert kept.endswith("the last traceback line")
    assert "characters cut" in kept and len(kept) < 8_100


def test_a_short_error_is_kept_whole():
    assert _head_and_tail("short error") == "short error"


def test_the_paper_config_offline_names_the_models_that_cannot_run(repo, monkeypatch):
    """The paper config planned offline fails pre-flight; the preview's error starts with its headline."""
    monkeypatch.chdir(repo)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: the hub is unreachable
    with pytest.raises(RuntimeError) as err:
        preview_submissions(["--profile", "profiles/slurm", "--configfile", "config/paper.yaml"])
    text = str(err.value)
    assert text.startswith("snakemake dry run failed")
    assert "selected model(s) cannot run" in text
    assert "dna_gpt3b_m" in text  # the model list, at the front of the error, survives
