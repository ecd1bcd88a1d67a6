"""The `geneb` command: listing, leaderboard, recommendation, and clear errors."""

import pytest

from geneb.cli import main


def test_models_and_tasks_list_the_sheets(repo, capsys):
    assert main(["models", "--sheet", str(repo / "config" / "models.yaml")]) == 0
    assert "kmer-4" in capsys.readouterr().out
    assert main(["tasks", "--sheet", str(repo / "config" / "tasks.tsv"), "--category", "coding/nc", "--set", "paper"]) == 0
    out = capsys.readouterr().out
    assert "katarinagresova_Genomic_Benchmarks_demo_coding_vs_intergenomic_seqs" in out and "prelnc" not in out


def test_leaderboard_and_recommendation(synthetic_run, capsys):
    t = synthetic_run["root"] / "results" / "tables"
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("macro, full (geneb-paper)") and lines[2].split()[:2] == ["1", "enc-big"]
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet"), "--category", "splice sites", "--regime", "10shot", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "Splice Sites, 10shot" in out and "ssm" in out and len(out.splitlines()) == 3
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
