"""The extraction and probe stages of the quickstart, with one model load per job (the old rules) and GENEB's way, side by side in
one run.

    python bench/workflow.py                 # prints the table, writes bench/results/workflow.json
    python bench/workflow.py --write-docs    # ... and replaces the `## Workflow` section of docs/performance.md
    python bench/workflow.py --cores 2 --models kmer-3to6 random-esm-tiny --tasks gue_prom_core_all

The configuration is the quickstart's (config/config.yaml: its models and tasks, protocol geneb-paper). The
tasks are prepared once, untimed; each mode then starts from a copy of that run folder (prepared tasks, no
embeddings) and runs `snakemake --cores N` on every probe output, so the timed span is the whole extraction
stage and the whole probe stage, in wall-clock seconds, process start-ups and scheduling included:

* baseline: `execution.model_server: false, load_checks: every_load, probe_worker: false`: one job per (model,
  task) that starts Python, loads its model, runs its load-time checks and embeds one task, and probe jobs that
  each import the probing stack, as the old rules ran.
* load_per_job: as the baseline but `load_checks: record`: a load per job, the checks once per model (the
  passed-checks record alone); shown beside the others, the speedup over it is a lower bound.
* geneb: the defaults, `model_server: true, load_checks: record, probe_worker: true`: the jobs of a model share
  one model server that loads and checks the model once (geneb.extract.server), and probe jobs run in children
  of a warm probe worker (geneb.probe.worker). Extraction jobs are scheduled task by task, models in turn
  (rule priority), in every mode.

Model loads are counted from the embedding files (distinct `model_load_id` attributes), not estimated.
Goals: speedup >= 2, model loads = models.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import yaml

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Workflow"
RESULT = REPO / "bench" / "results" / "workflow.json"
GOAL_SPEEDUP = 2.0
#: each mode's execution knobs (an overlay; every other knob is the default)
MODES = {
    # the old rules: every (model, task) job loads its model and runs its load-time checks
    # and every probe job imports the probing stack itself
    "baseline": {"model_server": False, "load_checks": "every_load", "probe_worker": False},
    # a load per job, but the checks' passed record shared (the record alone): the lower bound
    "load_per_job": {"model_server": False, "load_checks": "record", "probe_worker": False},
    # GENEB: one model server per model loads it once; the checks run once
    "geneb": {"model_server": True, "load_checks": "record", "probe_worker": True},
}


def registry_with_absolute_paths(run: Path) -> Path:
    """The repository registry with its local model folders made absolute (they are relative to the
    repository root, where the quickstart runs), written into `run`; read by the one reader."""
    sys.path.insert(0, str(REPO / "src"))
    from geneb.registry.load import load_registry

    raw = copy.deepcopy(dict(load_registry(REPO / "config" / "models.yaml").raw))
    for spec in raw["models"].values():
        source = spec.get("source") or {}
        if source.get("kind") == "local" and not os.path.isabs(source["path"]):
            source["path"] = str((REPO / source["path"]).resolve())
    path = run / "config" / "models.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def write_run(run: Path, models: list[str] | None, tasks: list[str] | None) -> dict:
    """A run folder with the quickstart config (absolute sheet paths; `models`/`tasks` replace its lists)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    shared = Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared")).resolve()
    (run / "config").mkdir(parents=True)
    config.update(
        task_source=str(shared / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(registry_with_absolute_paths(run)),
        model_revisions=str(REPO / "config" / "model_revisions.yaml"),
    )
    if models:
        config["models"] = list(models)
    if tasks:
        config["tasks"] = list(tasks)
    published = config.get("analysis", {}).get("published")
    if published:
        for key in ("dir", "registry"):
            if key in published and not os.path.isabs(published[key]):
                published[key] = str((REPO / published[key]).resolve())
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def snakemake(run: Path, cores: int, *args: str, env: dict[str, str] | None = None) -> float:
    """Run `snakemake -s Snakefile --cores N args` in `run`; wall seconds. Raises SystemExit on failure."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", str(cores), *args],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(
            f"snakemake {' '.join(args[:3])} ... failed in {run}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    return seconds


def loads(run: Path) -> tuple[int, int, float]:
    """(distinct model loads, embedding files, seconds of those loads, checks included) from the run's HDF5
    files (`model_load_id`, `seconds_model_load`)."""
    seconds: dict[str, float] = {}
    n = 0
    for h5 in (run / "resources" / "embeddings").rglob("*.h5"):
        with h5py.File(h5, "r") as f:
            seconds[str(f.attrs["model_load_id"])] = float(f.attrs["seconds_model_load"])
        n += 1
    return len(seconds), n, sum(seconds.values())


def measure(root: Path, prepared: Path, mode: str, cores: int, targets: list[str]) -> dict:
    """One mode's timed extraction + probe stages in a fresh copy of the prepared run folder."""
    run = root / mode
    shutil.copytree(prepared, run, symlinks=True)
    servers = root / f"servers-{mode}"
    env = {**os.environ, "GENEB_MODEL_SERVER_DIR": str(servers)}
    overlay = run / "config" / "mode.yaml"  # an overlay file: --config would pass the values as text
    overlay.write_text(yaml.safe_dump({"execution": MODES[mode]}))  # other knobs: the defaults
    seconds = snakemake(run, cores, "--configfile", "config/config.yaml", str(overlay), "--", *targets, env=env)
    n_loads, n_files, load_s = loads(run)
    print(f"{mode}: {seconds:.1f} s, {n_loads} model loads for {n_files} files", file=sys.stderr)
    return {"seconds": seconds, "model_loads": n_loads, "files": n_files, "job_load_seconds": load_s}


def markdown(result: dict, cores: int) -> str:
    verdict_speed = "met" if result["speedup"] >= GOAL_SPEEDUP else "NOT met"
    verdict_loads = "met" if result["model_loads_geneb"] == result["models"] else "NOT met"
    return f"""{SECTION}

Command: `python bench/workflow.py --write-docs` (bench/workflow.py; figures also in bench/results/workflow.json).
The quickstart's {result["models"]} models x {result["tasks"]} tasks (config/config.yaml, protocol geneb-paper):
the whole extraction stage and the whole probe stage (`snakemake --cores {cores}` on every probe output, from
prepared tasks and no embeddings), wall-clock seconds, each way in turn in one run. Baseline: the rules
with the old rules, one job per (model, task) that starts Python, loads its model and runs its load-time checks,
and probe jobs that each import the probing stack (`execution.model_server: false, load_checks: every_load,
probe_worker: false`). Load per job: the same, but the checks run once per model and later jobs take their
passed record (`load_checks: record`), shown so that what the record alone saves is visible. GENEB: the
defaults; the jobs of a model share one model server on the node, which loads and checks the model once
(`model_server: true`), and probe jobs run in children forked by a warm probe worker (`probe_worker: true`;
docs/hpc.md, "One model load per node"). Extraction jobs run task by task, models in turn, in every mode. Model
loads are the distinct `model_load_id` attributes of the embedding files, their seconds the files'
`seconds_model_load` (checks included). Machine: {platform.machine()}, {os.cpu_count()} cores, shared with
other work; Python {platform.python_version()}.

| | wall s | model loads | seconds of those loads |
|---|---|---|---|
| baseline (a load and checks per job) | {result["baseline_s"]:.1f} | {result["model_loads_baseline"]} | {result["job_load_s_baseline"]:.1f} |
| load per job, checks once | {result["load_per_job_s"]:.1f} | {result["model_loads_load_per_job"]} | {result["job_load_s_load_per_job"]:.1f} |
| GENEB (a load per model) | {result["geneb_s"]:.1f} | {result["model_loads_geneb"]} | {result["job_load_s_geneb"]:.1f} |

Speedup {result["speedup"]:.2f}x over the baseline (goal >= {GOAL_SPEEDUP:.0f}: {verdict_speed}),
{result["speedup_vs_load_per_job"]:.2f}x over a load per job with the checks once; model loads = models
({verdict_loads}).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--models", nargs="*", help="default: the quickstart's")
    parser.add_argument("--tasks", nargs="*", help="default: the quickstart's")
    parser.add_argument("--write-docs", action="store_true", help="replace the Workflow section of docs/performance.md")
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("--modes", nargs="*", choices=list(MODES), help="run only these modes (no result written)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="geneb-bench-workflow-") as tmp:
        root = (args.keep or Path(tmp)).resolve()
        prepared = root / "prepared"
        config = write_run(prepared, args.models, args.tasks)
        models, tasks = config["models"], config["tasks"]
        # untimed: task preparation and shot draws (their paths carry the config's hashes: the rule, not the files)
        snakemake(prepared, args.cores, "--until", "write_shot_indices")
        targets = [f"results/probes/geneb-paper/{m}/{t}.parquet" for m in models for t in tasks]
        runs = {mode: measure(root, prepared, mode, args.cores, targets) for mode in (args.modes or MODES)}
        if args.modes:  # a partial run (profiling one mode) is never published
            return 0
    base, mid, new = runs["baseline"], runs["load_per_job"], runs["geneb"]
    result = {
        "models": len(models),
        "tasks": len(tasks),
        "baseline_s": round(base["seconds"], 1),
        "geneb_s": round(new["seconds"], 1),
        "speedup": round(base["seconds"] / new["seconds"], 2),
        "load_per_job_s": round(mid["seconds"], 1),
        "speedup_vs_load_per_job": round(mid["seconds"] / new["seconds"], 2),
        "model_loads_baseline": base["model_loads"],
        "model_loads_load_per_job": mid["model_loads"],
        "model_loads_geneb": new["model_loads"],
        "job_load_s_baseline": round(base["job_load_seconds"], 1),
        "job_load_s_load_per_job": round(mid["job_load_seconds"], 1),
        "job_load_s_geneb": round(new["job_load_seconds"], 1),
        "cores": args.cores,
    }
    from docsection import publish  # bench/ is the script's folder on sys.path

    publish(
        RESULT, result, markdown(result, args.cores), write_docs=args.write_docs, doc=REPO / "docs" / "performance.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
