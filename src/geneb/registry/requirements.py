"""What an entry needs installed, checked without importing it: optional packages and a remote code's
transformers range (transformers version skew). Torch-free: the registry and the pre-flight call these while
planning."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping

from geneb.core.errors import MissingPackageError, TransformersVersionError


def check_transformers_range(model: str, spec: str | None, installed: str | None = None) -> None:
    """Raise TransformersVersionError when `installed` (default: the installed transformers) is outside the
    PEP 440 range `spec` (e.g. ">=4.26,<4.30") that the registry declares for `model`. spec None passes."""
    if not spec:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    if installed is None:
        from importlib import metadata

        installed = metadata.version("transformers")
    try:
        ok = Version(installed) in SpecifierSet(spec)
    except InvalidSpecifier as err:
        raise ValueError(f"model {model}: transformers range {spec!r} is not a valid version specifier") from err
    if not ok:
        raise TransformersVersionError(
            f"model {model} declares transformers {spec}, but {installed} is installed; its remote code is "
            "known to break outside that range: run it in an environment with a matching transformers"
        )


def require_modules(model: str, modules: Mapping[str, str] | None) -> None:
    """Check that every import name in `modules` ({import name: pip package}) can be imported, without
    importing it. Raises MissingPackageError naming the model, the package and the install command."""
    for module, package in (modules or {}).items():
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise MissingPackageError(
                f"model {model} needs the optional package {package!r} (import {module}), which is not installed; "
                f"install it with `pip install {package}` in the extraction environment"
            )
