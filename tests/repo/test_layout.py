"""The tree keeps the shape docs/architecture.md describes: modules sized by their job (a long one says why), no
crowded folder, repository files found through `geneb.core.paths` only, tests that mirror the package, no test code
in the product, no import cycles, and no issue numbers or internal case labels."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "geneb"
#: a module longer than this says in its docstring why it is one module (docs/architecture.md: modules by job)
LONG_MODULE = 800
#: what such a docstring says
LONG_REASON = "One module because"
#: the most modules a folder of the package may hold before it needs splitting into packages by job
MAX_FOLDER_MODULES = 15
#: an internal failure-case label ("B42"): a reader of the repository cannot look it up; say what the case is
CASE_LABEL = re.compile(r"\bB[0-4]\d\b")
#: an issue tracker's number ("issue" followed by digits): it means nothing to a reader of the repository
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_a_long_module_says_why_it_is_one_module():
    long = {
        str(p.relative_to(REPO)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > LONG_MODULE
        and LONG_REASON not in (ast.get_docstring(ast.parse(p.read_text())) or "")
    }
    assert not long, f"modules over {LONG_MODULE} lines without {LONG_REASON!r} in their docstring: {long}"


def test_no_folder_is_crowded():
    per_folder = Counter(p.parent for p in _modules())
    crowded = {str(d.relative_to(REPO)): n for d, n in per_folder.items() if n > MAX_FOLDER_MODULES}
    assert not crowded, f"folders over {MAX_FOLDER_MODULES} modules (group them by job): {crowded}"


def test_no_product_module_imports_test_code():
    found = [
        str(p.relative_to(REPO))
        for p in _modules()
        if re.search(r"^\s*(from|import) (tests|conftest|workflow_support|tiny_models)\b", p.read_text(), re.M)
    ]
    assert not found and not (SRC / "testing").exists(), f"product modules importing test code: {found}"


@pytest.mark.parametrize(
    "folder", ["src", "tests", "docs", "workflow", "profiles", "envs", "tools", "bench", "README.md"]
)
def test_no_internal_case_labels(folder):
    root = REPO / folder
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.suffix in (".py", ".md", ".smk", ".yaml")]
    found = [
        f"{p.relative_to(REPO)}:{i}"
        for p in files
        if p != Path(__file__).resolve()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if CASE_LABEL.search(line)
    ]
    assert not found, f"internal case labels in {folder} (say what the case is instead): {found[:20]}"


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
