"""Each package's `__init__` says what it exports (docs/architecture.md, "The shape of the tree"): its `_EXPORTS`
table {name: the module that defines it} is its `__all__`; every name resolves through the package to the object of
its module and is listed by `dir()`; the `if TYPE_CHECKING:` imports name the same table; importing a package
imports none of its modules (torch least of all); and every name docs/api.md documents from a package is in that
package's `__all__`."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "geneb"
API_DOC = REPO / "docs" / "api.md"
PACKAGES = ["geneb", *(f"geneb.{p.parent.name}" for p in sorted(SRC.glob("*/__init__.py")))]
#: the packages whose exports import torch when they are resolved (the torch side); every other package's exports
#: resolve torch-free, as planning a run needs
TORCH_SIDE = ("geneb.encoders", "geneb.finetune")
HEAVY = ("torch", "transformers")


def exports(package: str) -> dict[str, str]:
    """The package's export table; the root `geneb` defines its four names itself."""
    pkg = importlib.import_module(package)
    return getattr(pkg, "_EXPORTS", dict.fromkeys(pkg.__all__, package))


def submodules(pkg: ModuleType) -> dict[str, bool]:
    """{name: is a package} of the package's direct submodules."""
    return {m.name: m.ispkg for m in pkgutil.iter_modules(pkg.__path__)}


def test_every_package_is_checked():
    assert len(PACKAGES) == 18 and "geneb.registry" in PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_the_export_table_of_public_names_of_the_package(package):
    pkg, table = importlib.import_module(package), exports(package)
    assert pkg.__all__ == list(table)
    assert all(not name.startswith("_") or name == "__version__" for name in table), "a _private name is exported"
    outside = {n: m for n, m in table.items() if m != package and not m.startswith(package + ".")}
    assert not outside, f"{package} exports names of other packages' modules: {outside}"
    clash = set(table) & set(submodules(pkg))
    assert not clash, f"{package} exports names of its submodules (importing one would rebind the name): {clash}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_resolves_through_the_package_to_the_object_its_module_defines(package):
    pkg = importlib.import_module(package)
    for name, module in exports(package).items():
        obj = getattr(importlib.import_module(module), name)
        assert getattr(pkg, name) is obj, f"{package}.{name} is not {module}.{name}"
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert obj.__module__ == module, f"{package}.{name}: {module} imports it from {obj.__module__}"
    assert set(pkg.__all__) <= set(dir(pkg)), f"dir({package}) lacks {set(pkg.__all__) - set(dir(pkg))}"


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "geneb"])
def test_the_typing_imports_name_the_same_table(package):
    """What mypy and editors read (`from module import name as name`, an explicit re-export) is what runs."""
    path = SRC / package.split(".")[1] / "__init__.py"
    blocks = [
        node
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    imported = {}
    for node in (n for block in blocks for n in block.body):
        assert isinstance(node, ast.ImportFrom) and node.module, f"{path}: only `from ... import` under TYPE_CHECKING"
        for alias in node.names:
            assert alias.asname == alias.name, f"{path}: import {alias.name} as {alias.name} (an explicit re-export)"
            imported[alias.name] = node.module
    assert imported == exports(package)


@pytest.mark.parametrize("package", [p for p in PACKAGES if hasattr(importlib.import_module(p), "_EXPORTS")])
def test_a_name_the_package_does_not_export_is_an_attribute_error(package):
    pkg = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        pkg.no_such_name  # noqa: B018


def test_importing_a_package_imports_none_of_its_modules_and_resolving_its_exports_no_torch():
    code = textwrap.dedent(f"""
        import importlib, sys
        for package in {PACKAGES!r}:
            importlib.import_module(package)
        loaded = sorted(m for m in sys.modules if m.startswith("geneb") and m not in {PACKAGES!r})
        assert loaded == ["geneb._exports"], f"importing the packages imported {{loaded}}"
        assert not [m for m in {HEAVY!r} if m in sys.modules], "importing the packages imported torch"
        for package in {PACKAGES!r}:
            if package not in {TORCH_SIDE!r}:
                pkg = importlib.import_module(package)
                for name in pkg.__all__:
                    getattr(pkg, name)
                heavy = [m for m in {HEAVY!r} if m in sys.modules]
                assert not heavy, f"resolving the exports of {{package}} imported {{heavy}}"
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]


def documented_names() -> dict[str, set[str]]:
    """{package: names} docs/api.md documents as importable from it: the names of its ```python import lines, and
    every `geneb.<package>.<name>` it mentions whose <name> is not a module (a path through a module, such as
    `geneb.tables.scores`, names where the code lives, not an import)."""
    text = API_DOC.read_text()
    found: dict[str, set[str]] = {}
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("geneb"):
                found.setdefault(node.module, set()).update(a.name for a in node.names)
    for path in re.findall(r"(?<![\w./-])geneb(?:\.\w+)+", text):
        package, parts = "geneb", path.split(".")[1:]
        for part in parts:
            kinds = submodules(importlib.import_module(package))
            if kinds.get(part) is True:
                package = f"{package}.{part}"
            elif part not in kinds:
                found.setdefault(package, set()).add(part)
                break
            else:
                break
    return found


def test_every_name_docs_api_documents_is_in_its_packages_all():
    documented = documented_names()
    assert sum(map(len, documented.values())) > 25, "the reader of docs/api.md found too few names"
    missing = {
        package: sorted(set(names) - set(importlib.import_module(package).__all__))
        for package, names in documented.items()
    }
    missing = {package: names for package, names in missing.items() if names}
    assert not missing, f"docs/api.md documents names their package does not export: {missing}"
