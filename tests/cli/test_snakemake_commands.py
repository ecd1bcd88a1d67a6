"""`geneb sbatch-preview` and `geneb recover`: subcommands of the one CLI that hand every argument after the
command to the same functions as `python -m geneb.run.sbatch_preview` / `python -m geneb.run.recover`."""

from __future__ import annotations

import pytest

from geneb.cli import main
from geneb.run import recover, sbatch_preview

COMMANDS = {"sbatch-preview": sbatch_preview, "recover": recover}


@pytest.fixture
def calls(monkeypatch):
    """The snakemake arguments each wrapped module's main() was called with (it returns exit status 7)."""
    seen: list[tuple[str, list[str]]] = []
    for name, module in COMMANDS.items():
        monkeypatch.setattr(module, "main", lambda argv, name=name: seen.append((name, list(argv))) or 7)
    return seen


@pytest.mark.parametrize("command", list(COMMANDS))
def test_arguments_reach_the_module_main_unchanged(command, calls, tmp_path):
    snakefile = tmp_path / "Snakefile"
    snakefile.write_text("")
    argv = ["--profile", "profiles/slurm", "-s", str(snakefile), "--cores", "8", "--rerun-triggers", "mtime", "all"]
    assert main([command, *argv]) == 7  # the module's exit status is the command's
    assert calls == [(command, argv)]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_and_no_arguments_are_the_modules(command, calls):
    assert main([command, "-h"]) == 7 and main([command]) == 7
    assert calls == [(command, ["-h"]), (command, [])]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--profile", "profiles/no-such-site"], "profile profiles/no-such-site not found (--profile)"),
        (["--configfile", "missing.yaml"], "config file missing.yaml not found (--configfile)"),
        (["--configfile=config/config.yaml", "missing.yaml"], None),  # `=` takes one value; the rest is a target
        (["-d", "no/such/run"], "run directory no/such/run not found (-d)"),
        (["--directory=config/config.yaml"], "run directory config/config.yaml is not a folder (--directory)"),
        (["--snakefile", "config"], "Snakefile config is not a file (--snakefile)"),
        (["--cores", "2", "--profile"], "--profile needs a value"),
    ],
)
def test_bad_paths_are_one_line_errors_with_exit_status_2(command, argv, message, calls, repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    code = main([command, *argv])
    err = capsys.readouterr().err
    if message is None:
        assert code == 7 and calls and err == ""
        return
    assert code == 2 and not calls
    assert err == f"geneb: error: {message}\n"


def test_profile_names_are_left_to_snakemake(calls):
    """A profile given by name (no "/") is looked up by Snakemake in its config folders: not checked here."""
    assert main(["recover", "--profile", "slurm"]) == 7 and calls == [("recover", ["--profile", "slurm"])]


def test_other_commands_still_refuse_unknown_arguments(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["models", "--cores", "2"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "geneb: error: unrecognized arguments: --cores 2 (see `geneb --help`)"
    ]


def test_the_cli_lists_both_commands(capsys):
    with pytest.raises(SystemExit):
        main(["-h"])
    out = capsys.readouterr().out
    assert "sbatch-preview" in out and "recover" in out
