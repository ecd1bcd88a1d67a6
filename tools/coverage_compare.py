"""Compare this checkout's line coverage of src/geneb with the recorded one (tests/reference/coverage_before.json).

Usage: `python tools/coverage_compare.py COVERAGE_JSON` with the JSON report of `coverage json` (scripts/test.sh
--cov writes it to .coverage.json). Prints both totals and every module covered before (at least one line) but not
now, following the module moves of tests/reference/module_moves.json; exits 1 when the total fell by more than one point or such a module exists (docs/testing.md), else 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "reference" / "coverage_before.json"
#: where each module of the reference went when modules were merged by job (old dotted name -> new one, or a tests/
#: file): a merged module counts as covered when the module it went into is
MOVES = json.loads((REFERENCE.parent / "module_moves.json").read_text())["moves"]


def _moved(path: str) -> list[str]:
    """The module paths (geneb/...) a reference module's lines are in now (several for a module split in parts: a
    list in tests/reference/module_moves.json); [] for code moved into tests/ or deleted as dead code."""
    todo = [path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")]
    seen: set[str] = set()
    found = []
    while todo:
        dotted = todo.pop(0)
        if dotted in MOVES and dotted not in seen:
            seen.add(dotted)
            target = MOVES[dotted]
            todo += [target] if isinstance(target, str) else target
            continue
        if dotted.startswith(("tests/", "deleted")):
            continue
        src = Path(__file__).resolve().parents[1] / "src" / Path(*dotted.split("."))
        found.append(f"{dotted.replace('.', '/')}/__init__.py" if src.is_dir() else f"{dotted.replace('.', '/')}.py")
    return found


def _modules(report: dict) -> dict[str, dict[str, int]]:
    """{geneb/... module path: {"statements", "covered"}} of a `coverage json` report."""
    out = {}
    for path, entry in report["files"].items():
        key = path[path.index("geneb/") :] if "geneb/" in path else path
        out[key] = {"statements": entry["summary"]["num_statements"], "covered": entry["summary"]["covered_lines"]}
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    before = json.loads(REFERENCE.read_text())
    report = json.loads(Path(argv[0]).read_text())
    now, total = _modules(report), report["totals"]
    was = before["totals"]["percent"]
    print(f"coverage of src/geneb: {was:.2f}% at {before['commit']}, {total['percent_covered']:.2f}% now")
    lost = []
    for module, entry in sorted(before["modules"].items()):
        where = _moved(module)
        if not where:
            print(f"moved out of the product (into tests/) or deleted: {module}")
        elif entry["covered"] and not all(now.get(w, {}).get("covered") for w in where):
            lost.append(module if where == [module] else f"{module} (now {', '.join(where)})")
    for module in lost:
        print(f"covered at {before['commit']}, not now: {module}")
    return 1 if lost or total["percent_covered"] < was - 1 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
