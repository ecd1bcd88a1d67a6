"""Planning a run never imports torch or transformers: Snakemake parses the Snakefile and every rule file in the
main process and again in each job process, so a heavy import there costs every job seconds (and a CPU-only
login node may not have torch at all).

The geneb imports are read from the Snakefile and workflow/rules/*.smk themselves, so the test follows their edits.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers")

#: a geneb import statement of a Snakefile, at any indentation; a parenthesised name list may span lines
GENEB_IMPORT = re.compile(
    r"^[ \t]*(from[ \t]+geneb[\w.]*[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)|import[ \t]+geneb[\w.]*(?:[ \t]+as[ \t]+\w+)?)",
    re.MULTILINE,
)


def workflow_imports() -> list[str]:
    """Every geneb import statement of the Snakefile and the rule files, as written (comments dropped)."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    statements = []
    for path in files:
        for match in GENEB_IMPORT.finditer(path.read_text()):
            statement = re.sub(r"#[^\n]*", "", match.group(1)).strip()
            statements.append(statement)
    return statements


def test_the_statement_reader_finds_the_plan_and_multi_line_imports():
    text = "from geneb.a import (\n    b,\n    c,  # why\n)\n    import geneb.d as e\nx = 'from geneb'\n"
    found = [m.group(1) for m in GENEB_IMPORT.finditer(text)]
    assert found == ["from geneb.a import (\n    b,\n    c,  # why\n)", "import geneb.d as e"]
    assert any("geneb.run.plan" in s for s in workflow_imports())


def test_planning_imports_neither_torch_nor_transformers():
    statements = ["import geneb.run.plan", "import geneb.run.handlers", *workflow_imports()]
    code = "\n".join(statements) + textwrap.dedent(f"""
        import sys
        print(",".join(m for m in {HEAVY!r} if m in sys.modules))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "", f"planning imported {proc.stdout.strip()}:\n" + "\n".join(statements)
