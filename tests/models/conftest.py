"""Fixtures of the registry tests: the models schema and the committed registry, loaded once per module."""

import pytest
import yaml

from geneb.models.registry import load_registry


@pytest.fixture(scope="module")
def schema(repo):
    return yaml.safe_load((repo / "workflow" / "schemas" / "models.schema.yaml").read_text())


@pytest.fixture(scope="module")
def registry(repo, schema):
    return load_registry(repo / "config" / "models.yaml", schema)
