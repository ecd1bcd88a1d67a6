"""The `geneb` command: listing, leaderboard, recommendation, and clear errors."""

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from geneb.cli import main


def test_models_and_tasks_list_the_sheets(repo, capsys):
    assert main(["models", "--sheet", str(repo / "config" / "models.yaml")]) == 0
    assert "kmer-4" in capsys.readouterr().out
    assert (
        main(["tasks", "--sheet", str(repo / "config" / "tasks.tsv"), "--category", "coding/nc", "--set", "paper"]) == 0
    )
    out = capsys.readouterr().out
    assert "katarinagresova_Genomic_Benchmarks_demo_coding_vs_intergenomic_seqs" in out and "prelnc" not in out


def test_leaderboard_and_recommendation(synthetic_run, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("macro, full (geneb-paper)") and lines[2].split()[:2] == ["1", "enc-big"]
    assert (
        main(
            [
                "leaderboard",
                "--table",
                str(t / "leaderboard.parquet"),
                "--category",
                "splice sites",
                "--regime",
                "10shot",
                "--top",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Splice Sites, 10shot" in out and "ssm" in out and len(out.splitlines()) == 5
    # 6 models over 2 tasks: the Nemenyi critical difference exceeds any mean-rank gap, so no tier column, and why
    assert "tier" not in out.splitlines()[1].split()
    assert out.splitlines()[3].startswith("no tiers: too few tasks for a post-hoc test: the Nemenyi critical ")
    # the leaderboard states how a category mean treats a missing cell
    assert out.splitlines()[-1].startswith("missing cells: a category value is the mean over the tasks the model has")
    assert main(["recommend", "--table", str(t / "recommendations.parquet"), "--category", "Splice Sites"]) == 0
    assert capsys.readouterr().out.startswith("Splice Sites, full: ssm (MCC")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["leaderboard", "--category", "Promoter"], "unknown category"),
        (["leaderboard", "--table", "/nonexistent.parquet"], "not found"),
        (["recommend", "--category", "Promoters", "--table", "/nonexistent.parquet"], "not found"),
    ],
)
def test_errors_are_one_line_with_exit_status_2(argv, message, synthetic_run, capsys):
    if "--table" not in argv:
        argv = [*argv, "--table", str(synthetic_run["root"] / "results" / "tables" / "leaderboard.parquet")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("geneb: error:") and message in err


def _error_line(capsys) -> str:
    """The stderr of the last call: exactly one `geneb: error:` line, no traceback, nothing on stdout."""
    cap = capsys.readouterr()
    assert cap.out == "" and "Traceback" not in cap.err
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("geneb: error:"), cap.err
    return lines[0]


def test_a_file_that_is_not_a_table_is_a_one_line_error(synthetic_run, tmp_path, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    (tmp_path / "bad.parquet").write_text("corrupt\n")
    (tmp_path / "dir.parquet").mkdir()
    for argv, message in (
        (["leaderboard", "--table", str(tmp_path / "bad.parquet")], "not a parquet file"),
        (["recommend", "--category", "Promoters", "--table", str(tmp_path / "bad.parquet")], "not a parquet file"),
        (["leaderboard", "--table", str(tmp_path / "dir.parquet")], "is not a file"),
        (["leaderboard", "--table", str(t / "analysis_summary.json")], "not a parquet file"),
    ):
        assert main(argv) == 2
        assert message in _error_line(capsys)


def test_the_wrong_kind_of_table_names_the_table_expected(synthetic_run, tmp_path, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    assert main(["recommend", "--category", "Promoters", "--table", str(t / "leaderboard.parquet")]) == 2
    line = _error_line(capsys)
    assert "not a recommendation table" in line and "role" in line and "recommendations.parquet" in line
    assert main(["leaderboard", "--category", "Promoters", "--table", str(t / "leaderboard_tasks.parquet")]) == 2
    line = _error_line(capsys)
    assert "not a leaderboard table" in line and "borda_rank" in line and "leaderboard.parquet" in line
    pd.DataFrame({"settings_hash": pd.Series([], dtype=str)}).to_parquet(
        tmp_path / "empty.parquet"
    )  # what an absent table is written as
    assert main(["recommend", "--category", "Promoters", "--table", str(tmp_path / "empty.parquet")]) == 2
    assert "has no rows" in _error_line(capsys)


@pytest.mark.parametrize("top", ["0", "-3", "two"])
def test_top_must_be_a_positive_integer(top, synthetic_run, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    with pytest.raises(SystemExit) as exc:
        main(["leaderboard", "--table", str(t / "leaderboard.parquet"), "--top", top])
    assert exc.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "Traceback" not in cap.err
    assert cap.err.splitlines() == [
        f"geneb: error: argument --top: must be a positive integer, not {top!r} (see `geneb leaderboard --help`)"
    ]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["leaderboard", "--regime", "fivesho"], "argument --regime: invalid choice: 'fivesho'"),
        ([], "the following arguments are required: command"),
        (["models", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    ],
)
def test_usage_errors_are_one_error_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("geneb: error: ") and message in err[0], err


def test_a_malformed_model_sheet_is_a_one_line_error(tmp_path, capsys):
    cases = {
        "unparsable.yaml": ("models: [\n  a: b\n", "not valid YAML (line 3"),
        "list.yaml": ("- 1\n", "expected a mapping with a `models` mapping"),
        "entry.yaml": ("models:\n  x: 3\n", "must be a mapping of fields, not of x"),
        "binary.yaml": (b"\xff\xfe\x00", "not a text file"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        for argv in (["models", "--sheet", str(path)], ["pin-revisions", "x", "--sheet", str(path)]):
            assert main(argv) == 2
            assert message in _error_line(capsys)
    for argv in (["models", "--sheet", str(tmp_path)], ["tasks", "--sheet", str(tmp_path)]):
        assert main(argv) == 2
        assert "is not a file" in _error_line(capsys)
    assert main(["tasks", "--sheet", str(tmp_path / "binary.yaml")]) == 2
    assert "not a readable task sheet" in _error_line(capsys)


def test_recommend_prints_the_confidence_level_of_the_analysis(synthetic_run, tmp_path, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    argv = ["recommend", "--category", "Splice Sites", "--table", str(tmp_path / "recommendations.parquet")]
    shutil.copy(t / "recommendations.parquet", tmp_path)
    summary = json.loads((t / "analysis_summary.json").read_text())
    assert summary["settings"]["confidence"] == 0.95
    (tmp_path / "analysis_summary.json").write_text(json.dumps(summary))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "95% CI" in out and "unknown" not in out
    summary["settings"]["confidence"] = 0.5  # the level is the one the summary of the same settings states
    (tmp_path / "analysis_summary.json").write_text(json.dumps(summary))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "50% CI" in out and "95%" not in out
    summary["settings_hash"] = "another-run"  # a summary of other settings says nothing about this table
    (tmp_path / "analysis_summary.json").write_text(json.dumps(summary))
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "% CI" not in lines[0] and " CI " in lines[0] and lines[-1].startswith("(confidence level unknown")
    (tmp_path / "analysis_summary.json").unlink()
    assert main(argv) == 0
    assert "confidence level unknown" in capsys.readouterr().out


def test_tasks_that_match_nothing_is_an_error_listing_the_categories(synthetic_run, capsys):
    sheet = str(synthetic_run["root"] / "config" / "tasks.tsv")
    assert main(["tasks", "--sheet", sheet, "--category", "micro"]) == 2
    line = _error_line(capsys)
    assert "unknown category 'micro'" in line and "Promoters" in line and "macro" not in line
    assert (
        main(["tasks", "--sheet", sheet, "--category", "promoters", "--set", "paper"]) == 2
    )  # the synthetic tasks are all mirrors
    assert "no tasks in" in _error_line(capsys)


def test_a_reader_that_stops_early_is_not_an_error(repo):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before geneb writes: `geneb models | head -0`
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "geneb.cli", "models", "--sheet", str(repo / "config" / "models.yaml")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == ""


def test_models_shows_env_source_pin_and_whether_runnable_here(repo, tmp_path, capsys):
    """`geneb models`: each entry's env (default geneb), source kind, pin (from the lockfile), and runnable here
    or why not (no adapter, unpinned, a missing package or transformers range of this environment)."""
    import types

    from geneb.cli.models import _model_status as model_status
    from geneb.registry.load import load_registry

    pins = tmp_path / "pins.yaml"
    commit = "0123456789abcdef0123456789abcdef01234567"
    pins.write_text(f"schema_version: 1\nrevisions:\n  GROVER: {{hub_id: PoetschLab/GROVER, revision: {commit}}}\n")
    sheet = str(repo / "config" / "models.yaml")
    assert main(["models", "--sheet", sheet, "--pins", str(pins)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines["model"].split()[-5:] == ["env", "source", "pin", "runnable", "why_not"]
    cols = lines["kmer-3"].split()
    assert cols[cols.index("builtin") - 1] == "geneb" and cols[-1] == "yes"  # env, then source kind
    assert {"hub", commit[:12]} <= set(lines["GROVER"].split())
    assert "unpinned" in lines["DNABERT-S"] and "unpinned: a run with network pins it" in lines["DNABERT-S"]
    assert "no adapter (family unsupported)" in lines["SpeciesLM"]
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    outside = version("transformers") not in SpecifierSet(">=4.28,<4.30")  # the project env has transformers 5.x
    assert ("needs transformers >=4.28,<4.30" in lines["DNABERT-S"]) == outside
    assert main(["models", "--sheet", sheet, "--pins", str(pins), "--runnable"]) == 0
    shown = {line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]}
    assert "kmer-3" in shown and "DNABERT-S" not in shown and "space" not in shown
    spec = load_registry(sheet).spec("kmer-3")
    assert model_status(types.SimpleNamespace(**{**vars(spec), "env": "caduceus"}))["env"] == "caduceus"


def test_leaderboard_shows_unranked_rows_with_why_and_the_audit_marks(tmp_path, capsys):
    """A planted partial run (tests/synth.py `flagged_board_run`): v1, the only Coding/NC task, failed; l1's test
    split is a copy of its training split. `geneb leaderboard` prints every macro row unranked with the failure,
    the leakage mark on the rows l1 feeds and its reason; with exclude_flagged the line saying what was left out."""
    from synth import flagged_board_run

    t = flagged_board_run(tmp_path / "run")
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet")]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[1].split()
    assert head[:2] == ["rank", "model"] and "flags" in head
    assert all(f"not ranked: {m}: missing 1 of 5 task(s): v1: failed in this run" in out for m in "abc")
    assert "CUDA out of memory" in out and "leakage" in out.splitlines()[2]
    assert "flagged task: l1: leakage: 100.0% of test rows have a copy or homolog in the training split" in out
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet"), "--category", "coding/nc"]) == 0
    out = capsys.readouterr().out
    assert "not ranked: a: no task of this category completed: v1: failed in this run" in out
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet"), "--clean", "--category", "virus/phage"]) == 0
    assert "not ranked: a: no task of this category completed: l1: no clean test rows" in capsys.readouterr().out
    x = flagged_board_run(tmp_path / "excluded", {"exclude_flagged": ["leakage"]})
    assert main(["leaderboard", "--table", str(x / "leaderboard.parquet")]) == 0
    out = capsys.readouterr().out
    assert "ranked without the tasks flagged leakage (config leaderboard.exclude_flagged): l1" in out


def test_every_option_and_subcommand_of_geneb_has_help_text():
    """`geneb ... --help` explains every option, positional argument and subcommand (none shows a bare name)."""
    import argparse

    from geneb.cli.app import _build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                missing.extend(f"{path} {name} (subcommand)" for name in action.choices if name not in helped)
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(_build_parser(), "geneb")
    assert missing == []
