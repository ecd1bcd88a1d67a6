"""Fixtures of the registry and adapter tests: the models schema and the committed registry, loaded once per module
(imported by tests/conftest.py, so tests/registry and tests/encoders/families both see them)."""

import pytest
import yaml

from geneb.registry.load import load_registry, runnable


@pytest.fixture(scope="module")
def schema(repo):
    return yaml.safe_load((repo / "workflow" / "schemas" / "models.schema.yaml").read_text())


@pytest.fixture(scope="module")
def specs(repo, schema):
    """The committed registry, typed (`Registry`: `.models` {id: ModelSpec}, `.pairs`)."""
    return load_registry(repo / "config" / "models.yaml", schema)


@pytest.fixture(scope="module")
def registry(specs):
    """The committed registry's validated mapping as read, for the tests of the file's content."""
    return specs.raw


def runnable_offline(spec) -> bool:
    """Runnable with no network: a builtin, an existing local folder, or external weights the config gives."""
    ok, _ = runnable(spec)
    return ok and spec.source.kind in ("builtin", "local", "external")
