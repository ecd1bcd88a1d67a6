"""Write or check the committed reference of the quickstart's model x regime means (geneb.tables.agreement).

Run from the repository root after a quickstart run (`bash scripts/quickstart.sh`, config/config.yaml):

    python tools/quickstart_reference.py write   # results/tables/scores.parquet -> tests/reference/quickstart_means.json
    python tools/quickstart_reference.py check   # exits 1 naming every mean beyond the reference's tolerance

Options: --scores (default results/tables/scores.parquet), --reference (default
tests/reference/quickstart_means.json), --protocol (write only; default geneb-paper, the quickstart's protocol),
--tolerance (write: stored in the reference, default geneb.tables.agreement.TOLERANCE; check: overrides it).
The reference is regenerated on purpose only: when a change of the code is meant to move the quickstart's scores
(its commit message says so), never to make a failing agreement test pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from geneb.tables.agreement import TOLERANCE, check_against_reference, make_reference, write_reference

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference" / "quickstart_means.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("write", "check"))
    ap.add_argument("--scores", default="results/tables/scores.parquet")
    ap.add_argument("--reference", default=str(REFERENCE))
    ap.add_argument("--protocol", default="geneb-paper")
    ap.add_argument("--tolerance", type=float, default=None)
    args = ap.parse_args(argv)
    if args.action == "write":
        tol = TOLERANCE if args.tolerance is None else args.tolerance
        reference = make_reference(args.scores, protocol=args.protocol, tolerance=tol)
        write_reference(reference, args.reference)
        n = sum(len(r) for r in reference["means"].values())
        print(f"wrote {args.reference}: {n} model x regime means of {args.scores} (tolerance {tol})")
        return 0
    problems = check_against_reference(args.scores, args.reference, tolerance=args.tolerance)
    for line in problems:
        print(f"GENEB ERROR: {line}", file=sys.stderr)
    print(f"{args.scores} against {args.reference}: {'agrees' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
