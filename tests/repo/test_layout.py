"""The tree keeps the shape docs/architecture.md describes: small modules, repository files found through
`geneb.core.paths` only, tests that mirror the package, no import cycles, and no issue numbers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "geneb"
#: the most lines a module may have (docs/architecture.md: small modules with one job each)
MAX_LINES = 400
#: an issue tracker's number ("issue" followed by digits): it means nothing to a reader of the repository
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_is_over_the_line_limit():
    long = {str(p.relative_to(REPO)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def test_repository_files_are_found_through_core_paths_only():
    walkers = [
        str(p.relative_to(REPO))
        for p in _modules()
        if p.name != "paths.py" and re.search(r"__file__\)[^\n]*\.parents?\b", p.read_text())
    ]
    assert not walkers, f"modules that walk __file__'s parents (use geneb.core.paths): {walkers}"


def test_every_package_has_its_test_folder():
    packages = sorted(p.parent.name for p in SRC.glob("*/__init__.py"))
    missing = [name for name in packages if not (REPO / "tests" / name).is_dir()]
    assert not missing, f"packages without tests/<package>/ (tests mirror src/): {missing}"


@pytest.mark.parametrize("folder", ["src", "tests", "docs", "bench", "workflow", "tools", "scripts", "README.md"])
def test_no_issue_numbers(folder):
    root = REPO / folder
    files = (
        [root]
        if root.is_file()
        else [p for p in root.rglob("*") if p.suffix in (".py", ".md", ".smk", ".yaml", ".sh", ".rst")]
    )
    found = [
        f"{p.relative_to(REPO)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if ISSUE_NUMBER.search(line)
    ]
    assert not found, f"issue numbers in {folder} (say what they meant instead): {found[:20]}"


def test_no_import_cycles(shared):
    tool = shared / "tools" / "import_graph.py"
    result = subprocess.run([sys.executable, str(tool), str(SRC)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
