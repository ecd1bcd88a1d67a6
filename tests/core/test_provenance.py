"""The running code's revision (geneb.core.provenance.code_revision): a real git checkout, clean and dirty, an
installed copy inside another checkout, and a copy with no git at all; and the columns every table carries."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from geneb.core.provenance import _UNKNOWN, CODE_REVISION_KEYS, REVISION, code_revision, dirty_label
from geneb.tables.scores import with_code_revision

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env={**env, "PATH": "/usr/bin:/bin"}
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git checkout shaped like GENEB's: src/pkg/__init__.py, workflow/, Snakefile, config/; one commit."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("x = 1\n")
    (root / "workflow").mkdir()
    (root / "workflow" / "rule.smk").write_text("# rule\n")
    (root / "Snakefile").write_text("# snakefile\n")
    (root / "config").mkdir()
    (root / "config" / "model_revisions.yaml").write_text("revisions: {}\n")
    (root / ".gitignore").write_text(".venv/\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "one")
    return root


def test_a_clean_checkout_records_its_commit_and_clean(checkout):
    rev = code_revision(checkout / "src" / "pkg")
    assert rev == {"geneb_commit": _git(checkout, "rev-parse", "HEAD"), "geneb_dirty": False}
    assert REVISION.match(rev["geneb_commit"])


@pytest.mark.parametrize(
    "change",
    ["src/pkg/__init__.py", "src/pkg/new_module.py", "workflow/rule.smk", "Snakefile"],
    ids=["edited module", "untracked module", "edited rule", "edited Snakefile"],
)
def test_a_change_to_the_code_makes_it_dirty(checkout, change):
    path = checkout / change
    path.write_text(path.read_text() + "y = 2\n" if path.exists() else "y = 2\n")
    assert code_revision(checkout / "src" / "pkg")["geneb_dirty"] is True


def test_configuration_and_ignored_files_leave_it_clean(checkout):
    """The pins lockfile a first run writes, and an ignored venv, are not code: the tree stays clean."""
    (checkout / "config" / "model_revisions.yaml").write_text("revisions: {a: 1}\n")
    (checkout / ".venv").mkdir()
    (checkout / ".venv" / "x.py").write_text("z = 3\n")
    assert code_revision(checkout / "src" / "pkg")["geneb_dirty"] is False


def test_an_installed_copy_inside_another_checkout_is_unknown(checkout):
    """A copy the checkout's git does not track (a venv's site-packages inside it) is not that checkout's code."""
    installed = checkout / ".venv" / "lib" / "site-packages" / "pkg"
    shutil.copytree(checkout / "src" / "pkg", installed)
    assert code_revision(installed) == {"geneb_commit": _UNKNOWN, "geneb_dirty": None}


def test_a_copy_outside_any_checkout_is_unknown(tmp_path):
    folder = tmp_path / "site-packages" / "pkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("x = 1\n")
    assert code_revision(folder) == {"geneb_commit": _UNKNOWN, "geneb_dirty": None}
    assert dirty_label(None) == "unknown" and dirty_label(True) == "true" and dirty_label(False) == "false"


def test_the_running_package_is_this_checkout():
    import geneb

    repo = Path(__file__).resolve().parents[2]
    if not Path(geneb.__file__).resolve().is_relative_to(repo):
        pytest.skip("geneb is imported from an installed copy, not this checkout")
    assert code_revision()["geneb_commit"] == _git(repo, "rev-parse", "HEAD")


def test_table_columns_keep_unknown_as_na():
    t = with_code_revision(pd.DataFrame({"a": [1, 2]}), {"geneb_commit": _UNKNOWN, "geneb_dirty": None})
    assert list(t.columns[-2:]) == list(CODE_REVISION_KEYS)
    assert t["geneb_dirty"].isna().all() and str(t["geneb_dirty"].dtype) == "boolean"
    t = with_code_revision(pd.DataFrame({"a": [1]}), {"geneb_commit": "a" * 40, "geneb_dirty": False})
    assert t["geneb_dirty"].tolist() == [False] and t["geneb_commit"].tolist() == ["a" * 40]


def test_the_running_package_is_looked_at_whole():
    """The default folder is the package root, not the folder of the module that computes it: a change in any
    subpackage (here the probe stage's) makes the running code dirty, not only a change beside provenance.py."""
    from geneb.core import paths, provenance

    assert provenance.code_revision() == provenance.code_revision(paths.PACKAGE_DIR)
    assert (paths.PACKAGE_DIR / "__init__.py").is_file() and (paths.PACKAGE_DIR / "probe").is_dir()


def test_package_versions_are_the_installed_ones_read_once_and_copied():
    from importlib import metadata

    from geneb.core.provenance import package_versions

    first = package_versions(("numpy", "no-such-package-geneb"))
    assert first["numpy"] == metadata.version("numpy") and first["no-such-package-geneb"] == ""
    first["numpy"] = "edited by a caller"
    assert package_versions(("numpy", "no-such-package-geneb"))["numpy"] == metadata.version("numpy")
