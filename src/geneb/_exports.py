"""What each package's `__init__` re-exports, lazily (PEP 562): its table {name: module} becomes the module
`__getattr__` and `__dir__`, so `geneb.registry.Registry` imports `geneb.registry.registry` on first use and
`import geneb.registry` imports nothing else (planning stays torch-free). Imports no other GENEB module.

    _EXPORTS = {"Registry": "geneb.registry.registry", ...}
    __all__ = list(_EXPORTS)
    if TYPE_CHECKING:
        from geneb.registry.registry import Registry as Registry  # what mypy and editors read
    else:
        __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

An exported name never equals a submodule's name (`geneb.api.evaluate` is the module): importing the submodule
would rebind it (tests/repo/test_exports.py checks both tables).

`LazyFunction` does the same for one function of a registry (the analysis and figure registries): named by module
and name, imported on its first call, so that reading a registry's names (what the workflow does while it plans)
imports no analysis or drawing code, scipy.stats or matplotlib.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package` exporting `exports` ({name: module that defines it}). A name
    is imported from its module on first access and kept in the package's namespace; any other name raises
    AttributeError (so `from package import submodule` still imports the submodule)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__


class LazyFunction:
    """The function `name` of `module`, imported on the first call (or `resolve()`) and called with the same
    arguments. Raises ImportError or AttributeError on that first use when the module or the name does not exist
    (tests/analysis/test_registries.py resolves every registered one)."""

    __slots__ = ("_function", "module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._function: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The function itself (imported now if it was not yet)."""
        if self._function is None:
            self._function = getattr(importlib.import_module(self.module), self.name)
        return self._function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"
