"""Benchmark: what the progress lines of a long split (geneb.encoders.engine.batching) cost an extraction.

Run from the repository root: `python bench/progress_overhead.py [--rows 300] [--repeats 5] [--batch-size 8]
[--no-write]`. The real Mistral-DNA-v1-1M checkpoint (../shared/models, registry entry `mistral-dna-1m-ft-prom`)
embeds the first `--rows` training rows of a real task (gb_human_ensembl_regulatory__toy_resplit, 113 to 801 nt)
with progress off, on at the default interval (30 s: no line in so short a call), and on with an interval of 0 (a
line after every batch, the worst case), in turns, `--repeats` times each. Seconds are process CPU seconds (a
shared machine stretches wall time, not the work done) and wall seconds, the median of the repeats; the vectors of
every run are compared with the first one's bit for bit. Writes bench/results/progress_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TASK = "gb_human_ensembl_regulatory__toy_resplit"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import torch

    from geneb.encoders.engine.batching import PROGRESS_ENV
    from geneb.extract.step import build_encoder
    from geneb.registry.load import extraction_settings, load_registry
    from geneb.tasks.validation import model_input

    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, stream=open(os.devnull, "w"))  # noqa: SIM115 - the lines are made, not shown
    settings = extraction_settings(load_registry(ROOT / "config" / "models.yaml"), "mistral-dna-1m-ft-prom", {})
    enc = build_encoder(settings, batch_size=args.batch_size, progress=False)
    df = pd.read_csv(Path(args.shared) / "data" / "tasks" / TASK / "train.csv.gz").iloc[: args.rows]
    seqs = [model_input(s) for s in df["sequence"]]
    rows = list(range(len(seqs)))
    modes = {"off": (False, None), "on, 30 s": (True, "30"), "on, every batch": (True, "0")}
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    reference = None
    lines = 0
    counter = logging.getLogger("geneb.encoders.engine.batching")

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            nonlocal lines
            lines += 1

    counter.addHandler(Count())
    enc.embed(seqs[:16], rows[:16])  # warm-up
    for _ in range(args.repeats):
        for mode, (on, interval) in modes.items():
            enc.progress = on
            if interval is not None:
                os.environ[PROGRESS_ENV] = interval
            cpu, wall = time.process_time(), time.perf_counter()
            out = enc.embed(seqs, rows, desc="bench").embeddings
            times[mode].append((time.process_time() - cpu, time.perf_counter() - wall))
            if reference is None:
                reference = out
            elif not np.array_equal(out, reference):
                raise SystemExit(f"vectors differ with progress {mode}")
    # the bookkeeping alone: one done() per batch of `--batch-size` items of a 300-row split, no line logged
    from geneb.encoders.engine.batching import SplitProgress

    n_items = 300
    calls = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        bar = SplitProgress("bench", np.arange(n_items), np.full(n_items, 100), interval=1e9)
        for s in range(0, n_items, args.batch_size):
            bar.done(range(s, min(s + args.batch_size, n_items)))
            calls += 1
    done_us = 1e6 * (time.perf_counter() - t0) / calls
    result = {
        "done_call_us": round(done_us, 2),
        "model": "mistral-dna-1m-ft-prom",
        "task": TASK,
        "rows": len(seqs),
        "batch_size": args.batch_size,
        "threads": args.threads,
        "repeats": args.repeats,
        "progress_lines_logged": lines,
        "vectors_identical": True,
        "modes": {
            mode: {
                "cpu_s_median": round(statistics.median(c for c, _ in t), 4),
                "wall_s_median": round(statistics.median(w for _, w in t), 4),
            }
            for mode, t in times.items()
        },
    }
    base = result["modes"]["off"]["cpu_s_median"]
    for mode, r in result["modes"].items():
        r["cpu_vs_off"] = round(r["cpu_s_median"] / base - 1, 4)
        print(
            f"{mode:>16}: CPU {r['cpu_s_median']:.3f} s ({100 * r['cpu_vs_off']:+.1f}%), wall {r['wall_s_median']:.3f} s"
        )
    print(f"{lines} progress lines logged in all; vectors identical in every run")
    per_batch = statistics.median(c for c, _ in times["off"]) / -(-len(seqs) // args.batch_size)
    print(f"bookkeeping: {done_us:.1f} us per batch, {done_us / (1e6 * per_batch):.2e} of a batch's CPU time")
    result["done_call_share_of_batch_cpu"] = float(f"{done_us / (1e6 * per_batch):.3g}")
    if not args.no_write:
        out = ROOT / "bench" / "results" / "progress_overhead.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
