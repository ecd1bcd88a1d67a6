"""Replace one `## ` section of docs/performance.md, keeping the others: each benchmark writes its own."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def replace_section(doc: Path, section: str) -> None:
    """Replace the section of `doc` whose heading is the first line of `section` (up to the next `## `
    heading), or append it; creates the document when missing."""
    heading = section.splitlines()[0]
    text = doc.read_text() if doc.exists() else "# GENEB performance\n\nMeasured costs of the pipeline stages.\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip() + "\n\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section.rstrip() + "\n"
    doc.write_text(text)


def publish(result: Path, payload: dict, section: str, *, write_docs: bool, doc: Path) -> None:
    """Write a benchmark's figures to `result` (JSON), print its `section`, and, with `write_docs`, replace that
    section of `doc`."""
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text(json.dumps(payload, indent=1) + "\n")
    print(section)
    if write_docs:
        replace_section(doc, section)
        print(f"wrote the {section.splitlines()[0][3:]} section of {doc.name}", file=sys.stderr)
