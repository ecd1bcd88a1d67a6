"""Benchmark: what the content checks (geneb.core.integrity) cost, on files written by GENEB's own writers.

Run from the repository root: `python bench/integrity.py [--files N] [--rows R] [--dim D] [--repeat K]`. It prints
its numbers (as a markdown table for docs/performance.md, section "Content checks") and writes nothing outside a
temporary folder.

1. Read overhead: `read_embeddings` of an HDF5 file of R x D float32 train rows (+ R/2 test rows) with its digest
   (the whole file hashed first) and without (a file written before digests: no hash), and
   `integrity.read_parquet` of a score-table-sized parquet against `pandas.read_parquet`; best of K, in ms per
   file, and the hashing rate in MB/s (process CPU time is not used: the read is I/O plus one sha256 pass).
2. Plan-time cost: `geneb.run.integrity.set_aside_bad` over N embedding files (small: 1/8 of the rows) and 2N
   parquet tables, as a big run's plan sees them: cold (no stamp store: every file hashed) and warm (the stamp
   store of the previous plan: two stat() calls per file, nothing hashed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _h5(path: Path, rows: int, dim: int, seed: int = 0) -> None:
    from geneb.extract.cache import SplitEmbeddings, write_embeddings

    rng = np.random.default_rng(seed)
    splits = {
        split: SplitEmbeddings(rng.standard_normal((n, dim), dtype=np.float32), np.arange(n), np.ones(n, np.int32))
        for split, n in (("train", rows), ("test", rows // 2))
    }
    write_embeddings(path, splits, {"model": "bench", "task": path.stem})


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000, help="embedding files of the plan-time check (default 1000)")
    ap.add_argument("--rows", type=int, default=2000, help="train rows of the read benchmark's file (default 2000)")
    ap.add_argument("--dim", type=int, default=1024, help="embedding width (default 1024)")
    ap.add_argument("--repeat", type=int, default=5, help="best of K reads (default 5)")
    args = ap.parse_args()

    from geneb.core import integrity
    from geneb.extract.cache import read_embeddings
    from geneb.run.integrity import StampStore, set_aside_bad

    root = Path(tempfile.mkdtemp(prefix="geneb-bench-integrity-"))
    try:
        # 1. read overhead
        h5 = root / "read" / "task.h5"
        h5.parent.mkdir()
        _h5(h5, args.rows, args.dim)
        mb = h5.stat().st_size / 1e6
        read_embeddings(h5)  # page cache warm, as a probe job reading a file extraction just wrote
        with_digest = _best(lambda: read_embeddings(h5), args.repeat)
        hash_only = _best(lambda: integrity.sha256_file(h5), args.repeat)
        legacy = h5.with_name("legacy.h5")
        shutil.copy(h5, legacy)
        without = _best(lambda: read_embeddings(legacy), args.repeat)
        n = 20_000
        frame = pd.DataFrame(
            {
                "model": np.repeat([f"m{i}" for i in range(20)], n // 20),
                "task": np.tile([f"t{i}" for i in range(100)], n // 100),
                "value": np.random.default_rng(1).random(n),
            }
        )
        table = root / "read" / "scores.parquet"
        integrity.write_parquet(frame, table)
        pq_mb = table.stat().st_size / 1e6
        pq_with = _best(lambda: integrity.read_parquet(table), args.repeat)
        pq_without = _best(lambda: pd.read_parquet(table), args.repeat)

        # 2. plan-time cost over a big run's files
        plan = root / "plan"
        small = plan / "template.h5"
        plan.mkdir()
        _h5(small, max(8, args.rows // 8), args.dim)
        probe = plan / "template.parquet"
        integrity.write_parquet(frame.head(300), probe)
        paths = []
        for i in range(args.files):
            for template, name in ((small, f"e/{i % 40}/t{i}.h5"), (probe, f"p/{i % 40}/t{i}.parquet")):
                dst = plan / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(template, dst)
                shutil.copy(integrity.digest_path(template), integrity.digest_path(dst))
                integrity.record_digest(dst, integrity.recorded_digest(template))
                paths.append(dst)
            dst = plan / f"q/{i % 40}/t{i}.parquet"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(probe, dst)
            integrity.record_digest(dst, integrity.recorded_digest(probe))
            paths.append(dst)
        total_mb = sum(p.stat().st_size for p in paths) / 1e6
        stamps = plan / "verified.json"
        t0 = time.perf_counter()
        bad, _ = set_aside_bad(paths, store=StampStore(stamps))
        cold = time.perf_counter() - t0
        warm_times = []
        for _ in range(3):
            t0 = time.perf_counter()
            set_aside_bad(paths, store=StampStore(stamps))
            warm_times.append(time.perf_counter() - t0)
        assert not bad
        warm = statistics.median(warm_times)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"cores: {os.cpu_count()}; read file {mb:.1f} MB ({args.rows} + {args.rows // 2} rows x {args.dim})")
    print("| what | without check | with check | overhead | hashing rate |")
    print("|---|---|---|---|---|")
    print(
        f"| `read_embeddings`, {mb:.1f} MB HDF5 | {without * 1e3:.1f} ms | {with_digest * 1e3:.1f} ms | "
        f"{(with_digest - without) * 1e3:.1f} ms ({(with_digest / without - 1) * 100:.0f} %) | "
        f"{mb / hash_only:.0f} MB/s |"
    )
    print(
        f"| `read_parquet`, {pq_mb:.2f} MB table ({n} rows) | {pq_without * 1e3:.1f} ms | {pq_with * 1e3:.1f} ms | "
        f"{(pq_with - pq_without) * 1e3:.1f} ms | |"
    )
    print()
    print(f"| plan-time check of {len(paths)} files ({total_mb:.0f} MB) | seconds | per file |")
    print("|---|---|---|")
    print(f"| cold (no stamps: every file hashed) | {cold:.2f} s | {cold / len(paths) * 1e3:.2f} ms |")
    print(f"| warm (stamps unchanged: stat only) | {warm:.3f} s | {warm / len(paths) * 1e3:.3f} ms |")


if __name__ == "__main__":
    main()
