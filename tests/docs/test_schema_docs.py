"""The docs cannot drift from the schemas: the allowed values in docs/data-dictionary.md are the schemas' (a
generated block), and every config key and registry field a schema names is explained somewhere in docs/ or
README.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import schema_docs  # noqa: E402


def _documented_words() -> set[str]:
    """Every identifier inside a code block or a `code span` of docs/*.md and README.md."""
    text = "".join(p.read_text(encoding="utf-8") for p in [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"])
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    inline = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return {w for span in [*blocks, *inline] for w in re.findall(r"[A-Za-z_][\w-]*", span)}


def test_the_allowed_values_block_is_the_schemas():
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools/schema_docs.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_a_changed_enum_is_caught(tmp_path, monkeypatch):
    """The check above can fail: an enum value the docs lack makes the block differ."""
    original = schema_docs.load
    schema = original("config")
    schema["properties"]["execution"]["properties"]["device"]["enum"].append("tpu")
    monkeypatch.setattr(schema_docs, "load", lambda name: schema if name == "config" else original(name))
    assert "`tpu`" in schema_docs.block()
    assert schema_docs._replaced(schema_docs.DOC.read_text(encoding="utf-8")) != schema_docs.DOC.read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("name", list(schema_docs.SCHEMAS))
def test_every_key_a_schema_names_is_documented(name):
    words = _documented_words()
    missing = [".".join(p) for p in schema_docs.schema_keys(schema_docs.load(name)) if p[-1] not in words]
    assert not missing, f"{name} keys named by {schema_docs.SCHEMAS[name]} that no doc explains: {missing}"
