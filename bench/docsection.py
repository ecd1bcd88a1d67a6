"""Replace one `## ` section of docs/performance.md, keeping the others: each benchmark writes its own."""

from __future__ import annotations

import re
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
