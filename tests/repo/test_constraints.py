"""The default env is pinned: envs/geneb-constraints.txt fixes the version of every package README's commands
and CI install, agrees with the transformers pin of envs/geneb.yaml, and is what both install through (`-c`).
A fresh clone then tests what was tested here, whatever upstream released since."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from packaging.utils import canonicalize_name

from geneb.core import envs

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "envs/geneb-constraints.txt"


def _pins() -> dict[str, str]:
    pins = {}
    for n, line in enumerate(CONSTRAINTS.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!-]*)", line.strip())
        assert m, f"{CONSTRAINTS.name} line {n}: {line!r} is not `name==version`"
        pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def _name(requirement: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert m, requirement
    return canonicalize_name(m.group(1))


def test_every_dependency_and_test_extra_has_an_exact_version_except_torch():
    # the installed package's own requirements: its dependencies and every extra (`; extra == "test"`)
    wanted = {_name(r) for r in importlib.metadata.requires("geneb") or []}
    pins = _pins()
    assert "torch" not in pins, "torch is installed first by scripts/setup-env.sh (GENEB_TORCH_VERSION)"
    missing = sorted(wanted - {"torch"} - set(pins))
    assert not missing, f"not pinned in {CONSTRAINTS.name} (regenerate it as its header says): {missing}"


def test_the_constraints_agree_with_the_default_env_and_both_installs_use_them():
    default = envs.read_env("geneb")
    assert default.transformers == _pins()["transformers"]
    assert CONSTRAINTS in default.pinning_files()
    assert "-c envs/geneb-constraints.txt" in (REPO / "scripts/setup-env.sh").read_text()
