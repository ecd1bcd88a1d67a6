"""How long the workflow takes to start: a baseline revision and the working tree side by side, in one run.

    python bench/startup.py                          # baseline 3e3cd43, 5 repeats each, in turns
    python bench/startup.py --baseline HEAD~3 --repeats 7 --write-docs

Every `snakemake` command, every Slurm job (which runs Snakemake again on the node) and every in-process plan
parses the Snakefile, imports what workflow/rules/common.smk imports and plans the run (config, task lock,
registry) before it does anything. Two measures, each the median of `--repeats` runs of a fresh process, the two
revisions alternating so that a busy machine slows both alike:

- `imports`: wall seconds of a Python process that imports exactly the `geneb` modules common.smk imports;
- `dry_run`: wall seconds of `snakemake -n --cores 2` of the quickstart (config/config.yaml: 13 tasks x 5 models,
  176 jobs) in an empty run folder, which plans every job and runs none.

The baseline is `git archive` of `--baseline` (its src/, workflow/, Snakefile and config/) in a temporary folder,
imported through PYTHONPATH ahead of the editable install. Writes bench/results/startup.json; `--write-docs`
replaces the `## Workflow start-up` section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from docsection import publish

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Workflow start-up"
RESULT = REPO / "bench" / "results" / "startup.json"


def _checkout(revision: str, into: Path) -> str:
    """`revision`'s tree extracted into `into`; returns its full commit id."""
    commit = subprocess.run(
        ["git", "rev-parse", revision], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    tar = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return commit


def _imports_code(checkout: Path) -> str:
    common = (checkout / "workflow" / "rules" / "common.smk").read_text().splitlines()
    return "\n".join(line for line in common if line.startswith(("from geneb", "import geneb")))


def _timed(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="3e3cd43")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="geneb-startup-") as tmp:
        root = Path(tmp)
        (root / "shared").symlink_to(Path(args.shared).resolve(), target_is_directory=True)  # the config's ../shared
        variants: dict[str, dict] = {}
        for name in ("baseline", "working tree"):
            checkout = root / f"{name.replace(' ', '-')}-checkout"
            if name == "baseline":
                commit = _checkout(args.baseline, checkout)
            else:
                checkout, commit = REPO, "working tree"
            run = root / f"{name.replace(' ', '-')}-run"
            shutil.copytree(checkout / "config", run / "config")
            env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
            variants[name] = {
                "checkout": checkout,
                "run": run,
                "env": env,
                "commit": commit,
                "imports": [],
                "dry_run": [],
            }
        for _ in range(args.repeats):
            for v in variants.values():
                code = _imports_code(v["checkout"])
                v["imports"].append(_timed([sys.executable, "-c", code], cwd=v["run"], env=v["env"]))
                snakefile = str(v["checkout"] / "Snakefile")
                cmd = [sys.executable, "-m", "snakemake", "-s", snakefile, "-n", "--cores", "2", "--quiet"]
                v["dry_run"].append(_timed(cmd, cwd=v["run"], env=v["env"]))
        rows = {
            name: {
                "commit": v["commit"],
                "imports_s": round(statistics.median(v["imports"]), 2),
                "dry_run_s": round(statistics.median(v["dry_run"]), 2),
                "imports_runs_s": [round(x, 2) for x in v["imports"]],
                "dry_run_runs_s": [round(x, 2) for x in v["dry_run"]],
            }
            for name, v in variants.items()
        }
    base, new = rows["baseline"], rows["working tree"]
    payload = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "repeats": args.repeats,
        "variants": rows,
        "saved_per_start_s": round(base["dry_run_s"] - new["dry_run_s"], 2),
    }
    section = f"""{SECTION}

`python bench/startup.py --baseline {args.baseline} --repeats {args.repeats} --write-docs` ({payload["machine"]};
median of {args.repeats} fresh processes per revision, the two alternating). Every `snakemake` command, every
Slurm job (Snakemake runs again on the node) and every in-process plan pays this before any work.

| revision | imports of common.smk (s) | `snakemake -n` of the quickstart, 176 jobs (s) |
|---|---|---|
| baseline {base["commit"][:7]} | {base["imports_s"]} | {base["dry_run_s"]} |
| working tree | {new["imports_s"]} | {new["dry_run_s"]} |

What changed: the analysis and figure registries name their functions (`geneb._exports.LazyFunction`) instead of
importing every analysis and drawing module (scipy.stats, scikit-learn, matplotlib) while the workflow plans; the
zero-shot plan's report inputs and the published protocol's name live beside the plan and the score table instead
of in the modules that compute those tables; and every YAML file is read with libyaml's C parser
(`geneb.core.yamlio`; config/tasks.lock, read twice per plan, took 0.36 s with the pure-Python one).
`tests/analysis/test_registries.py::test_reading_the_registries_imports_no_analysis_or_drawing_code` keeps the
heavy modules out of planning.
"""
    publish(RESULT, payload, section, write_docs=args.write_docs, doc=REPO / "docs" / "performance.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
