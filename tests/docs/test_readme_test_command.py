"""README's test command says what it installs and starts on the system, and how to opt out and what that skips;
CI runs it with everything on."""

from __future__ import annotations

import re


def _section(readme: str) -> str:
    start = readme.index("## The two commands")
    return readme[start : readme.index("\n## ", start + 1)]


def test_readme_names_what_the_test_command_installs_and_starts_and_each_opt_out(repo):
    text = _section((repo / "README.md").read_text())
    script = (repo / "scripts" / "test.sh").read_text()
    # what the script installs as root: each Debian package it names, and the Slurm it starts
    for package in ("chromium", "slurm-wlm", "munge"):
        assert package in script or package in (repo / "tests/slurm/cluster.sh").read_text()
        assert f"`{package}`" in text, package
    assert "as root" in text.lower() and "apt-get" in text and "single-node Slurm" in text
    # every opt-out the script reads is in the README, with what it skips
    opt_outs = sorted(set(re.findall(r"\$\{(GENEB_TEST_[A-Z]+):-1\}", script)))
    assert opt_outs == ["GENEB_TEST_ENVS", "GENEB_TEST_SYSTEM"]
    for var in opt_outs:
        assert f"{var}=0" in text, var
    assert "skip" in text and "runtime environments" in text


def test_ci_runs_the_test_command_with_everything_on(repo):
    ci = (repo / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci and "GENEB_TEST_" not in ci
