"""Every `geneb.*` path the docs name exists: a module, or an attribute of one (a function, a class, a constant).

The docs are how a newcomer finds code; a renamed or moved module must take its mentions along."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the documents a reader follows: README and docs/ (adapter pages included)
DOCUMENTS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
NAME = re.compile(r"(?<![\w./-])geneb(?:\.[A-Za-z_]\w*)+")


def placeholder(name: str) -> bool:
    """A name the docs use as a template for the reader's own module (`geneb.analysis.my_module`)."""
    return any(part.startswith("my_") for part in name.split("."))


def resolves(name: str) -> bool:
    """Whether `name` ("geneb.a.b.c") is an importable module or an attribute chain of one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                try:  # a submodule not yet imported by its package
                    obj = importlib.import_module(f"{obj.__name__}.{attr}")
                    continue
                except (ModuleNotFoundError, AttributeError):
                    return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_docs_name_geneb_paths():
    named = {name.rstrip(".") for doc in DOCUMENTS for name in NAME.findall(doc.read_text())}
    assert len(named) > 20, "the docs name GENEB's modules; the pattern found too few"


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_geneb_path_a_document_names_imports(doc):
    names = sorted({name.rstrip(".") for name in NAME.findall(doc.read_text())})
    missing = [name for name in names if not placeholder(name) and not resolves(name)]
    assert not missing, f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"
