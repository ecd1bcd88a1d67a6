"""Benchmark: the homology audit's MMseqs2 search with and without low-complexity masking, on real tasks.

MMseqs2 masks low-complexity regions (tantan) in its k-mer prefilter by default (`--mask 1`); a test row made
mostly of tandem repeats then has no k-mer left to seed a candidate and its training homolog is never aligned.
GENEB searches unmasked (`task_audit.mask_low_complexity: false`, `--mask 0 --mask-lower-case 0`;
`geneb.tasks.homology`). This measures what that costs: for each task (read as `load_task` reads it, uncapped),
`homology_leakage` with the default parameters (2 MMseqs2 threads) once masked and once unmasked, alternating,
`--repeats` times; per setting the fastest wall time, the candidate pairs MMseqs2 proposed, the leaked test rows
(and those found by the search), and the rows leaked under one setting only.

Usage: python bench/homology_mask.py [--tasks t1 t2 ...] [--repeats 2]
Writes bench/results/homology_mask.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from geneb.tasks.audit import load_task
from geneb.tasks.homology import HomologyParams, find_mmseqs, homology_leakage, mmseqs_version

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared"))
OUT = REPO / "bench" / "results" / "homology_mask.json"
DEFAULT_TASKS = ("gue_prom_core_all", "pgb_lncrna_triticum_aestivum")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="*", default=list(DEFAULT_TASKS))
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    root = SHARED / "data" / "tasks"
    rows = []
    for task in args.tasks:
        splits = load_task(task, root)
        train, test = splits["train"]["sequence"].tolist(), splits["test"]["sequence"].tolist()
        runs: dict[bool, list[float]] = {True: [], False: []}
        found: dict[bool, object] = {}
        for _ in range(args.repeats):
            for mask in (True, False):
                t0 = time.perf_counter()
                res = homology_leakage(train, test, HomologyParams(mask_low_complexity=mask), task=task)
                runs[mask].append(time.perf_counter() - t0)
                found[mask] = res
        masked, unmasked = found[True], found[False]
        rows.append(
            {
                "task": task,
                "n_train": len(train),
                "n_test": len(test),
                **{
                    f"{name}_{key}": value
                    for name, res, secs in (("masked", masked, runs[True]), ("unmasked", unmasked, runs[False]))
                    for key, value in (
                        ("seconds", round(min(secs), 2)),
                        ("n_candidates", res.n_hits),  # type: ignore[attr-defined]
                        ("n_leaked", len(res.leaked_rows)),  # type: ignore[attr-defined]
                        ("n_leaked_by_search", res.n_leaked_by_search),  # type: ignore[attr-defined]
                    )
                },
                "leaked_only_unmasked": sorted(set(unmasked.leaked_rows) - set(masked.leaked_rows)),  # type: ignore[attr-defined]
                "leaked_only_masked": sorted(set(masked.leaked_rows) - set(unmasked.leaked_rows)),  # type: ignore[attr-defined]
            }
        )
        print(json.dumps(rows[-1]))
    exe = find_mmseqs()
    payload = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "load_average": os.getloadavg(),
        "mmseqs_version": mmseqs_version(exe),
        "repeats": args.repeats,
        "tasks": rows,
    }
    OUT.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
